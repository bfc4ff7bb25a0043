// See include/FaultInjection.h. Each wrapped call asks should_fail() and either fails with the
// rule's errno or calls the real function (dlsym RTLD_NEXT).
#define _GNU_SOURCE
#include "FaultInjection.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <poll.h>
#include <unistd.h>

enum { EPOLL_CTL_CALL, EPOLL_WAIT_CALL, EVENTFD_CALL, TIMERFD_CREATE_CALL, TIMERFD_SETTIME_CALL, READ_CALL, WRITE_CALL, POLL_CALL, CALL_COUNT };
static const char *const call_names[CALL_COUNT] = {
    "epoll_ctl", "epoll_wait", "eventfd", "timerfd_create", "timerfd_settime", "read", "write", "poll",
};

// Every field is atomic: a rule may be re-armed on one thread while another thread's call reads it.
struct rule {
    atomic_int armed;
    atomic_int error;
    atomic_long first, count, every;
    atomic_int this_thread_only;
    _Atomic pthread_t thread;
    atomic_long calls;
    atomic_long injected;
};
static struct rule rules[CALL_COUNT];

static int call_index(const char *name, size_t length) {
    for (int i = 0; i < CALL_COUNT; i++) {
        if (strlen(call_names[i]) == length && strncmp(call_names[i], name, length) == 0) return i;
    }
    return -1;
}

static int errno_named(const char *name) {
    static const struct { const char *name; int value; } known[] = {
        {"EINTR", EINTR}, {"EMFILE", EMFILE}, {"ENFILE", ENFILE}, {"ENOMEM", ENOMEM},
        {"ENOSPC", ENOSPC}, {"EAGAIN", EAGAIN}, {"EBADF", EBADF}, {"EINVAL", EINVAL},
    };
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++) {
        if (strcmp(known[i].name, name) == 0) return known[i].value;
    }
    return atoi(name);
}

void runloopkit_faults_disarm(void) {
    for (int i = 0; i < CALL_COUNT; i++) atomic_store(&rules[i].armed, 0);
}

int runloopkit_faults_arm(const char *spec) {
    runloopkit_faults_disarm();
    char *copy = strdup(spec), *save = NULL;
    if (!copy) return -1;
    int status = 0;
    for (char *item = strtok_r(copy, ";", &save); item; item = strtok_r(NULL, ";", &save)) {
        char *at = strchr(item, '@');
        int thread_only = at && strcmp(at, "@thread") == 0;
        if (at) *at = 0;
        char *fields[5] = {0};
        int n = 0;
        for (char *field = strtok(item, ":"); field && n < 5; field = strtok(NULL, ":")) fields[n++] = field;
        int index = n >= 3 ? call_index(fields[0], strlen(fields[0])) : -1;
        if (index < 0) { status = -1; continue; }
        struct rule *rule = &rules[index];
        rule->error = errno_named(fields[2]);
        rule->first = atol(fields[1]);
        rule->count = n >= 4 ? atol(fields[3]) : 1;
        rule->every = n >= 5 ? atol(fields[4]) : 1;
        if (rule->every < 1) rule->every = 1;
        rule->this_thread_only = thread_only;
        rule->thread = pthread_self();
        atomic_store(&rule->calls, 0);
        atomic_store(&rule->injected, 0);
        atomic_store(&rule->armed, 1);
    }
    free(copy);
    return status;
}

long runloopkit_faults_injected(const char *call) {
    int index = call_index(call, strlen(call));
    return index < 0 ? -1 : atomic_load(&rules[index].injected);
}

long runloopkit_faults_calls(const char *call) {
    int index = call_index(call, strlen(call));
    return index < 0 ? -1 : atomic_load(&rules[index].calls);
}

static int should_fail(int index) {
    struct rule *rule = &rules[index];
    if (!atomic_load_explicit(&rule->armed, memory_order_acquire)) return 0;
    if (rule->this_thread_only && !pthread_equal(rule->thread, pthread_self())) return 0;
    long call = atomic_fetch_add(&rule->calls, 1) + 1;
    if (call < rule->first || (call - rule->first) % rule->every != 0) return 0;
    long ordinal = (call - rule->first) / rule->every;
    if (rule->count != 0 && ordinal >= rule->count) return 0;
    atomic_fetch_add(&rule->injected, 1);
    errno = rule->error;
    return 1;
}

// The real functions, looked up once when the program is loaded, before any thread exists.
static __typeof__(epoll_ctl) *real_epoll_ctl;
static __typeof__(epoll_wait) *real_epoll_wait;
static __typeof__(eventfd) *real_eventfd;
static __typeof__(timerfd_create) *real_timerfd_create;
static __typeof__(timerfd_settime) *real_timerfd_settime;
static __typeof__(read) *real_read;
static __typeof__(write) *real_write;
static __typeof__(poll) *real_poll;

#define RESOLVE(name) real_##name = (__typeof__(name) *)dlsym(RTLD_NEXT, #name)

__attribute__((constructor)) static void resolve_real_functions(void) {
    RESOLVE(epoll_ctl);
    RESOLVE(epoll_wait);
    RESOLVE(eventfd);
    RESOLVE(timerfd_create);
    RESOLVE(timerfd_settime);
    RESOLVE(read);
    RESOLVE(write);
    RESOLVE(poll);
}

int epoll_ctl(int epfd, int op, int fd, struct epoll_event *event) {
    if (should_fail(EPOLL_CTL_CALL)) return -1;
    return real_epoll_ctl(epfd, op, fd, event);
}

int epoll_wait(int epfd, struct epoll_event *events, int maxevents, int timeout) {
    if (should_fail(EPOLL_WAIT_CALL)) return -1;
    return real_epoll_wait(epfd, events, maxevents, timeout);
}

int eventfd(unsigned int initval, int flags) {
    if (should_fail(EVENTFD_CALL)) return -1;
    return real_eventfd(initval, flags);
}

int timerfd_create(int clockid, int flags) {
    if (should_fail(TIMERFD_CREATE_CALL)) return -1;
    return real_timerfd_create(clockid, flags);
}

int timerfd_settime(int fd, int flags, const struct itimerspec *new_value, struct itimerspec *old_value) {
    if (should_fail(TIMERFD_SETTIME_CALL)) return -1;
    return real_timerfd_settime(fd, flags, new_value, old_value);
}

ssize_t read(int fd, void *buffer, size_t count) {
    if (should_fail(READ_CALL)) return -1;
    return real_read(fd, buffer, count);
}

ssize_t write(int fd, const void *buffer, size_t count) {
    if (should_fail(WRITE_CALL)) return -1;
    return real_write(fd, buffer, count);
}

int poll(struct pollfd *entries, nfds_t count, int timeout) {
    if (should_fail(POLL_CALL)) return -1;
    return real_poll(entries, count, timeout);
}
