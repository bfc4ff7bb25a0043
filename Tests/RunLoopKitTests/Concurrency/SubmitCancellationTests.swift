import Foundation
@testable import RunLoopKit
import Testing

/// A worker whose loop sits in a run of a mode that is not common, where no submitted closure
/// runs, until `release` is called (or a safety net passes, longer than any stall of the test pool
/// under a sanitizer).
private struct ParkedWorker {
    let worker: EvWorkerThread
    let loop: EvRunLoop
    private let released: Box<Bool>

    init(_ name: String) throws {
        worker = EvWorkerThread(name: name)
        let loop = try worker.start()
        let released = Box(false)
        let parked = Latch()
        try worker.execute {
            let mode = EvRunLoop.Mode("parked")
            loop.add(keepAliveTimer(), forMode: mode)
            loop.add(once(.entry) { parked.open() }, forMode: mode)
            _ = loop.run(mode: mode, until: .now + .seconds(300), orUntil: { released.get })
        }
        precondition(parked.wait(timeout: 300), "the worker's loop did not park")
        self.loop = loop
        self.released = released
    }

    /// Suspends until a submitted closure waits in the loop's queue.
    func untilQueued() async -> Bool {
        await yieldUntil(timeout: 300) { !loop.pendingBlocks.withLock { $0.isEmpty } }
    }

    func release() {
        released.set(true)
        loop.wakeUp()
    }
}

/// Whether `task` ended with `CancellationError`.
private func endedCancelled<T>(_ task: Task<T, any Error>) async -> Bool {
    if case .failure(let error) = await task.result { return error is CancellationError }
    return false
}

/// Cancelling a task that awaits `submit` withdraws the closure until it starts: the task does
/// not wait on a loop busy elsewhere.
@Suite struct SubmitCancellationTests {
    @Test func cancellingAWaitingSubmitResumesTheTaskAndTheClosureNeverRuns() async throws {
        let parked = try ParkedWorker("cancel-submit")
        let ran = Box(false)
        let loop = parked.loop
        let task = Task { try await loop.submit { ran.set(true) } }
        #expect(await parked.untilQueued())
        task.cancel()
        #expect(await endedCancelled(task))  // while the loop is still parked
        parked.release()
        try await parked.worker.submit {}  // the withdrawn closure's place in the queue has passed
        #expect(!ran.get)
        await parked.worker.stop()
    }

    @Test func cancellingAWaitingWorkerSubmitResumesTheTaskAndTheWorkNeverRuns() async throws {
        let parked = try ParkedWorker("cancel-work")
        let ran = Box(false)
        let worker = parked.worker
        let task = Task { try await worker.submit { ran.set(true) } }
        #expect(await parked.untilQueued())
        task.cancel()
        #expect(await endedCancelled(task))
        parked.release()
        try await worker.submit {}
        #expect(!ran.get)
        await worker.stop()
    }

    @Test func aSubmitInAnAlreadyCancelledTaskThrowsWithoutRunningTheClosure() async throws {
        let worker = EvWorkerThread(name: "cancelled-task")
        let loop = try worker.start()
        let ran = Box(false)
        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await loop.submit { ran.set(true) }
        }
        #expect(await endedCancelled(task))
        try await loop.submit {}
        #expect(!ran.get)
        await worker.stop()
    }

    @Test func cancellingOnceTheClosureStartedStillReturnsItsValue() async throws {
        let worker = EvWorkerThread(name: "cancel-started")
        let loop = try worker.start()
        let started = Latch()
        let proceed = Latch()
        let task = Task {
            try await loop.submit { () -> Int in
                started.open()
                #expect(proceed.wait(timeout: 300))
                return 42
            }
        }
        #expect(await withCheckedContinuation { continuation in
            Thread { continuation.resume(returning: started.wait(timeout: 300)) }.start()
        })
        task.cancel()
        proceed.open()
        #expect(try await task.value == 42)
        await worker.stop()
    }
}
