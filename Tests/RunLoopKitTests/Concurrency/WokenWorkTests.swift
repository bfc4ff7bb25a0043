import Foundation
@testable import RunLoopKit
import Testing

/// Runs `body` on `loop`'s thread in a blocks step before a wait (R20.3), so that a run nested
/// in it hands the thread back to a pass that has yet to sleep.
private func inABlocksStepBeforeTheWait(_ loop: EvRunLoop, _ body: @escaping @Sendable () -> Void) throws {
    // Sent while the loop sleeps, the outer block runs after the wait (R20.12); the block it
    // queues without a wake-up runs in the next pass's first blocks step.
    precondition(spinUntil { loop.isWaiting }, "the loop did not go to sleep")
    try loop.execute { loop.perform(body) }
}

/// Runs `handOver` in a timer's handler, after the wait of a run of a private mode that polls
/// once, nested in a blocks step before the wait: its wake-up is dropped there (C52), and the
/// nested run ends without another.
private func afterTheWaitOfANestedPoll(_ loop: EvRunLoop, _ handOver: @escaping @Sendable () -> Void) throws {
    try inABlocksStepBeforeTheWait(loop) {
        let tracking = EvRunLoop.Mode("tracking")
        loop.add(EvTimer(after: .zero) { _ in handOver() }, forMode: tracking)
        _ = loop.run(mode: tracking, timeout: .zero)
    }
}

/// Waits for `latch` on a thread of its own, not a thread of the cooperative pool.
private func opened(_ latch: Latch, timeout seconds: Double = 120) async -> Bool {
    await withCheckedContinuation { continuation in
        Thread { continuation.resume(returning: latch.wait(timeout: seconds)) }.start()
    }
}

/// Work handed to a loop by the calls that wake it (`execute`, `submit`, an executor's jobs, a
/// worker's work and stop) runs without another wake-up, even when its own was dropped because
/// it came after the wait of a run nested in a callout, which then ended: the enclosing run does
/// not sleep while such work waits for its mode. A block of `perform(inModes:_:)`, which does not
/// wake the loop (R56), still waits for a wake-up.
@Suite struct WokenWorkTests {
    @Test func workExecutedAfterTheWaitOfANestedRunRunsWithoutAnotherWakeUp() async throws {
        let worker = EvWorkerThread(name: "woken-execute")
        let loop = try worker.start()
        let ran = Latch()
        try afterTheWaitOfANestedPoll(loop) { try! loop.execute { ran.open() } }
        #expect(await opened(ran))
        await worker.stop()
    }

    @Test func aJobQueuedAfterTheWaitOfANestedRunRuns() async throws {
        let worker = EvWorkerThread(name: "woken-job")
        let loop = try worker.start()
        let executor = EvRunLoopExecutor(loop)
        let ran = Latch()
        try afterTheWaitOfANestedPoll(loop) { Task(executorPreference: executor) { ran.open() } }
        #expect(await opened(ran))
        await worker.stop()
    }

    @Test func workSubmittedToAWorkerAfterTheWaitOfANestedRunRuns() async throws {
        let worker = EvWorkerThread(name: "woken-worker")
        let loop = try worker.start()
        let ran = Latch()
        try afterTheWaitOfANestedPoll(loop) { try! worker.execute { ran.open() } }
        #expect(await opened(ran))
        await worker.stop()
    }

    @Test func aWorkerStoppedAfterTheWaitOfANestedRunExits() async throws {
        let worker = EvWorkerThread(name: "woken-stop")
        let loop = try worker.start()
        let tornDown = Latch()
        try afterTheWaitOfANestedPoll(loop) { worker.stop(waitUntilExited: false) }
        Task {
            await worker.waitUntilStopped()
            tornDown.open()
        }
        #expect(await opened(tornDown))
    }

    /// R56 holds: the block of a plain `perform` made there waits until the loop is woken.
    @Test func aPerformBlockAfterTheWaitOfANestedRunStillWaitsForAWakeUp() async throws {
        let worker = EvWorkerThread(name: "woken-perform")
        let loop = try worker.start()
        let ran = Latch()
        let queued = Latch()
        try afterTheWaitOfANestedPoll(loop) {
            loop.perform { ran.open() }
            queued.open()
        }
        #expect(await opened(queued))
        #expect(spinUntil { loop.isWaiting })
        #expect(loop.pendingBlocks.withLock { $0.pendingCount } == 1)  // asleep with the block pending
        loop.wakeUp()
        #expect(await opened(ran))
        await worker.stop()
    }
}
