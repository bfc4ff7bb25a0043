import Foundation
@testable import RunLoopKit
import Synchronization
import Testing

/// Jobs in flight while their loop ends: each runs once, one at a time, on the loop's thread or
/// (once it has exited) on the queue that stands in for it; none is lost.
@Suite struct StopUnderLoadTests {
    @Test func callsOnAnActorWhileItsWorkerStopsAllReturnOneAtATime() async throws {
        for _ in 0..<20 {
            let worker = EvWorkerThread(name: "stop-under-load")
            let counter = LoopCounter(try worker.start())
            await withTaskGroup(of: Void.self) { tasks in
                for _ in 0..<16 {
                    tasks.addTask { for _ in 0..<20 { await counter.bump() } }
                }
                tasks.addTask { await worker.stop() }
            }
            #expect(await counter.count == 16 * 20)
            #expect(counter.overlaps.load(ordering: .relaxed) == 0)
        }
    }

    /// Tasks hop between actors pinned to a group's two loops while the group stops: every call
    /// still runs once, one at a time, on the loop or, once it has exited, on the stand-in queue.
    @Test func hopsBetweenAGroupsLoopsWhileTheGroupStopsAllReturn() async throws {
        for _ in 0..<10 {
            let group = try EvLoopGroup(numberOfThreads: 2, name: "hop-stop")
            let first = LoopCounter(group.loops[0])
            let second = LoopCounter(group.loops[1])
            await withTaskGroup(of: Void.self) { tasks in
                for index in 0..<16 {
                    tasks.addTask {
                        let (mine, other) = index.isMultiple(of: 2) ? (first, second) : (second, first)
                        for _ in 0..<10 { await mine.bumpAround(other) }
                    }
                }
                tasks.addTask { await group.stop() }
            }
            #expect(await first.count == 8 * 10 * 3)
            #expect(await second.count == 8 * 10 * 3)
            #expect(first.overlaps.load(ordering: .relaxed) + second.overlaps.load(ordering: .relaxed) == 0)
        }
    }

    /// A plain thread's loop exits with nine tasks' jobs still queued (its loop ran only a private
    /// mode, where jobs do not run), eight of them calls to an actor of that loop: they run on
    /// the stand-in queue, the actor's one at a time.
    @Test func jobsStillQueuedWhenAPlainLoopsThreadExitsRunOnTheStandInQueue() async throws {
        for _ in 0..<20 {
            let exit = Latch()
            let (loop, finished) = startLoopThread { loop in
                loop.add(EvMessagePort<Int> { _ in }, forMode: EvRunLoop.Mode("private"))
                exit.wait()
                _ = loop.run(mode: EvRunLoop.Mode("private"), timeout: .zero)
            }
            let counter = LoopCounter(loop)
            // Each task's first job goes to the loop's executor at once, whatever the cooperative
            // pool is doing (from the pool, the actor's calls could reach the loop as one job or
            // several, or only after the thread exited).
            let calls = (0..<8).map { _ in Task(executorPreference: EvRunLoopExecutor(loop)) { await counter.bump() } }
            let preferring = Task(executorPreference: EvRunLoopExecutor(loop)) { EvRunLoopExecutor.isOnStandInQueue }
            #expect(await yieldUntil { loop.pendingBlocks.withLock { $0.pendingCount } == 9 })
            exit.open()
            #expect(finished.wait())
            for call in calls { #expect(await call.value == false) }
            #expect(await preferring.value)
            #expect(await counter.count == 8)
            #expect(counter.overlaps.load(ordering: .relaxed) == 0)
        }
    }

    /// A job stops its worker and then runs the loop nested, with jobs of its own queued: the
    /// stop ends the nested run, and the jobs it held back still run once.
    @Test func jobsHeldBackByANestedRunThatTheStopEndsStillRunOnce() async throws {
        for _ in 0..<10 {
            let worker = EvWorkerThread(name: "nest-stop")
            let loop = try worker.start()
            let counter = LoopCounter(loop)
            let nesting = Task(executorPreference: EvRunLoopExecutor(loop)) {
                let held = (0..<4).map { _ in Task { await counter.bump() } }
                worker.stop(waitUntilExited: false)
                // Ended by the stop's final block; the timeout is a safety net.
                let result = EvRunLoop.current.run(mode: .default, timeout: .seconds(30))
                return (held, result)
            }
            let (held, result) = await nesting.value
            #expect(result == .stopped)
            for call in held { _ = await call.value }
            #expect(await counter.count == 4)
            await worker.stop()
        }
    }
}
