import Foundation
@testable import RunLoopKit
import Testing
import TestSupport

/// `waitUntilStopped()` of a loop, a worker and a group returns when its task is cancelled, and
/// leaves nothing waiting behind; the async `stop()`s still wait for the teardown when cancelled.
@Suite struct StopWaitCancellationTests {
    /// A loop thread that runs its default mode until a block stops it. A run's timeout alone
    /// would not do: a wait these tests start may first get a thread of the shared pool after it.
    private func runningLoop() -> (loop: EvRunLoop, finished: Latch) {
        startLoopThread { loop in
            loop.add(keepAliveTimer(), forMode: .default)
            while loop.run(mode: .default, timeout: .seconds(60)) == .timedOut {}
        }
    }

    private func stop(_ loop: EvRunLoop) {
        try? loop.execute(inModes: [.default]) { loop.stop() }
    }

    private func stopWaiterCount(_ loop: EvRunLoop) -> Int {
        loop.state.withLock { $0.waiters?.stopWaiters.count ?? 0 }
    }

    @Test func aCancelledWaitUntilStoppedReturnsAndTheLoopForgetsIt() async {
        let (loop, finished) = runningLoop()
        let returned = Box(false)
        let waiting = Task {
            await loop.waitUntilStopped()
            returned.set(true)
            return Task.isCancelled
        }
        #expect(await yieldUntil { stopWaiterCount(loop) == 1 })
        waiting.cancel()
        #expect(await yieldUntil(timeout: 120) { returned.get }, "a cancelled wait stays suspended until the loop stops")
        #expect(stopWaiterCount(loop) == 0)
        stop(loop)
        #expect(await waiting.value)
        #expect(finished.wait())
    }

    @Test func aStopStillEndsTheWaitsThatWereNotCancelled() async {
        let (loop, finished) = runningLoop()
        let cancelled = Task { await loop.waitUntilStopped() }
        let kept = Task {
            await loop.waitUntilStopped()
            return Task.isCancelled
        }
        #expect(await yieldUntil { stopWaiterCount(loop) == 2 })
        cancelled.cancel()
        #expect(await yieldUntil(timeout: 120) { stopWaiterCount(loop) == 1 })
        stop(loop)
        #expect(await kept.value == false)
        await cancelled.value
        #expect(finished.wait())
    }

    @Test func aTaskCancelledBeforeItWaitsReturnsAtOnce() async {
        let (loop, finished) = runningLoop()
        let returned = Box(false)
        let waiting = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            await loop.waitUntilStopped()
            returned.set(true)
        }
        #expect(await yieldUntil(timeout: 120) { returned.get }, "a cancelled task waited for the loop's stop")
        #expect(stopWaiterCount(loop) == 0)
        stop(loop)
        await waiting.value
        #expect(finished.wait())
    }

    @Test func aCancelledWaitForAWorkerReturnsAndLeavesTheWorkerRunning() async throws {
        let worker = EvWorkerThread(name: "cancel-wait")
        let loop = try worker.start()
        let returned = Box(false)
        let waiting = Task {
            await worker.waitUntilStopped()
            returned.set(true)
        }
        #expect(await yieldUntil { loop.exitHookCount == 1 })
        waiting.cancel()
        #expect(await yieldUntil(timeout: 120) { returned.get }, "a cancelled wait stays suspended until the worker stops")
        #expect(loop.exitHookCount == 0)
        #expect(worker.state == .running)
        #expect(try worker.submitAndWait { 1 } == 1)
        await worker.stop()
        await waiting.value
    }

    @Test func aCancelledWaitForAGroupReturnsAndLeavesEveryLoopRunning() async throws {
        let group = try EvLoopGroup(numberOfThreads: 2, name: "cancel-wait")
        let returned = Box(false)
        let waiting = Task {
            await group.waitUntilStopped()
            returned.set(true)
        }
        #expect(await yieldUntil { group.loops[0].exitHookCount == 1 })
        waiting.cancel()
        #expect(await yieldUntil(timeout: 120) { returned.get }, "a cancelled wait stays suspended until the group stops")
        #expect(group.loops.allSatisfy { $0.exitHookCount == 0 })
        #expect(try await group.loops[1].submit { 2 } == 2)
        await group.stop()
        await waiting.value
    }

    /// A stop has work to finish: cancelled, it still returns only once the loops are torn down.
    @Test func theAsyncStopsAreNotCutShortByCancellation() async throws {
        let worker = EvWorkerThread(name: "cancel-stop")
        let workerLoop = try worker.start()
        let group = try EvLoopGroup(numberOfThreads: 2, name: "cancel-stop")
        let stopping = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            await worker.stop()
            let workerTornDown = workerLoop.threadHasExited && workerLoop.exitHookCount == 0
            await group.stop()
            return (workerTornDown, group.loops.allSatisfy(\.threadHasExited))
        }
        let (workerTornDown, groupTornDown) = await stopping.value
        #expect(workerTornDown)
        #expect(groupTornDown)
    }
}
