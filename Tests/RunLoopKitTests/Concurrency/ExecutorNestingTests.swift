import Foundation
@testable import RunLoopKit
import Testing

/// An actor whose method runs its loop nested, with a job of its own queued meanwhile.
private actor LoopPinnedNester {
    let executor: EvRunLoopExecutor
    private var isInsideNestedRun = false
    private(set) var probesSawInside: [Bool] = []

    init(loop: EvRunLoop) { executor = EvRunLoopExecutor(loop) }
    nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }

    /// Queues a job of this actor, then runs the loop nested (three passes and a timed wait);
    /// the job must not start until this method has returned.
    /// Returns the job, and whether a plain block queued meanwhile ran in the nested run.
    func runNested() -> (probe: Task<Void, Never>, blockRan: Bool) {
        isInsideNestedRun = true
        let probe = Task { self.probe() }
        let loop = EvRunLoop.current
        let blockRan = Box(false)
        loop.perform { blockRan.set(true) }
        for _ in 0..<3 { _ = loop.run(mode: .default, timeout: .zero) }
        _ = loop.run(mode: .default, timeout: .milliseconds(20))
        isInsideNestedRun = false
        return (probe, blockRan.get)
    }

    private func probe() { probesSawInside.append(isInsideNestedRun) }
}

/// A run nested in an executor's job runs no other job of the loop's executors (a serial
/// executor runs one job at a time); the jobs it held back run when the job returns.
@Suite struct ExecutorNestingTests {
    @Test func aRunNestedInAnActorsMethodRunsNoOtherJobOfTheExecutor() async {
        let (loop, finished) = startLoopThread { loop in
            loop.add(EvMessagePort<Int> { _ in }, forMode: .default)
            loop.run()
        }
        let nester = LoopPinnedNester(loop: loop)
        let (probe, blockRan) = await nester.runNested()
        await probe.value
        #expect(await nester.probesSawInside == [false])
        #expect(blockRan)  // plain blocks still run in the nested run
        loop.stop()
        #expect(finished.wait())
    }

    /// The job runs in the first blocks step of the loop's first iteration, before its wait: the
    /// wake-up of the job it queues is accepted then, and taken by the nested run's polls. The
    /// job held back still runs when the method returns, with no other wake-up (it waited for
    /// the run's 30 s timeout).
    @Test func jobsHeldBackByANestedRunRunWhenTheJobReturns() async {
        let queued = Latch()
        let result = Box<EvRunLoop.RunResult?>(nil)
        let (loop, finished) = startLoopThread { loop in
            loop.add(EvMessagePort<Int> { _ in }, forMode: .default)
            #expect(queued.wait(timeout: 300))
            result.set(loop.run(mode: .default, timeout: .seconds(30)))
        }
        let nester = LoopPinnedNester(loop: loop)
        // The call starts on a worker's loop, not on the cooperative pool, which other tests'
        // blocking waits can fill (two threads wide here).
        let caller = EvWorkerThread(name: "nesting-caller")
        let call = Task(executorPreference: EvRunLoopExecutor(try! caller.start())) { await nester.runNested().probe }
        while loop.pendingBlocks.withLock({ $0.isEmpty }) { await Task.yield() }  // the method's job is queued
        queued.open()
        let probe = await call.value
        await probe.value
        #expect(await nester.probesSawInside == [false])
        loop.stop()
        #expect(finished.wait())
        #expect(result.get == .stopped)
        await caller.stop()
    }
}
