// Faults in libev's registration of the loop's watchers, and a poll that fails for good.
import Dispatch
import FaultInjection
import Foundation
import RunLoopKit
import Synchronization

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
