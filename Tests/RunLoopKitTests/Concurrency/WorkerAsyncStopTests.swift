import Foundation
@testable import RunLoopKit
import Synchronization
import Testing
import TestSupport

/// `await EvWorkerThread.stop()`: stops a worker from async code without blocking
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

    /// Eight workers each hold their queue on a latch that only a task opens once all eight
    /// `await stop()` calls have reached their workers. Every task here runs on one thread — a
    /// worker's loop, through its executor — so a stop that blocked its thread would keep the
    /// opener from ever running again: every latch would time out. (On the shared cooperative pool, two cores wide, the opener
    /// could instead be starved by other tests blocking the pool's threads in a full-suite run.)
    /// An actor pinned to the worker's own loop stops it, or waits for another to: its method
    /// suspends while the loop ends and goes on once it is torn down (on the queue that stands
    /// in for the exited thread), as the documentation says.
    @Test(arguments: [false, true])
    func anActorOnTheWorkersOwnLoopMayAwaitItsStop(waitingForAnother: Bool) async throws {
        let worker = EvWorkerThread(name: "self-stop")
        let loop = try worker.start()
        let stopper = SelfStopper(loop)
        let stopped = Task { await stopper.stop(worker, waitingForAnother: waitingForAnother) }
        if waitingForAnother {
            // Stopped from here while the actor's job runs on the loop, about to wait.
            #expect(await yieldUntil { stopper.waits.load(ordering: .acquiring) })
            worker.stop(waitUntilExited: false)
        }
        #expect(await stopped.value == .stopped)
        // Torn down (R4): performing on the loop is refused as on any exited loop.
        #expect(throws: EvPerformError.loopExited) { try loop.perform(inModes: [.default], waitUntilDone: false) {} }
    }

    /// `waitUntilStopped()` between the end of the worker's run and its loop's teardown, at the
    /// thread's exit, waits for the teardown (here held in a source's cancel callout). Before,
    /// the worker had forgotten its loop by then, and the wait returned with the teardown to come.
    @Test func waitUntilStoppedWaitsForATeardownStillToCome() async throws {
        let worker = EvWorkerThread(name: "wait-teardown")
        let loop = try worker.start()
        let teardown = Latch()
        let log = EventLog<String>()
        try worker.submitAndWait {
            EvRunLoop.current.add(EvSource(cancel: { _, _ in
                teardown.wait()
                log.append("torn down")
            }) {}, forMode: .default)
        }
        worker.stop(waitUntilExited: false)
        #expect(await yieldUntil { worker.state == .stopped })  // the run is over; the teardown waits
        let hooksBefore = loop.exitHookCount
        let waiting = Task {
            await worker.waitUntilStopped()
            log.append("waited")
        }
        // The wait is under way once it waits on the loop's end, or over if it did not.
        #expect(await yieldUntil { loop.exitHookCount > hooksBefore || log.all.contains("waited") })
        teardown.open()
        await waiting.value
        #expect(log.all == ["torn down", "waited"])
    }

    @Test func asyncStopsDoNotBlockTheCooperativePool() async throws {
        let release = Latch()
        let timedOut = EventLog<Int>()
        let workers = (0..<8).map { EvWorkerThread(name: "async-stop-\($0)") }
        for (index, worker) in workers.enumerated() {
            try worker.start()
            try worker.execute { if !release.wait(timeout: 60) { timedOut.append(index) } }
        }
        let host = EvWorkerThread(name: "async-stop-host")
        let hostExecutor = EvRunLoopExecutor(try host.start())
        await withTaskExecutorPreference(hostExecutor) {
            await withTaskGroup(of: Void.self) { group in
                for worker in workers { group.addTask { await worker.stop() } }
                group.addTask {
                    hostExecutor.checkIsolated()  // the opener shares the stops' one thread
                    // Each stop reaches the worker after a hop through the queue: open only once
                    // every worker is stopping, so each stop really ran before the latches open.
                    while workers.contains(where: { $0.state == .running }) { await Task.yield() }
                    release.openForEach(count: workers.count)
                }
            }
        }
        await host.stop()
        #expect(timedOut.all.isEmpty)
        #expect(workers.allSatisfy { $0.state == .stopped })
    }
}

/// An actor pinned to a worker's loop that stops that worker.
private actor SelfStopper {
    let executor: EvRunLoopExecutor
    init(_ loop: EvRunLoop) { executor = EvRunLoopExecutor(loop) }
    nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }
    /// Set by the job on the loop that is about to wait.
    nonisolated let waits = Atomic<Bool>(false)

    /// Stops `worker`, or waits for another to, from a job on the worker's own loop; returns the
    /// worker's state once that returned.
    func stop(_ worker: EvWorkerThread, waitingForAnother: Bool) async -> EvWorkerThread.State {
        if waitingForAnother {
            waits.store(true, ordering: .releasing)
            await worker.waitUntilStopped()
        } else {
            await worker.stop()
        }
        return worker.state
    }
}

/// An object that reports its release.
private final class ReleaseProbe: Sendable {
    let released: @Sendable () -> Void
    init(_ released: @escaping @Sendable () -> Void) { self.released = released }
    deinit { released() }
}

@Suite struct WorkerAsyncStopTeardownTests {
    /// A stop that meets a start in progress waits for that start, and then for the teardown of
    /// the loop it made, like any stop of a running worker.
    @Test func asyncStopRacingStartReturnsOnlyOnceTheLoopIsTornDown() async throws {
        var returnedEarly = 0
        for _ in 0..<100 {
            let worker = EvWorkerThread(name: "stop-vs-start")
            let starting = Latch()
            let starter = spawnThread {
                starting.open()
                _ = try? worker.start()
            }
            starting.wait()
            await worker.stop()
            if worker.state != .stopped { returnedEarly += 1 }
            pthread_join(starter, nil)
            worker.stop(waitUntilExited: true)
        }
        #expect(returnedEarly == 0)
    }

    /// "Its items released": what the loop's sources and its dropped blocks hold is gone by the
    /// time the stop returns.
    @Test func asyncStopReturnsWithTheLoopsSourcesAndDroppedBlocksReleased() async throws {
        for _ in 0..<30 {
            let worker = EvWorkerThread(name: "stop-releases")
            let loop = try worker.start()
            let released = TestLocked<[String]>([])
            try worker.submitAndWait {
                let held = ReleaseProbe { released.withLock { $0.append("source") } }
                loop.add(EvSource { _ = held }, forMode: .default)
                let queued = ReleaseProbe { released.withLock { $0.append("block") } }
                loop.perform(inModes: [EvRunLoop.Mode("never-run")]) { _ = queued }
            }
            await worker.stop()
            #expect(released.withLock { $0.sorted() } == ["block", "source"])
        }
    }
}

private extension Latch {
    /// Opens the latch once for each of `count` waiters.
    func openForEach(count: Int) { for _ in 0..<count { open() } }
}
