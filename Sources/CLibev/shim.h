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
typedef void (*clibev_child_cb)(struct ev_loop *loop, ev_child *w, int revents);
static inline void clibev_child_init(ev_child *w, clibev_child_cb cb, int pid, int trace) {
    ev_child_init(w, cb, pid, trace);
}
static inline void clibev_timer_init(ev_timer *w, clibev_timer_cb cb, double after, double repeat) {
    ev_timer_init(w, cb, after, repeat);
}
typedef void (*clibev_prepare_cb)(struct ev_loop *loop, ev_prepare *w, int revents);
typedef void (*clibev_check_cb)(struct ev_loop *loop, ev_check *w, int revents);
static inline void clibev_prepare_init(ev_prepare *w, clibev_prepare_cb cb) { ev_prepare_init(w, cb); }
static inline void clibev_check_init(ev_check *w, clibev_check_cb cb) { ev_check_init(w, cb); }
typedef void (*clibev_cleanup_cb)(struct ev_loop *loop, ev_cleanup *w, int revents);
/// An ev_embed of `other` that sweeps it itself (no callback): libev runs `other` without
/// waiting when its backend descriptor is readable, and reifies it before each poll.
static inline void clibev_embed_init(ev_embed *w, struct ev_loop *other) { ev_embed_init(w, 0, other); }
/// The watchers an ev_embed is made of, which the embedding loop dispatches like any other.
static inline ev_io *clibev_embed_io(ev_embed *w) { return &w->io; }
static inline ev_prepare *clibev_embed_prepare(ev_embed *w) { return &w->prepare; }
static inline ev_fork *clibev_embed_fork(ev_embed *w) { return &w->fork; }
static inline void clibev_cleanup_init(ev_cleanup *w, clibev_cleanup_cb cb) { ev_cleanup_init(w, cb); }
typedef void (*clibev_fork_cb)(struct ev_loop *loop, ev_fork *w, int revents);
static inline void clibev_fork_init(ev_fork *w, clibev_fork_cb cb) { ev_fork_init(w, cb); }
typedef void (*clibev_idle_cb)(struct ev_loop *loop, ev_idle *w, int revents);
static inline void clibev_idle_init(ev_idle *w, clibev_idle_cb cb) { ev_idle_init(w, cb); }
typedef void (*clibev_periodic_cb)(struct ev_loop *loop, ev_periodic *w, int revents);
static inline void clibev_periodic_init(ev_periodic *w, clibev_periodic_cb cb, double offset, double interval) {
    ev_periodic_init(w, cb, offset, interval, 0);
}
static inline int clibev_is_active(void *w) { return ev_is_active((ev_watcher *)w); }
static inline int clibev_is_pending(void *w) { return ev_is_pending((ev_watcher *)w); }
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
