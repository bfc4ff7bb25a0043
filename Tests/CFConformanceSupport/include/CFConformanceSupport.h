// The parts of the CoreFoundation run-loop C API that the conformance tests need beyond those the
// benchmark declares in CCFRunLoop.h: observers, removal, mode lists, the current mode, timer
// state, version-1 sources and the few CFArray/CFString calls to read them. Laid out as in CF's public headers;
// the symbols resolve against Swift's libFoundation.so on Linux.
#ifndef CF_CONFORMANCE_SUPPORT_H
#define CF_CONFORMANCE_SUPPORT_H

#include "CFRunLoopAPI.h"

typedef const struct __CFArray *CFArrayRef;
typedef struct __CFRunLoopObserver *CFRunLoopObserverRef;

/// An observer's context (CFRunLoopObserverContext).
typedef struct {
    CFIndex version;
    void *info;
    const void *(*retain)(const void *info);
    void (*release)(const void *info);
    CFStringRef (*copyDescription)(const void *info);
} CFRunLoopObserverContext;

typedef void (*CFRunLoopObserverCallBack)(CFRunLoopObserverRef observer, CFOptionFlags activity,
                                          void *info);

/// CFArray's callbacks; only passed through (kCFTypeArrayCallBacks).
typedef struct {
    CFIndex version;
    const void *retain;
    const void *release;
    const void *copyDescription;
    const void *equal;
} CFArrayCallBacks;

extern const CFArrayCallBacks kCFTypeArrayCallBacks;

extern CFArrayRef CFArrayCreate(CFAllocatorRef allocator, const void **values, CFIndex count,
                                const CFArrayCallBacks *callBacks);
extern CFIndex CFArrayGetCount(CFArrayRef array);
extern const void *CFArrayGetValueAtIndex(CFArrayRef array, CFIndex index);
extern Boolean CFStringGetCString(CFStringRef string, char *buffer, CFIndex bufferSize,
                                  CFStringEncoding encoding);

extern void CFRunLoopRun(void);
extern CFRunLoopRef CFRunLoopGetMain(void);
extern void CFRunLoopAddCommonMode(CFRunLoopRef rl, CFStringRef mode);
extern CFArrayRef CFRunLoopCopyAllModes(CFRunLoopRef rl);
extern CFStringRef CFRunLoopCopyCurrentMode(CFRunLoopRef rl);
extern Boolean CFRunLoopIsWaiting(CFRunLoopRef rl);

extern void CFRunLoopRemoveSource(CFRunLoopRef rl, CFRunLoopSourceRef source, CFStringRef mode);
extern Boolean CFRunLoopSourceIsSignalled(CFRunLoopSourceRef source);
extern Boolean CFRunLoopSourceIsValid(CFRunLoopSourceRef source);

extern Boolean CFRunLoopContainsSource(CFRunLoopRef rl, CFRunLoopSourceRef source, CFStringRef mode);
extern Boolean CFRunLoopContainsTimer(CFRunLoopRef rl, CFRunLoopTimerRef timer, CFStringRef mode);

extern CFAbsoluteTime CFRunLoopTimerGetNextFireDate(CFRunLoopTimerRef timer);
extern CFAbsoluteTime CFRunLoopGetNextTimerFireDate(CFRunLoopRef rl, CFStringRef mode);
extern Boolean CFRunLoopTimerIsValid(CFRunLoopTimerRef timer);

extern CFRunLoopObserverRef CFRunLoopObserverCreate(CFAllocatorRef allocator,
                                                    CFOptionFlags activities, Boolean repeats,
                                                    CFIndex order,
                                                    CFRunLoopObserverCallBack callout,
                                                    CFRunLoopObserverContext *context);
extern void CFRunLoopAddObserver(CFRunLoopRef rl, CFRunLoopObserverRef observer, CFStringRef mode);
extern void CFRunLoopRemoveObserver(CFRunLoopRef rl, CFRunLoopObserverRef observer,
                                    CFStringRef mode);
extern Boolean CFRunLoopContainsObserver(CFRunLoopRef rl, CFRunLoopObserverRef observer,
                                         CFStringRef mode);
extern void CFRunLoopObserverInvalidate(CFRunLoopObserverRef observer);
extern Boolean CFRunLoopObserverIsValid(CFRunLoopObserverRef observer);

/// A version-1 source's context (CFRunLoopSourceContext1) as CF lays it out on Linux: the port is
/// a file descriptor (`__CFPort` is `int`), which CF adds, edge-triggered, to the epoll set of
/// every mode the source is in; `perform` takes only `info` (no Mach message).
typedef struct {
    CFIndex version;  // 1
    void *info;
    const void *(*retain)(const void *info);
    void (*release)(const void *info);
    CFStringRef (*copyDescription)(const void *info);
    Boolean (*equal)(const void *info1, const void *info2);
    CFHashCode (*hash)(const void *info);
    int (*getPort)(void *info);
    void (*perform)(void *info);
} CFRunLoopSourceContext1;

/// CFRunLoopSourceCreate for a version-1 context (CF reads `version` to know which it got).
CFRunLoopSourceRef cfc_source1_create(CFIndex order, CFRunLoopSourceContext1 *context);

/// The port behind a harness version-1 source: a non-blocking eventfd (close(2) it when done),
/// or -1 with errno set.
int cfc_port_open(void);
/// Makes a port readable: adds 1 to its eventfd (any thread).
void cfc_port_make_ready(int port);
/// Empties a port's eventfd; does nothing if it is empty already.
void cfc_port_drain(int port);
/// Empties a port's eventfd and returns what its counter held (0 if it was empty).
unsigned long long cfc_port_take(int port);

/// The calling thread's kernel id (gettid).
int cfc_thread_id(void);
/// Whether thread `tid` of this process is asleep in a poll-type system call (epoll_wait,
/// epoll_pwait, ppoll, poll, select): the wait of a run loop that found nothing ready. Read from
/// /proc/self/task/TID/{stat,syscall}; a wait that returns at once is never seen as asleep.
Boolean cfc_thread_is_asleep_in_wait(int tid);

/// Copies `string` (a mode name) into `buffer` as UTF-8; returns `buffer`, or "" if it does not fit.
const char *cfc_copy_string(CFStringRef string, char *buffer, long size);

#endif
