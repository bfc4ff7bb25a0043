#include "CFConformanceSupport.h"

#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <unistd.h>

const char *cfc_copy_string(CFStringRef string, char *buffer, long size) {
    if (!string || !CFStringGetCString(string, buffer, size, kCFStringEncodingUTF8)) {
        if (size > 0) buffer[0] = '\0';
    }
    return buffer;
}

CFRunLoopSourceRef cfc_source1_create(CFIndex order, CFRunLoopSourceContext1 *context) {
    return CFRunLoopSourceCreate(NULL, order, (CFRunLoopSourceContext *)context);
}

int cfc_port_open(void) { return eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC); }

void cfc_port_make_ready(int port) { (void)eventfd_write(port, 1); }

void cfc_port_drain(int port) {
    eventfd_t count;
    (void)eventfd_read(port, &count);  // EAGAIN when empty: the eventfd is non-blocking
}

unsigned long long cfc_port_take(int port) {
    eventfd_t count = 0;
    return eventfd_read(port, &count) == 0 ? count : 0;
}

int cfc_thread_id(void) { return (int)syscall(SYS_gettid); }

/// The first line of /proc/self/task/TID/NAME, or "" when it cannot be read.
static void read_task_file(int tid, const char *name, char *buffer, size_t size) {
    char path[64];
    snprintf(path, sizeof path, "/proc/self/task/%d/%s", tid, name);
    buffer[0] = '\0';
    FILE *file = fopen(path, "r");
    if (!file) return;
    if (!fgets(buffer, (int)size, file)) buffer[0] = '\0';
    fclose(file);
}

Boolean cfc_thread_is_asleep_in_wait(int tid) {
    char line[512];
    // State (the field after the parenthesised name) must be S: sleeping, not running.
    read_task_file(tid, "stat", line, sizeof line);
    char *end = strrchr(line, ')');
    if (!end || end[1] != ' ' || end[2] != 'S') return 0;
    // And the thread must be inside a waiting system call, not a lock or a read: a poll.
    read_task_file(tid, "syscall", line, sizeof line);
    long number = -1;
    if (sscanf(line, "%ld", &number) < 1) return 0;
    switch (number) {
#ifdef SYS_epoll_wait
    case SYS_epoll_wait:
#endif
#ifdef SYS_poll
    case SYS_poll:
#endif
#ifdef SYS_select
    case SYS_select:
#endif
#ifdef SYS_epoll_pwait2
    case SYS_epoll_pwait2:
#endif
    case SYS_epoll_pwait:
    case SYS_ppoll:
    case SYS_pselect6:
        return 1;
    default:
        return 0;
    }
}
