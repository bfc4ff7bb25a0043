// RunLoopKit's fault-injection shim. Linked into the FaultHarness program, its definitions of
// epoll_ctl, epoll_wait, eventfd, timerfd_create, timerfd_settime, read, write and poll stand in for
// libc's (the linker exports them, so libev's and libdispatch's calls come here too); each
// calls the real function (dlsym RTLD_NEXT) unless an armed rule makes that call fail with a
// chosen errno. The harness arms rules right before the calls it means to hit.
#ifndef RUNLOOPKIT_FAULT_INJECTION_H
#define RUNLOOPKIT_FAULT_INJECTION_H

/// Arms the rules in `spec`, replacing any armed before, and starts counting calls afresh.
/// `spec` is a list of rules separated by ';', each `call:first:errno[:count[:every]]`:
/// the calls numbered `first`, `first + every`, … (counted from 1, `count` of them; `count` 0
/// means for ever, `every` defaults to 1) fail with `errno` (EINTR, EMFILE, ENFILE, ENOMEM,
/// ENOSPC, EAGAIN or a number). With a trailing `@thread`, a rule counts and fails only the
/// calls made on the thread that armed it. Returns 0, or -1 if the spec cannot be read.
int runloopkit_faults_arm(const char *spec);

/// Disarms every rule.
void runloopkit_faults_disarm(void);

/// How many calls of `call` failed by injection since the last arm.
long runloopkit_faults_injected(const char *call);

/// How many calls of `call` an armed rule saw since the last arm (those it let through
/// included; with `@thread`, only the arming thread's). A rule whose `first` is never reached
/// just counts: `timerfd_settime:1000000000:EINVAL@thread`.
long runloopkit_faults_calls(const char *call);

#endif
