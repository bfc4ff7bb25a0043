import Foundation
@testable import RunLoopKit
import Testing

/// ``EvRunLoop/waitUntilStopped()`` waits for a stop made with ``EvRunLoop/stop()``; the runs
/// that ``EvRunLoop/run(mode:until:orUntil:)`` ends itself, once its condition holds, are none.
@Suite struct StopWaiterTests {
    @Test func aWaitForAConditionDoesNotResumeWaitUntilStopped() async {
        let waitersAfterTheWait = Box<Int?>(nil)
        let (loop, finished) = startLoopThread { loop in
            let stopWaiters = { loop.state.withLock { $0.waiters?.stopWaiters.count ?? 0 } }
            #expect(spinUntil { stopWaiters() == 1 })  // the task below waits
            loop.add(keepAliveTimer(), forMode: .default)
            let held = Box(false)
            loop.add(EvTimer(after: .zero) { _ in held.set(true) }, forMode: .default)
            #expect(loop.run(until: .now + .seconds(30), orUntil: { held.get }))
            waitersAfterTheWait.set(stopWaiters())
            // Now a stop: it ends the task's wait.
            loop.perform { loop.stop() }
            #expect(loop.run(mode: .default, timeout: .seconds(30)) == .stopped)
        }
        await loop.waitUntilStopped()
        #expect(waitersAfterTheWait.get == 1)
        #expect(finished.wait())
    }
}
