// Runs one fault-injection scenario and prints what happened; FaultInjectionTests spawns it
// once per scenario. The FaultInjection target linked in here makes chosen system calls fail
// (see its header). Exit 0: the scenario held; another code: it did not (the line printed says
// what); a watchdog ends a scenario that hangs with code 3.
import Dispatch
import FaultInjection
import Foundation
import RunLoopKit
import Synchronization

/// Ends the process with a message.
func fail(_ message: String) -> Never {
    print("FAIL: \(message)")
    exit(1)
}

/// Arms `spec` (see FaultInjection.h), or fails.
func arm(_ spec: String) {
    guard runloopkit_faults_arm(spec) == 0 else { fail("bad fault spec \(spec)") }
}

/// Runs `body` on a new thread and waits for its result.
func onNewThread<T: Sendable>(_ body: @escaping @Sendable () -> T) -> T {
    let result = Mutex<T?>(nil)
    let done = DispatchSemaphore(value: 0)
    let thread = Thread {
        result.withLock { $0 = body() }
        done.signal()
    }
    thread.start()
    done.wait()
    return result.withLock { $0! }
}

/// Seconds since `start`.
func elapsed(since start: ContinuousClock.Instant) -> Double {
    let duration = ContinuousClock.now - start
    return Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
}

/// Runs `loop` until `done()` or `limit` seconds pass.
func run(_ loop: EvRunLoop, for limit: Double, until done: () -> Bool) {
    let start = ContinuousClock.now
    while !done() && elapsed(since: start) < limit {
        loop.run(mode: .default, timeout: .milliseconds(20), returnAfterSourceHandled: true)
    }
}

/// Creating a loop while one creation call fails: `EMFILE` throws `outOfFileDescriptors`,
/// another errno throws `backendUnavailable`, `EINTR` is retried. (The timerfd is made at the
/// loop's first sleep with a deadline, not here: see the `timerfd-create` scenarios.)
func creationFaults() {
    let cases: [(spec: String, expected: String)] = [
        ("eventfd:1:EMFILE", "\(EvRunLoopError.outOfFileDescriptors)"),
        ("eventfd:1:ENOMEM", "unavailable"),
        ("eventfd:1:EINTR:3", "ok"),
        ("epoll_ctl:1:ENOMEM:0", "unavailable"),
        ("epoll_ctl:1:ENOSPC:0", "unavailable"),
        ("epoll_ctl:3:EINTR:4", "ok"),  // calls 1 and 2: the check of the eventfd; 3: libev's
        ("epoll_ctl:1:ENOMEM:2", "ok"),
    ]
    for (spec, expected) in cases {
        let outcome = onNewThread { () -> String in
            arm(spec + "@thread")
            defer { runloopkit_faults_disarm() }
            do {
                let loop = try EvRunLoop.forCurrentThread()
                runloopkit_faults_disarm()
                // The loop works: a timer fires on time.
                let fired = Mutex(false)
                loop.add(EvTimer(after: .milliseconds(20)) { _ in fired.withLock { $0 = true } }, forMode: .default)
                run(loop, for: 5) { fired.withLock { $0 } }
                return fired.withLock { $0 } ? "ok" : "timer never fired"
            } catch let error as EvRunLoopError {
                if case .backendUnavailable(let detail) = error { return "unavailable: \(detail)" }
                return "\(error)"
            } catch {
                return "\(error)"
            }
        }
        guard outcome.hasPrefix(expected) else { fail("\(spec): expected \(expected), got \(outcome)") }
        print("\(spec): \(outcome)")
    }
}

/// Fails libev's `epoll_ctl` for the loop's set of callers' descriptors, once. Calls 1 and 2: the
/// loop checks the set's descriptor against libev's epoll set (add, remove); call 3: the process's
/// file register confirms the pipe is still the source's file; call 4: the pipe into the set;
/// call 5: libev adds the set to its epoll, inside the next `ev_run`.
let libevAddsTheDescriptorSet = "epoll_ctl:5:ENOMEM@thread"

