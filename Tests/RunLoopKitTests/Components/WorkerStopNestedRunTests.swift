import Foundation
@testable import RunLoopKit
import Testing

/// A worker's stop ends a run that a work item or a job starts nested in the worker's loop, even
/// when the stop was made before that item started and its final block was taken out in the same
/// blocks step as the item, where a nested run cannot see it (C99).
///
/// A first item holds the queue while the nesting item (or job) and the stop are queued behind
/// it, so that the next step takes both. The nested run's timeout is a safety net: a stop that
/// does not end the run leaves it to time out.
@Suite struct WorkerStopNestedRunTests {
    @Test func aStopMadeBeforeAWorkItemRunsTheLoopNestedEndsThatRun() async throws {
        let (worker, loop, proceed) = try heldWorker("nest-after-stop")
        let nested = Box<EvRunLoop.RunResult?>(nil)
        try worker.execute { nested.set(EvRunLoop.current.run(mode: .default, timeout: .seconds(10))) }
        #expect(loop.pendingBlocks.withLock { $0.pendingCount } == 1)
        worker.stop(waitUntilExited: false)
        proceed.open()
        await worker.stop()
        #expect(nested.get == .stopped)
    }

    @Test func aStopMadeBeforeAJobRunsTheLoopNestedEndsThatRun() async throws {
        let (worker, loop, proceed) = try heldWorker("job-after-stop")
        let job = Task(executorPreference: EvRunLoopExecutor(loop)) {
            EvRunLoop.current.run(mode: .default, timeout: .seconds(10))
        }
        #expect(await yieldUntil { loop.pendingBlocks.withLock { $0.pendingCount } == 1 })
        worker.stop(waitUntilExited: false)
        proceed.open()
        #expect(await job.value == .stopped)
        await worker.stop()
    }
}

/// A started worker whose thread runs a work item that holds it until `proceed` opens.
private func heldWorker(_ name: String) throws -> (EvWorkerThread, EvRunLoop, proceed: Latch) {
    let worker = EvWorkerThread(name: name)
    let loop = try worker.start()
    let holding = Latch()
    let proceed = Latch()
    try worker.execute {
        holding.open()
        proceed.wait()
    }
    #expect(holding.wait())
    return (worker, loop, proceed)
}
