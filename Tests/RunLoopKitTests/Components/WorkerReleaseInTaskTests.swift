import Foundation
@testable import RunLoopKit
import Synchronization
import Testing
import TestSupport

/// Holds the only reference to a worker or a group until a task takes it and lets it go.
private final class LastReference<Object: Sendable>: Sendable {
    private let object: Mutex<Object?>
    init(_ object: Object) { self.object = Mutex(object) }
    func take() -> Object? { object.withLock { value in defer { value = nil }; return value } }
}

/// Dropping the last reference to a worker or a group in a task off the main thread does not
/// hold that task's thread: the worker's queued work may be waiting for that very thread.
///
/// Every task here runs on one thread, a host worker's loop, through its executor: a stand-in
/// for the cooperative pool, two threads wide on a two-core machine, that other tests keep busy.
/// The released worker's queued work waits for a latch that the task queued after the release
/// opens. A release that waited for the worker would hold the host's thread, so the opener could
/// never run: the work would give up when its safety-net timeout passed.
@Suite struct WorkerReleaseInTaskTests {
    @Test func droppingAWorkerInATaskDoesNotHoldTheThreadItsQueuedWorkWaitsFor() async throws {
        let worker = EvWorkerThread(name: "released")
        let loop = try worker.start()
        let opened = Latch()
        let ranInTime = Box<Bool?>(nil)
        try worker.execute { ranInTime.set(opened.wait(timeout: 5)) }
        let last = LastReference(worker)
        _ = consume worker
        try await onOneThread { group in
            group.addTask { _ = last.take() }
            group.addTask { opened.open() }
        }
        // The worker still runs its queue, then its loop is torn down (descriptors closed).
        await loop.untilTornDown()
        #expect(ranInTime.get == true)
    }

    @Test func droppingAGroupInATaskDoesNotHoldTheThreadItsQueuedWorkWaitsFor() async throws {
        let group = try EvLoopGroup(numberOfThreads: 2, name: "released")
        let loops = group.loops
        let opened = Latch()
        let ranInTime = Box<Bool?>(nil)
        try loops[1].execute { ranInTime.set(opened.wait(timeout: 5)) }
        let last = LastReference(group)
        _ = consume group
        try await onOneThread { tasks in
            tasks.addTask { _ = last.take() }
            tasks.addTask { opened.open() }
        }
        for loop in loops { await loop.untilTornDown() }
        #expect(ranInTime.get == true)
    }

    /// Outside a task the release still waits: the queued work has run when it returns.
    @Test func droppingAWorkerOutsideATaskStillWaitsForItsQueue() throws {
        let ran = Box(false)
        let loop = Box<EvRunLoop?>(nil)
        let thread = spawnThread {
            let worker = EvWorkerThread(name: "waited")
            loop.set(try? worker.start())
            try? worker.execute { ran.set(true) }
        }
        pthread_join(thread, nil)
        #expect(ran.get)
        #expect(loop.get?.threadHasExited == true)
    }

    /// The last reference dropped by a task on the worker's own loop, on its thread: the release
    /// cannot wait for that thread, which ends once the task's job has returned.
    @Test func droppingAWorkerInATaskOnItsOwnLoop() async throws {
        for _ in 0..<20 {
            let worker = EvWorkerThread(name: "own-release")
            let loop = try worker.start()
            let last = LastReference(worker)
            _ = consume worker
            let onItsThread = await Task(executorPreference: EvRunLoopExecutor(loop)) {
                _ = last.take()
                return loop.isCurrent
            }.value
            #expect(onItsThread)
            await loop.untilTornDown()
        }
    }

    @Test func droppingAGroupInATaskOnOneOfItsLoops() async throws {
        for _ in 0..<10 {
            let group = try EvLoopGroup(numberOfThreads: 2, name: "own-release")
            let loops = group.loops
            let last = LastReference(group)
            _ = consume group
            await Task(executorPreference: EvRunLoopExecutor(loops[1])) { _ = last.take() }.value
            for loop in loops { await loop.untilTornDown() }
        }
    }

    /// A task on the worker's loop awaits its stop, goes on on the queue that stands in for the
    /// exited thread, and drops the worker there.
    @Test func droppingAWorkerOnTheQueueThatStandsInForItsExitedThread() async throws {
        for _ in 0..<10 {
            let worker = EvWorkerThread(name: "stand-in-release")
            let loop = try worker.start()
            let last = LastReference(worker)
            _ = consume worker
            let onStandIn = await Task(executorPreference: EvRunLoopExecutor(loop)) {
                guard let worker = last.take() else { return false }
                await worker.stop()
                return EvRunLoopExecutor.isOnStandInQueue
            }.value
            #expect(onStandIn)
            #expect(loop.threadHasExited)
        }
    }

    /// Runs the tasks `body` adds, in the order it adds them, on one host worker's thread.
    private func onOneThread(_ body: @Sendable (inout TaskGroup<Void>) -> Void) async throws {
        let host = EvWorkerThread(name: "release-host")
        let hostExecutor = EvRunLoopExecutor(try host.start())
        await withTaskExecutorPreference(hostExecutor) {
            await withTaskGroup(of: Void.self) { group in body(&group) }
        }
        await host.stop()
    }
}
