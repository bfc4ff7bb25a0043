import Foundation
import RunLoopKit
import Testing

/// An actor whose jobs run on a run loop's thread.
private actor LoopPinnedCounter {
    let executor: EvRunLoopExecutor
    private var count = 0

    init(loop: EvRunLoop) { executor = EvRunLoopExecutor(loop) }
    nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }

    func increment() -> (count: Int, thread: pthread_t) {
        count += 1
        return (count, pthread_self())
    }
}

private struct Failure: Error, Equatable { let code: Int }

@Suite struct ConcurrencyTests {
    /// A thread running its loop (kept alive by an empty port) until `stop()`; returns the loop,
    /// the thread's id and a latch that opens when the thread's run returned.
    private func runningLoop() -> (loop: EvRunLoop, thread: pthread_t, finished: Latch) {
        let threadID = Box<pthread_t?>(nil)
        let (loop, finished) = startLoopThread { loop in
            threadID.set(pthread_self())
            loop.add(EvMessagePort<Int> { _ in }, forMode: .default)
            loop.run()
        }
        while threadID.get == nil { sched_yield() }
        return (loop, threadID.get!, finished)
    }

    @Test func actorPinnedToALoopRunsOnThatLoopsThread() async {
        let (loop, thread, finished) = runningLoop()
        let counter = LoopPinnedCounter(loop: loop)
        var counts: [Int] = []
        for _ in 0..<100 {
            let (count, ranOn) = await counter.increment()
            counts.append(count)
            #expect(pthread_equal(ranOn, thread) != 0)
        }
        #expect(counts == Array(1...100))
        loop.stop()
        #expect(finished.wait())
    }

    @Test func submitReturnsTheValueOrRethrowsTheError() async throws {
        let (loop, thread, finished) = runningLoop()
        let ranOn = try await loop.submit { pthread_self() }
        #expect(pthread_equal(ranOn, thread) != 0)
        await #expect(throws: Failure(code: 7)) {
            try await loop.submit { () throws(Failure) -> Int in throw Failure(code: 7) }
        }
        loop.stop()
        #expect(finished.wait())
    }

    @Test func ticksArriveInOrderAndStopWhenIterationEnds() async {
        let (loop, _, finished) = runningLoop()
        var ticks: [ContinuousClock.Instant] = []
        for await tick in loop.ticks(every: .milliseconds(2)) {
            ticks.append(tick)
            if ticks.count == 5 { break }
        }
        #expect(ticks.count == 5)
        #expect(zip(ticks, ticks.dropFirst()).allSatisfy { $0 < $1 })
        loop.stop()
        #expect(finished.wait())
    }

    @Test func waitUntilStoppedResumesAfterStop() async {
        // The loop's thread keeps running the loop until the waiter has returned, so only a
        // stopped run — never the thread's exit — can resume it.
        let resumed = Box(false)
        let (loop, finished) = startLoopThread { loop in
            loop.add(EvMessagePort<Int> { _ in }, forMode: .default)
            while !resumed.get { loop.run() }
        }
        let stopper = Thread { while !resumed.get { loop.stop(); sched_yield() } }
        stopper.start()
        await loop.waitUntilStopped()
        resumed.set(true)
        // A stop that lands between two runs does nothing (R28): stop until the thread is out.
        var exited = false
        for _ in 0..<3_000 where !exited {
            loop.stop()
            exited = finished.wait(timeout: 0.01)
        }
        #expect(exited)
    }

    @Test func waitUntilStoppedReturnsAtOnceForADeadLoop() async {
        let loop = onLoopThread { $0 }
        await loop.waitUntilStopped()
    }
}
