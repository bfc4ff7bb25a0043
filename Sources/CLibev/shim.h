// Thin C shim over libev for RunLoopKit's libev layer (EvBackend) and the benchmarks.
// libev's watcher set-up calls are macros; Swift cannot call macros, so each one
// used is wrapped here in a static inline function. Nothing else lives here.
#ifndef CLIBEV_SHIM_H
#define CLIBEV_SHIM_H

// Without this, a machine lacking libev's headers gets hundreds of errors, none naming libev-dev.
#if !__has_include(<ev.h>)
#error "RunLoopKit needs libev's headers (ev.h), which are not installed: apt-get install libev-dev (Debian, Ubuntu); dnf install libev-devel (Fedora); apk add libev-dev (Alpine)"
#else

#include <ev.h>
#include <stdint.h>
#include <unistd.h>
#include <sys/timerfd.h>
#include <time.h>
#include <sys/syscall.h>

typedef void (*clibev_io_cb)(struct ev_loop *loop, ev_io *w, int revents);
typedef void (*clibev_async_cb)(struct ev_loop *loop, ev_async *w, int revents);
typedef void (*clibev_signal_cb)(struct ev_loop *loop, ev_signal *w, int revents);
typedef void (*clibev_timer_cb)(struct ev_loop *loop, ev_timer *w, int revents);

static inline void clibev_io_init(ev_io *w, clibev_io_cb cb, int fd, int events) {
    ev_io_init(w, cb, fd, events);
}
static inline void clibev_io_set(ev_io *w, int fd, int events) { ev_io_set(w, fd, events); }
static inline void clibev_async_init(ev_async *w, clibev_async_cb cb) { ev_async_init(w, cb); }
static inline void clibev_signal_init(ev_signal *w, clibev_signal_cb cb, int signum) {
    ev_signal_init(w, cb, signum);
}
static inline void clibev_timer_init(ev_timer *w, clibev_timer_cb cb, double after, double repeat) {
    ev_timer_init(w, cb, after, repeat);
}
static inline int clibev_is_active(void *w) { return ev_is_active((ev_watcher *)w); }
static inline void clibev_set_data(void *w, void *data) { ((ev_watcher *)w)->data = data; }
static inline void *clibev_get_data(void *w) { return ((ev_watcher *)w)->data; }

/// libdispatch's hooks for the main run loop, exported by the toolchain's libdispatch.so (CF on
/// Linux uses the same two): a nonblocking eventfd that becomes readable when the main queue has
/// work, and the call that drains the main queue on the main thread.
extern int _dispatch_get_main_queue_handle_4CF(void);
extern void _dispatch_main_queue_callback_4CF(void *msg);

/// The kernel's id of the calling thread (glibc hides gettid() without _GNU_SOURCE).
static inline int clibev_gettid(void) { return (int)syscall(SYS_gettid); }

#endif // __has_include(<ev.h>)
#endif