/// libev's `epoll_ctl` for one of the loop's own descriptors fails while it runs (the epoll set
/// for callers' descriptors, registered when the first one is watched): libev stops that watcher
/// and reports `EV_ERROR`; the loop re-arms it and the source fires.
func internalWatcherReArmed() {
    let outcome = onNewThread { () -> String in
        let loop = EvRunLoop.current
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { return "pipe failed" }
        let readable = Mutex(false)
        let source = try! EvFileDescriptorSource(fileDescriptor: fds[0], events: .readable) { readiness in
            readable.withLock { $0 = readiness.contains(.readable) }
        }
        var byte: UInt8 = 1
        _ = write(fds[1], &byte, 1)
        arm(libevAddsTheDescriptorSet)
        loop.add(source, forMode: .default)
        run(loop, for: 5) { readable.withLock { $0 } }
        let injected = runloopkit_faults_injected("epoll_ctl")
        runloopkit_faults_disarm()
        source.invalidate()
        close(fds[0])
        close(fds[1])
        guard injected == 1 else { return "the fault was not injected (\(injected))" }
        return readable.withLock { $0 } ? "ok" : "the source never fired"
    }
    guard outcome == "ok" else { fail(outcome) }
    print("epoll_ctl on the loop's own descriptor: re-armed")
}

/// The same with nothing else to end the sleep: no timeout, no other item. libev makes the failing
/// `epoll_ctl` inside the `ev_run` the loop would block in, so the loop must learn of the
/// `EV_ERROR` before it blocks, or it sleeps for good with the descriptor unwatched.
func internalWatcherReArmedBeforeBlocking() {
    var fds: [Int32] = [0, 0]
    guard pipe(&fds) == 0 else { fail("pipe failed") }
    defer { close(fds[0]); close(fds[1]) }
    let readEnd = fds[0]
    var byte: UInt8 = 1
    _ = write(fds[1], &byte, 1)
    let result = Mutex<EvRunLoop.RunResult?>(nil)
    let ended = DispatchSemaphore(value: 0)
    Thread {
        let loop = EvRunLoop.current
        let source = try! EvFileDescriptorSource(fileDescriptor: readEnd, events: .readable) { readiness in
            if readiness.contains(.readable) { EvRunLoop.current.stop() }
        }
        arm(libevAddsTheDescriptorSet)
        loop.add(source, forMode: .default)
        let outcome = loop.run(mode: .default, timeout: nil)
        runloopkit_faults_disarm()
        source.invalidate()
        result.withLock { $0 = outcome }
        ended.signal()
    }.start()
    // A safety net: the source fires at once when the loop re-arms the watcher before it sleeps.
    guard ended.wait(timeout: .now() + 10) == .success else {
        fail("the loop slept with its descriptor set's registration failed")
    }
    let outcome = result.withLock { $0 }
    guard outcome == .stopped else { fail("the run ended \(outcome.map { "\($0)" } ?? "(none)")") }
    print("epoll_ctl on the loop's own descriptor, nothing else to wake it: re-armed before sleeping")
}

/// libev's `epoll_ctl` for the loop's timerfd (`spec` call 6, when the first sleep with a deadline
/// makes it) or its wake-up eventfd (call 3, as the loop is made) fails once; before each, the
/// loop checks the descriptor against an epoll set with two calls of its own (add, remove). The
/// registration is retried, not taken for a deadline nor left to abort inside libev ("pipe_w not
/// active"): the timer fires and every message arrives.
func loopWorksAfterRegistrationFault(_ spec: String) {
    let received = Mutex(0)
    let fired = Mutex(false)
    let port = EvMessagePort<Int> { _ in received.withLock { $0 += 1 } }
    let outcome = onNewThread { () -> String in
        arm(spec + "@thread")
        let loop: EvRunLoop
        do { loop = try EvRunLoop.forCurrentThread() } catch { return "creation: \(error)" }
        loop.add(port, forMode: .default)
        loop.add(EvTimer(after: .milliseconds(50)) { _ in fired.withLock { $0 = true } }, forMode: .default)
        Thread {
            for value in 0..<10 {
                while !loop.isWaiting { sched_yield() }
                try? port.send(value)
            }
        }.start()
        run(loop, for: 5) { fired.withLock { $0 } && received.withLock { $0 } == 10 }
        runloopkit_faults_disarm()
        return "timer fired: \(fired.withLock { $0 }), messages: \(received.withLock { $0 })"
    }
    guard outcome == "timer fired: true, messages: 10" else { fail("\(spec): \(outcome)") }
    print("\(spec): \(outcome)")
}

