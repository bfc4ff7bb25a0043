#define _GNU_SOURCE
#include "BenchSupport.h"

#include <errno.h>
#include <sched.h>

#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#define BENCH_HAS_CALLGRIND 1
#else
#define BENCH_HAS_CALLGRIND 0
#endif

int bench_callgrind_available(void) { return BENCH_HAS_CALLGRIND; }

void bench_callgrind_start(void) {
#if BENCH_HAS_CALLGRIND
    CALLGRIND_START_INSTRUMENTATION;
#endif
}

void bench_callgrind_stop(void) {
#if BENCH_HAS_CALLGRIND
    CALLGRIND_STOP_INSTRUMENTATION;
#endif
}

void bench_callgrind_dump(void) {
#if BENCH_HAS_CALLGRIND
    CALLGRIND_DUMP_STATS;
#endif
}

int bench_allowed_cpus(int *cpus, int max) {
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) != 0) return 0;
    int count = 0;
    for (int cpu = 0; cpu < CPU_SETSIZE && count < max; cpu++) {
        if (CPU_ISSET(cpu, &set)) cpus[count++] = cpu;
    }
    return count;
}

int bench_pin_current_thread(int cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (cpu >= 0) {
        CPU_SET(cpu, &set);
    } else {
        // Every CPU; the kernel keeps only those the process's cpuset allows.
        for (int i = 0; i < CPU_SETSIZE; i++) CPU_SET(i, &set);
    }
    return sched_setaffinity(0, sizeof set, &set) == 0 ? 0 : errno;
}
