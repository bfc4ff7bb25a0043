// Runs one fault-injection scenario and prints what happened; FaultInjectionTests spawns it
// once per scenario. The FaultInjection target linked in here makes chosen system calls fail
// (see its header). Exit 0: the scenario held; another code: it did not (the line printed says
// what); a watchdog ends a scenario that hangs with code 3.
import Foundation

// A spawned process inherits its parent's blocked signals (the test runner's threads block
// some): unblock them all before any thread starts, so the scenarios' signals arrive.
var noSignals = sigset_t()
sigemptyset(&noSignals)
sigprocmask(SIG_SETMASK, &noSignals, nil)

// The watchdog: a scenario that hangs (sleeps past its deadline) fails instead.
Thread {
    sleep(30)
    print("TIMEOUT")
    exit(3)
}.start()

switch CommandLine.arguments.dropFirst().first {
case "creation": creationFaults()
case "internal-watcher": internalWatcherReArmed()
case "internal-watcher-asleep": internalWatcherReArmedBeforeBlocking()
case "deadline-epoll-ctl": loopWorksAfterRegistrationFault("epoll_ctl:6:ENOMEM")
case "wake-epoll-ctl": loopWorksAfterRegistrationFault("epoll_ctl:3:ENOSPC")
case "timerfd-settime": timerOnTime(under: "timerfd_settime:1:ENOMEM:0")
case "timerfd-settime-eintr": timerOnTime(under: "timerfd_settime:1:EINTR:5")
case "timerfd-create": timerOnTime(under: "timerfd_create:1:EMFILE:0")
case "timerfd-create-enomem": timerOnTime(under: "timerfd_create:1:ENOMEM:0")
case "timerfd-create-eintr": timerOnTime(under: "timerfd_create:1:EINTR:3")
case "epoll-wait": timerOnTime(under: "epoll_wait:1:ENOMEM:5")
case "epoll-wait-eintr": timerOnTime(under: "epoll_wait:1:EINTR:5")
case "timer-read": timerOnTime(under: "read:1:EINTR:3")
case "wake-write": wakeUpSurvivesFailedWrites("write:1:ENOMEM:2", "read:1:EINTR:0:3")
case "wake-write-eintr": wakeUpSurvivesFailedWrites("write:1:EINTR:3", "read:1:ENOMEM:0:4")
case "signal-write": signalSurvivesFailedWrites()
case "eintr-everywhere": interruptedEverywhere()
case "epoll-wait-forever": epollWaitFailsForGood()
case "quiet-wakeups": quietWakeUps(timer: false)
case "quiet-wakeups-timer": quietWakeUps(timer: true)
case "periodic-timer-syscalls": periodicTimerSystemCalls()
case "many-ready-descriptors": manyReadyDescriptorsSystemCalls()
case "ready-together": readyTogetherSystemCalls()
case "reused-number": reusedNumberSystemCalls()
case "mode-switch": modeSwitchSystemCalls()
case "parked-number": parkedSourceEndedThenClosedSystemCalls()
case "closed-first-number": closedFirstNumberSystemCalls()
case "nested-run-beside-readiness": nestedRunBesideWaitingReadinessSystemCalls()
case "main-mode-switch": mainLoopModeSwitchSystemCalls()
case "main-handled-sources": mainLoopHandledSourcesSystemCalls()
case "own-descriptor-ebadf-creation": ownDescriptorRefused(atCreation: true)
case "own-descriptor-ebadf": ownDescriptorRefused(atCreation: false)
default: fail("unknown scenario \(CommandLine.arguments.dropFirst().first ?? "(none)")")
}
print("PASS")