/// A timer fires on time while `spec` fails calls on the loop's thread.
func timerOnTime(under spec: String) {
    let outcome = onNewThread { () -> String in
        let loop = EvRunLoop.current
        let fired = Mutex<ContinuousClock.Instant?>(nil)
        let start = ContinuousClock.now
        arm(spec + "@thread")
        loop.add(EvTimer(after: .milliseconds(100)) { _ in fired.withLock { $0 = .now } }, forMode: .default)
        let result = loop.run(mode: .default, timeout: .seconds(10), returnAfterSourceHandled: false)
        runloopkit_faults_disarm()
        guard let firedAt = fired.withLock({ $0 }) else { return "the timer never fired (run: \(result))" }
        let late = elapsed(since: start) - 0.1
        let firedAfter = Double((firedAt - start).components.attoseconds) / 1e18 + Double((firedAt - start).components.seconds)
        // Never before its date (R46), and never a whole sleep late: well under a second.
        guard firedAfter >= 0.1, late < 1 else { return "fired after \(firedAfter) s" }
        return "ok"
    }
    guard outcome == "ok" else { fail("\(spec): \(outcome)") }
    print("\(spec): timer on time")
}

/// A port message sent from another thread while that thread's `write` to the loop's eventfd
/// fails (and the loop's `read` of it too) is delivered: the wake-up is retried, not lost.
func wakeUpSurvivesFailedWrites(_ writeSpec: String, _ readSpec: String) {
    let received = Mutex<[Int]>([])
    let ready = DispatchSemaphore(value: 0)
    let loopBox = Mutex<EvRunLoop?>(nil)
    let port = EvMessagePort<Int> { value in received.withLock { $0.append(value) } }
    let finished = DispatchSemaphore(value: 0)
    Thread {
        let loop = EvRunLoop.current
        loop.add(port, forMode: .default)
        loopBox.withLock { $0 = loop }
        ready.signal()
        arm(readSpec + "@thread")
        run(loop, for: 5) { received.withLock { $0.count } == 100 }
        runloopkit_faults_disarm()
        finished.signal()
    }.start()
    ready.wait()
    let loop = loopBox.withLock { $0! }
    for value in 0..<100 {
        while !loop.isWaiting { sched_yield() }  // the loop sleeps: the send must write the eventfd
        arm(writeSpec + "@thread")
        do { try port.send(value) } catch { fail("send: \(error)") }
    }
    runloopkit_faults_disarm()
    finished.wait()
    let got = received.withLock { $0 }
    guard got == Array(0..<100) else { fail("\(writeSpec): delivered \(got.count) of 100") }
    print("\(writeSpec) / \(readSpec): 100 of 100 delivered")
}

/// A signal whose handler's eventfd write fails is still handled.
func signalSurvivesFailedWrites() {
    let handled = Mutex(0)
    let result = onNewThread { () -> EvRunLoop.RunResult in
        let loop = EvRunLoop.current
        let source = try! EvSignalSource(signal: SIGUSR1) {
            handled.withLock { $0 += 1 }
            EvRunLoop.current.stop()
        }
        loop.add(source, forMode: .default)
        let trigger = EvTimer(after: .milliseconds(20)) { _ in
            // From another thread, once this loop sleeps: the handler's write fails three times.
            Thread {
                while !loop.isWaiting { sched_yield() }
                arm("write:1:ENOMEM:3")
                kill(getpid(), SIGUSR1)
            }.start()
        }
        loop.add(trigger, forMode: .default)
        let result = loop.run(mode: .default, timeout: .seconds(5))
        runloopkit_faults_disarm()
        source.invalidate()
        return result
    }
    guard result == .stopped, handled.withLock({ $0 }) == 1 else { fail("signal: run \(result), handled \(handled.withLock { $0 })") }
    print("signal with failing writes: handled")
}

