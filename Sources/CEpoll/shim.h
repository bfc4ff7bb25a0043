// Linux's epoll, eventfd and futex, which Swift's Glibc module leaves out; used by RunLoopKit's
// DescriptorSet and WakeSignal.
#ifndef CEPOLL_SHIM_H
#define CEPOLL_SHIM_H
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <stdint.h>
#include <time.h>

/// Blocks while `*word` holds `expected`, until `cepoll_futex_wake` on `word`, a signal, or
/// `deadline` (absolute, CLOCK_MONOTONIC; NULL: none); at once if `*word` differs. Process-private.
/// Returns 0, or -1 with errno set (EAGAIN: the word differed; EINTR: a signal; ETIMEDOUT).
static inline long cepoll_futex_wait(uint32_t *word, uint32_t expected, const struct timespec *deadline) {
    return syscall(SYS_futex, word, FUTEX_WAIT_BITSET_PRIVATE, expected, deadline, (void *)0, FUTEX_BITSET_MATCH_ANY);
}

/// Wakes one thread blocked in `cepoll_futex_wait` on `word`. Async-signal-safe.
static inline long cepoll_futex_wake(uint32_t *word) {
    return syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, 1, (void *)0, (void *)0, 0);
}
#endif
