// Linux's epoll, which Swift's Glibc module leaves out; used by RunLoopKit's DescriptorSet.
#ifndef CEPOLL_SHIM_H
#define CEPOLL_SHIM_H
#include <sys/epoll.h>
#endif
