// Small C helpers for the benchmark that Swift cannot express directly or cheaply.
#ifndef BENCH_SUPPORT_H
#define BENCH_SUPPORT_H

#include <stdint.h>
#include <time.h>

/// CLOCK_MONOTONIC in nanoseconds: the one clock every measurement is taken with, read in
/// every thread involved.
static inline uint64_t bench_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/// Writes up to `max` CPUs the calling thread may run on into `cpus`; returns how many.
int bench_allowed_cpus(int *cpus, int max);

/// Pins the calling thread to `cpu`, or, if `cpu` < 0, lets it run on every CPU again.
/// Returns 0 on success, an errno value on failure.
int bench_pin_current_thread(int cpu);

/// Whether the benchmark was built with valgrind's client-request header (Debian's valgrind):
/// without it the two calls below do nothing and `runloop-bench instructions` refuses to run.
int bench_callgrind_available(void);

/// Starts callgrind's instrumentation (counting) in every thread; run under
/// `valgrind --tool=callgrind --instr-atstart=no`. Does nothing outside valgrind.
void bench_callgrind_start(void);

/// Stops callgrind's instrumentation in every thread. Does nothing outside valgrind.
void bench_callgrind_stop(void);

/// Writes what callgrind counted since the last dump to a numbered file (<out-file>.1, .2, …)
/// and resets the counters. Does nothing outside valgrind.
void bench_callgrind_dump(void);

#endif
