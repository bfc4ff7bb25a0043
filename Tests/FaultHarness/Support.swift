// What every fault scenario shares: failing, arming a fault, a thread of its own, a bounded run.
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
