// Declarations of the CoreFoundation run-loop C API that Swift's libFoundation.so exports on
// Linux: the conformance tests (CFConformanceSupport.h adds what only they need) and the
// benchmark (Benchmarks/CCFRunLoop includes this file) drive the real CFRunLoop side by side
// with RunLoopKit. Types and context structs are laid out exactly as in CF's public CFRunLoop.h;
// nothing here is implemented (the symbols resolve against libFoundation.so, which any Swift
// file that imports Foundation links).
#ifndef CF_RUN_LOOP_API_H
#define CF_RUN_LOOP_API_H

#include <stddef.h>
#include <stdint.h>

typedef long CFIndex;
typedef unsigned long CFHashCode;
typedef unsigned long CFOptionFlags;
typedef unsigned char Boolean;
typedef double CFTimeInterval;
typedef CFTimeInterval CFAbsoluteTime;
typedef const void *CFTypeRef;

typedef const struct __CFString *CFStringRef;
typedef const struct __CFAllocator *CFAllocatorRef;
typedef struct __CFRunLoop *CFRunLoopRef;
typedef struct __CFRunLoopSource *CFRunLoopSourceRef;
typedef struct __CFRunLoopTimer *CFRunLoopTimerRef;

/// CFRunLoopRunInMode's results (CFRunLoopRunResult).
enum {
    kCFRunLoopRunFinished = 1,
    kCFRunLoopRunStopped = 2,
    kCFRunLoopRunTimedOut = 3,
    kCFRunLoopRunHandledSource = 4
};

/// A version-0 source's context (CFRunLoopSourceContext).
typedef struct {
    CFIndex version;
    void *info;
    const void *(*retain)(const void *info);
    void (*release)(const void *info);
    CFStringRef (*copyDescription)(const void *info);
    Boolean (*equal)(const void *info1, const void *info2);
    CFHashCode (*hash)(const void *info);
    void (*schedule)(void *info, CFRunLoopRef rl, CFStringRef mode);
    void (*cancel)(void *info, CFRunLoopRef rl, CFStringRef mode);
    void (*perform)(void *info);
} CFRunLoopSourceContext;

/// A timer's context (CFRunLoopTimerContext).
typedef struct {
    CFIndex version;
    void *info;
    const void *(*retain)(const void *info);
    void (*release)(const void *info);
    CFStringRef (*copyDescription)(const void *info);
} CFRunLoopTimerContext;

typedef void (*CFRunLoopTimerCallBack)(CFRunLoopTimerRef timer, void *info);

typedef unsigned int CFStringEncoding;
enum { kCFStringEncodingUTF8 = 0x08000100 };

extern const CFStringRef kCFRunLoopDefaultMode;
extern const CFStringRef kCFRunLoopCommonModes;

extern CFTypeRef CFRetain(CFTypeRef cf);
extern void CFRelease(CFTypeRef cf);
extern CFAbsoluteTime CFAbsoluteTimeGetCurrent(void);
extern CFStringRef CFStringCreateWithCString(CFAllocatorRef alloc, const char *cStr,
                                             CFStringEncoding encoding);

extern CFRunLoopRef CFRunLoopGetCurrent(void);
extern int CFRunLoopRunInMode(CFStringRef mode, CFTimeInterval seconds,
                              Boolean returnAfterSourceHandled);
extern void CFRunLoopStop(CFRunLoopRef rl);
extern void CFRunLoopWakeUp(CFRunLoopRef rl);

extern CFRunLoopSourceRef CFRunLoopSourceCreate(CFAllocatorRef allocator, CFIndex order,
                                                CFRunLoopSourceContext *context);
extern void CFRunLoopSourceSignal(CFRunLoopSourceRef source);
extern void CFRunLoopSourceInvalidate(CFRunLoopSourceRef source);
extern void CFRunLoopAddSource(CFRunLoopRef rl, CFRunLoopSourceRef source, CFStringRef mode);

extern CFRunLoopTimerRef CFRunLoopTimerCreate(CFAllocatorRef allocator, CFAbsoluteTime fireDate,
                                              CFTimeInterval interval, CFOptionFlags flags,
                                              CFIndex order, CFRunLoopTimerCallBack callout,
                                              CFRunLoopTimerContext *context);
extern void CFRunLoopAddTimer(CFRunLoopRef rl, CFRunLoopTimerRef timer, CFStringRef mode);
extern void CFRunLoopRemoveTimer(CFRunLoopRef rl, CFRunLoopTimerRef timer, CFStringRef mode);
extern void CFRunLoopTimerSetNextFireDate(CFRunLoopTimerRef timer, CFAbsoluteTime fireDate);
extern void CFRunLoopTimerInvalidate(CFRunLoopTimerRef timer);

#if __has_feature(blocks)
/// Schedules `block` to run on `rl` in `mode` (a mode name or kCFRunLoopCommonModes).
extern void CFRunLoopPerformBlock(CFRunLoopRef rl, CFTypeRef mode, void (^block)(void));
#endif

#endif
