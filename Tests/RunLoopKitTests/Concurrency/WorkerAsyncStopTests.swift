import Foundation
import RunLoopKit
import Testing

/// `await EvWorkerThread.stop()` (issue 12 §4): stops a worker from async code without blocking
/// a thread of the cooperative pool.
@Suite struct WorkerAsyncStopTests {
    @Test func asyncStopRunsTheQueuedWorkThenReturnsWithTheLoopTornDown() async throws {
        let worker = EvWorkerThread(name: "async-stop")
        try worker.start()
        let loop = try worker.submitAndWait { EvRunLoop.current }
        let log = EventLog<Int>()
        for index in 0..<10 { try worker.execute { log.append(index) } }
        await worker.stop()
        #expect(log.all == Array(0..<10))
        #expect(worker.state == .stopped)
        // Torn down (R4): performing on the loop is refused as on any exited loop.
        #expect(throws: EvPerformError.loopExited) { try loop.perform(inModes: [.default], waitUntilDone: false) {} }
        await worker.stop()  // twice: returns at once
        await EvWorkerThread().stop()  // never started: returns at once
    }

    /// Eight workers each hold their queue on a latch that only a task started after their eight
    /// `await stop()` calls opens. A stop that blocked its thread would take the whole cooperative
    /// pool (one thread per core) and the opener would never run: every latch would time out.
    @Test func asyncStopsDoNotBlockTheCooperativePool() async throws {
        let release = Latch()
        let timedOut = EventLog<Int>()
        let workers = (0..<8).map { EvWorkerThread(name: "async-stop-\($0)") }
        for (index, worker) in workers.enumerated() {
            try worker.start()
            try worker.execute { if !release.wait(timeout: 60) { timedOut.append(index) } }
        }
        await withTaskGroup(of: Void.self) { group in
            for worker in workers { group.addTask { await worker.stop() } }
            group.addTask { release.openForEach(count: workers.count) }
        }
        #expect(timedOut.all.isEmpty)
        #expect(workers.allSatisfy { $0.state == .stopped })
    }
}

private extension Latch {
    /// Opens the latch once for each of `count` waiters.
    func openForEach(count: Int) { for _ in 0..<count { open() } }
}
