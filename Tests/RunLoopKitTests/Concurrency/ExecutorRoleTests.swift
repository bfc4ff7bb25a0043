import Foundation
@testable import RunLoopKit
import Testing

/// A task that prefers an ``EvRunLoopExecutor`` runs each of its jobs where it was queued among
/// the loop's blocks (R55): its jobs run as a task executor's. Run as an actor's, the task's
/// nonisolated code would leave that isolation at once, and the runtime would queue the job
/// again, behind the blocks queued since.
@Suite struct ExecutorRoleTests {
    @Test func aTaskThatPrefersTheExecutorRunsInTheOrderItWasQueuedWithBlocks() async throws {
        let worker = EvWorkerThread(name: "executor-order")
        let loop = try worker.start()
        let executor = EvRunLoopExecutor(loop)
        let log = EventLog<String>()
        let queuedBeforeTheTaskRan = Box<UInt64?>(nil)
        let done = Latch()
        try await worker.submit {
            // On the loop's thread, so that the task's job and the block are queued one after
            // the other, and taken by the same blocks step.
            let start = loop.pendingBlocks.withLock { $0.nextSequence }
            Task(executorPreference: executor) {
                log.append("task")
                queuedBeforeTheTaskRan.set(loop.pendingBlocks.withLock { $0.nextSequence } - start)
                await Task.yield()
                log.append("task resumed")
                done.open()
            }
            loop.perform { log.append("block") }
        }
        #expect(done.wait())
        #expect(log.all == ["task", "block", "task resumed"])
        #expect(queuedBeforeTheTaskRan.get == 2)  // its job and the block: the job was not queued again
        await worker.stop()
    }

    /// An actor pinned to the executor keeps its fast path: a call from one of its methods to
    /// another of its own needs no job of the loop.
    @Test func anActorsJobsRunIsolatedToTheLoop() async throws {
        let worker = EvWorkerThread(name: "executor-actor")
        let loop = try worker.start()
        let pinned = RolePinned(loop: loop)
        let start = loop.pendingBlocks.withLock { $0.nextSequence }
        #expect(await pinned.bumpTwice() == 2)
        #expect(loop.pendingBlocks.withLock { $0.nextSequence } - start == 1)
        await worker.stop()
    }
}

/// An actor pinned to a loop through its own executor.
private actor RolePinned {
    let executor: EvRunLoopExecutor
    private var count = 0
    init(loop: EvRunLoop) { executor = EvRunLoopExecutor(loop) }
    nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }

    func bump() async -> Int {
        executor.checkIsolated()
        count += 1
        return count
    }

    func bumpTwice() async -> Int {
        _ = await bump()
        return await bump()
    }
}
