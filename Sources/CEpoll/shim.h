// Linux's epoll and eventfd, which Swift's Glibc module leaves out; used by RunLoopKit's
// DescriptorSet and WakeSignal.
#ifndef CEPOLL_SHIM_H
#define CEPOLL_SHIM_H
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>
#include <stdint.h>
#include <time.h>

#endif