/// Every wrapped call on the loop's thread fails with EINTR every other time while timers,
/// port messages, a signal and a pipe keep the loop busy: everything arrives exactly once.
func interruptedEverywhere() {
    let received = Mutex<[Int]>([])
    let ticks = Mutex(0)
    let signals = Mutex(0)
    let bytes = Mutex(0)
    let port = EvMessagePort<Int> { value in received.withLock { $0.append(value) } }
    var fds: [Int32] = [0, 0]
    guard pipe(&fds) == 0 else { fail("pipe") }
    let readEnd = fds[0], writeEnd = fds[1]
    let ready = DispatchSemaphore(value: 0)
    let finished = DispatchSemaphore(value: 0)
    let spec = ["epoll_ctl", "epoll_wait", "read", "write", "timerfd_settime"].map { "\($0):1:EINTR:0:2@thread" }.joined(separator: ";")
    Thread {
        let loop = EvRunLoop.current
        loop.add(port, forMode: .default)
        loop.add(EvTimer(after: .milliseconds(5), interval: .milliseconds(5)) { _ in ticks.withLock { $0 += 1 } }, forMode: .default)
        let signalSource = try! EvSignalSource(signal: SIGUSR2) { signals.withLock { $0 += 1 } }
        loop.add(signalSource, forMode: .default)
        let pipeSource = try! EvFileDescriptorSource(fileDescriptor: readEnd, events: .readable) { _ in
            var byte: UInt8 = 0
            var count = -1
            repeat { count = read(readEnd, &byte, 1) } while count < 0 && errno == EINTR
            if count == 1 { bytes.withLock { $0 += 1 } }
        }
        loop.add(pipeSource, forMode: .default)
        ready.signal()
        arm(spec)
        run(loop, for: 10) {
            received.withLock { $0.count } == 1000 && bytes.withLock { $0 } == 20 && signals.withLock { $0 } >= 1 && ticks.withLock { $0 } >= 20
        }
        runloopkit_faults_disarm()
        signalSource.invalidate()
        pipeSource.invalidate()
        finished.signal()
    }.start()
    ready.wait()
    for value in 0..<1000 {
        do { try port.send(value) } catch { fail("send: \(error)") }
        if value % 50 == 0 {
            var byte: UInt8 = 1
            while write(writeEnd, &byte, 1) < 0 && errno == EINTR {}
        }
    }
    kill(getpid(), SIGUSR2)
    finished.wait()
    close(readEnd)
    close(writeEnd)
    let got = received.withLock { $0 }
    guard got == Array(0..<1000) else { fail("EINTR: messages \(got.count) of 1000, in order: \(got == got.sorted())") }
    guard bytes.withLock({ $0 }) == 20 else { fail("EINTR: pipe bytes \(bytes.withLock { $0 }) of 20") }
    guard signals.withLock({ $0 }) >= 1 else { fail("EINTR: the signal was lost") }
    guard ticks.withLock({ $0 }) >= 20 else { fail("EINTR: \(ticks.withLock { $0 }) ticks") }
    print("EINTR every other call: all delivered once")
}

/// `epoll_wait` fails for good: the process stops with a message naming RunLoopKit's call
/// (never libev's bare abort).
func epollWaitFailsForGood() {
    _ = onNewThread { () -> Bool in
        let loop = EvRunLoop.current
        loop.add(EvTimer(after: .seconds(1)) { _ in }, forMode: .default)
        arm("epoll_wait:1:ENOMEM:0@thread")
        loop.run(mode: .default, timeout: .seconds(5))
        return true
    }
    fail("the run returned although epoll_wait always failed")
}

