import Foundation
@testable import RunLoopKit
import Testing
import TestSupport

/// The last reference to a worker or a group dropped inside a Swift task: the release does not
/// hold the task's thread while the queued work runs, yet that work runs and the threads are
/// joined.
@Suite struct ReleaseInTaskTests {
    @Test func aWorkerReleasedInsideATaskDoesNotWaitYetRunsItsQueueAndIsJoined() async throws {
        // Only the box holds the worker: each use below borrows it for one statement.
        let holder = Box<EvWorkerThread?>(EvWorkerThread(name: "released-task"))
        let loop = try #require(try holder.get?.start())
        let core = try #require(holder.get?.core)
        let gate = Latch()
        let log = EventLog<String>()
        try holder.get?.execute {
            gate.wait(timeout: 300)  // a safety net longer than any stall of the test pool
            log.append("held")
        }
        try holder.get?.execute { log.append("after") }
        let released = Box(false)
        let releasing = Task {
            _ = holder.update { value in defer { value = nil }; return value }  // the last reference
            released.set(true)
        }
        #expect(await yieldUntil(timeout: 60) { released.get }, "the release waited for the worker's queue")
        #expect(log.all.isEmpty)
        gate.open()
        await releasing.value
        await loop.untilTornDown()
        #expect(log.all == ["held", "after"])
        let thread = try #require(core.shared.withLock { $0.thread })
        #expect(await yieldUntil { thread.hasBeenJoined })
    }

    @Test func aGroupReleasedInsideATaskDoesNotWaitYetRunsItsQueuesAndIsJoined() async throws {
        // Only the box holds the group: each use below borrows it for one statement.
        let holder = Box<EvLoopGroup?>(try EvLoopGroup(numberOfThreads: 2, name: "released-task"))
        let loops = holder.get?.loops ?? []
        let threads = holder.get?.workers.compactMap { $0.core.shared.withLock { $0.thread } } ?? []
        let gate = Latch()
        let log = EventLog<Int>()
        for (index, loop) in loops.enumerated() {
            try loop.execute {
                gate.wait(timeout: 300)  // a safety net longer than any stall of the test pool
                log.append(index)
            }
        }
        let released = Box(false)
        let releasing = Task {
            _ = holder.update { value in defer { value = nil }; return value }  // the last reference
            released.set(true)
        }
        #expect(await yieldUntil(timeout: 60) { released.get }, "the release waited for the group's queues")
        #expect(log.all.isEmpty)
        gate.open()
        gate.open()
        await releasing.value
        for loop in loops { await loop.untilTornDown() }
        #expect(log.all.sorted() == [0, 1])
        #expect(threads.count == 2)
        #expect(await yieldUntil { threads.allSatisfy(\.hasBeenJoined) })
    }
}
