// Linux's epoll and eventfd, which Swift's Glibc module leaves out; used by RunLoopKit's
// DescriptorSet and WakeSignal.
#ifndef CEPOLL_SHIM_H
#define CEPOLL_SHIM_H
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>
#include <stdint.h>
#include <time.h>
#include <errno.h>
#include <sys/syscall.h>
#include <linux/kcmp.h>

/// Whether epoll set `epfd` holds an `nth` entry (from 0) under descriptor number `fd`, whatever
/// its file: 1 if it does, 0 if not, -1 if the kernel cannot tell (no kcmp, or refused), errno
/// saying why. Swift cannot call the variadic `syscall`.
static inline int cepoll_holds_entry(int epfd, int fd, unsigned int nth) {
    struct kcmp_epoll_slot slot = { .efd = (unsigned int)epfd, .tfd = (unsigned int)fd, .toff = nth };
    pid_t self = getpid();
    // Compares the entry's file with `epfd`'s own: any answer at all means the entry exists.
    if (syscall(SYS_kcmp, self, self, KCMP_EPOLL_TFD, epfd, &slot) >= 0) return 1;
    return errno == ENOENT ? 0 : -1;
}

#endif