/// `epoll_ctl` refuses one of the loop's own descriptors with `EBADF` (libev asserts on that):
/// at creation (`creation`: the eventfd) the loop's creation throws naming the call; later (the
/// timerfd, registered when the first sleep with a deadline is planned) the process stops with
/// RunLoopKit's message naming its call, never libev's assertion.
func ownDescriptorRefused(atCreation: Bool) {
    let outcome = onNewThread { () -> String in
        if atCreation {
            arm("epoll_ctl:1:EBADF:0@thread")
            defer { runloopkit_faults_disarm() }
            do {
                _ = try EvRunLoop.forCurrentThread()
                return "created"
            } catch {
                return "\(error)"
            }
        }
        let loop = EvRunLoop.current
        loop.add(EvTimer(after: .milliseconds(5)) { _ in }, forMode: .default)
        arm("epoll_ctl:1:EBADF:0@thread")
        loop.run(mode: .default, timeout: .seconds(5))
        return "ran"
    }
    guard atCreation, outcome.contains("epoll_ctl refused the loop's own descriptor") else { fail("EBADF: \(outcome)") }
    print("EBADF at creation: \(outcome)")
}

/// A wake-up cycle makes no system call raw libev would not: 100 cycles of a signalled
/// version-0 source and a wake-up from another thread, the loop running with no timeout. Each
/// cycle sleeps once in libev's `epoll_wait` (as `ev_async_send` and `ev_run` would); the poll
/// after handling the source (R20.9) has no descriptor that could be ready, so it makes none.
/// With no timer (`timer` false) the loop never calls `timerfd_settime`; with one far-off
/// timer, once (its deadline never changes). Counted on the loop's thread by rules that never
/// inject.
/// Many descriptors ready at once, handled one per iteration (R38): each costs a few
/// `epoll_ctl`s (its watch, its report, its re-arm once handled), not one more per iteration it
/// waits. Before, every pass re-armed every still-unhandled ready entry: about n²/2 calls.
func manyReadyDescriptorsSystemCalls() {
    let count = 200
    let outcome = onNewThread { () -> String in
        let loop = EvRunLoop.current
        let handled = Mutex(0)
        var pipes: [(read: Int32, write: Int32)] = []
        var sources: [EvFileDescriptorSource] = []
        for _ in 0..<count {
            var fds: [Int32] = [0, 0]
            guard pipe(&fds) == 0 else { return "pipe failed" }
            let readEnd = fds[0]
            pipes.append((fds[0], fds[1]))
            var byte: UInt8 = 1
            _ = write(fds[1], &byte, 1)
            sources.append(try! EvFileDescriptorSource(fileDescriptor: readEnd, events: .readable) { _ in
                var byte: UInt8 = 0
                if read(readEnd, &byte, 1) == 1 { handled.withLock { $0 += 1 } }
            })
        }
        arm("epoll_ctl:1000000000:EINVAL@thread")
        for source in sources { loop.add(source, forMode: .default) }
        run(loop, for: 10) { handled.withLock { $0 } == count }
        let calls = runloopkit_faults_calls("epoll_ctl")
        runloopkit_faults_disarm()
        for source in sources { source.invalidate() }
        for (readEnd, writeEnd) in pipes { close(readEnd); close(writeEnd) }
        let done = handled.withLock { $0 }
        guard done == count else { return "\(done) of \(count) descriptors handled" }
        return calls <= 5 * count ? "ok \(calls)" : "\(calls) epoll_ctl for \(count) ready descriptors (at most \(5 * count))"
    }
    guard outcome.hasPrefix("ok") else { fail(outcome) }
    print("\(count) ready descriptors: \(outcome.dropFirst(3)) epoll_ctl")
}

func quietWakeUps(timer: Bool) {
    let handled = DispatchSemaphore(value: 0)
    let started = DispatchSemaphore(value: 0)
    let loopBox = Mutex<EvRunLoop?>(nil)
    let counts = Mutex<(settime: Int, epollWait: Int)?>(nil)
    let source = EvSource { handled.signal() }
    let thread = Thread {
        let loop = EvRunLoop.current
        loop.add(source, forMode: .default)
        if timer { loop.add(EvTimer(after: .seconds(600)) { _ in }, forMode: .default) }
        loopBox.withLock { $0 = loop }
        started.signal()
        arm("timerfd_settime:1000000000:EINVAL@thread;epoll_wait:1000000000:EINVAL@thread")
        let result = loop.run(mode: .default, timeout: nil)
        counts.withLock { $0 = (runloopkit_faults_calls("timerfd_settime"), runloopkit_faults_calls("epoll_wait")) }
        runloopkit_faults_disarm()
        if result != .stopped { fail("quiet wake-ups: run ended \(result)") }
    }
    thread.start()
    started.wait()
    let loop = loopBox.withLock { $0! }
    let cycles = 100
    for _ in 0..<cycles {
        while !loop.isWaiting { sched_yield() }
        source.signal()
        loop.wakeUp()
        handled.wait()
    }
    while !loop.isWaiting { sched_yield() }
    loop.stop()
    while counts.withLock({ $0 }) == nil { usleep(1000) }
    let (settime, epollWait) = counts.withLock { $0! }
    let settimeLimit = timer ? 1 : 0
    // One sleep per cycle, and the last one's before the stop.
    let epollWaitLimit = cycles + 1
    guard settime <= settimeLimit, epollWait <= epollWaitLimit else {
        fail("quiet wake-ups (timer: \(timer)): \(settime) timerfd_settime (at most \(settimeLimit)), \(epollWait) epoll_wait (at most \(epollWaitLimit)) for \(cycles) cycles")
    }
    print("quiet wake-ups (timer: \(timer)): \(settime) timerfd_settime, \(epollWait) epoll_wait for \(cycles) cycles")
}

/// A repeating timer costs per fire the system calls of a kernel timer that repeats by itself:
/// one `epoll_wait` (the sleep) and one `read` of the timerfd, and no `timerfd_settime` after the
/// first arming but for wake-ups late by more than a period (the code that re-armed it every
/// period made 200). 200 fires of a 1 kHz timer, counted on the loop's thread by rules that never
/// inject.
func periodicTimerSystemCalls() {
    let outcome = onNewThread { () -> String in
        let loop = EvRunLoop.current
        let fires = Mutex(0)
        let timer = EvTimer(after: .milliseconds(1), interval: .milliseconds(1)) { timer in
            if fires.withLock({ $0 += 1; return $0 }) == 200 { timer.invalidate() }
        }
        loop.add(timer, forMode: .default)
        arm("timerfd_settime:1000000000:EINVAL@thread;epoll_wait:1000000000:EINVAL@thread;read:1000000000:EINVAL@thread")
        let result = loop.run(mode: .default, timeout: .seconds(30))
        let (settime, epollWait, reads) = (runloopkit_faults_calls("timerfd_settime"), runloopkit_faults_calls("epoll_wait"), runloopkit_faults_calls("read"))
        runloopkit_faults_disarm()
        let fired = fires.withLock { $0 }
        guard result == .finished, fired == 200 else { return "run \(result), \(fired) fires" }
        // A wake-up late by more than a period, on a loaded machine, may re-arm it: a few.
        guard settime <= 2 + fired / 10, epollWait <= fired + 2, reads <= fired + 2 else {
            return "\(settime) timerfd_settime, \(epollWait) epoll_wait, \(reads) read for \(fired) fires"
        }
        return "ok: \(settime) timerfd_settime, \(epollWait) epoll_wait, \(reads) read for \(fired) fires"
    }
    guard outcome.hasPrefix("ok") else { fail("periodic timer: \(outcome)") }
    print("periodic timer: \(outcome)")
}

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
case "own-descriptor-ebadf-creation": ownDescriptorRefused(atCreation: true)
case "own-descriptor-ebadf": ownDescriptorRefused(atCreation: false)
default: fail("unknown scenario \(CommandLine.arguments.dropFirst().first ?? "(none)")")
}
print("PASS")
