import Foundation
import RunLoopKit
import Synchronization
import Testing
import TestSupport

extension StressTests {
    /// Threads add one-shot timers to a running, nesting loop and invalidate some of them at
    /// once; others invalidate repeating timers while they fire. Every timer left alone fires
    /// exactly once (R40, R43); an invalidated one at most once; a repeating timer fires at most
    /// once more after `invalidate()` returned — the callout already under way (R45).
    @Test func timersFromManyThreadsFireExactlyAsAsked() {
        let watchdog = Watchdog("timersFromManyThreadsFireExactlyAsAsked")
        let nested = EvRunLoop.Mode("stress.timers.nested")
        let capacity = 1_000_000
        let fires = Tally(count: capacity)
        let created = Atomic<Int>(0)
        let invalidated = TestLocked<Set<Int>>([])
        let finish = Atomic<Bool>(false)
        let loopHeart = watchdog.heart("loop thread")
        let loopThread = LoopThread(named: "stress-timers") { loop in
            loop.addCommonMode(nested)
            loop.add(EvTimer(after: .seconds(3600)) { _ in }, forMode: .common)
            let sleeps = Atomic<Int>(0)
            let nester = EvObserver(activities: [.beforeTimers, .beforeWaiting]) { _, activity in
                loopHeart.beat()
                guard activity == .beforeWaiting, sleeps.add(1, ordering: .relaxed).newValue % 5 == 0 else { return }
                EvRunLoop.current.run(mode: nested, timeout: .milliseconds(1))
            }
            loop.add(nester, forMode: .default)
            while !finish.load(ordering: .acquiring) { loop.run(mode: .default, timeout: .milliseconds(20)) }
            loopHeart.stop()
        }
        let loop = loopThread.loop
        let deadline = StressDuration.deadline()
        var threads: [pthread_t] = []

        watchdog.enter("adding timers")
        for index in 0..<3 {
            let heart = watchdog.heart("adder \(index)")
            threads.append(spawnThread(named: "stress-addtimer") {
                var random = SplitMix64(seed: UInt64(index + 11))
                while ContinuousClock.now < deadline {
                    let id = created.add(1, ordering: .relaxed).oldValue
                    guard id < capacity else { break }
                    let timer = EvTimer(after: .microseconds(Int.random(in: 0..<2000, using: &random))) { _ in fires.record(id) }
                    loop.add(timer, forMode: Bool.random(using: &random) ? .common : nested)
                    if Int.random(in: 0..<4, using: &random) == 0 {
                        invalidated.withLock { _ = $0.insert(id) }
                        timer.invalidate()
                    }
                    if Int.random(in: 0..<8, using: &random) == 0 { loop.wakeUp() }
                    heart.beat()
                    sched_yield()
                }
                heart.stop()
            })
        }
        let repeaterHeart = watchdog.heart("repeating timers")
        let lateFires = Atomic<Int>(0)
        threads.append(spawnThread(named: "stress-repeat") {
            var random = SplitMix64(seed: 5)
            while ContinuousClock.now < deadline {
                let count = Atomic<Int>(0)
                let fired = DispatchSemaphore(value: 0)
                let timer = EvTimer(after: .zero, interval: .microseconds(200)) { _ in
                    count.add(1, ordering: .relaxed)
                    fired.signal()
                }
                loop.add(timer, forMode: .common)
                loop.wakeUp()
                for _ in 0..<Int.random(in: 1...3, using: &random) {
                    while fired.wait(timeout: .now() + .milliseconds(100)) == .timedOut { repeaterHeart.beat() }
                }
                timer.invalidate()
                let atInvalidation = count.load(ordering: .relaxed)
                // Give the loop the chance to misbehave: let it run through a few iterations.
                let wokeAt = ContinuousClock.now
                while wokeAt.duration(to: .now) < .milliseconds(2) { loop.wakeUp(); sched_yield() }
                lateFires.add(max(0, count.load(ordering: .relaxed) - atInvalidation - 1), ordering: .relaxed)
                repeaterHeart.beat()
            }
            repeaterHeart.stop()
        })
        for thread in threads { pthread_join(thread, nil) }

        watchdog.enter("waiting for the timers left alone")
        let drainHeart = watchdog.heart("drain")
        let total = min(created.load(ordering: .relaxed), capacity)
        let cancelled = invalidated.withLock { $0 }
        let leftAlone = (0..<total).filter { !cancelled.contains($0) }
        var waitingFor = leftAlone[...]
        let drained = waitUntil(drainHeart) {
            loop.wakeUp()
            while let first = waitingFor.first, fires.count(of: first) > 0 { waitingFor = waitingFor.dropFirst() }
            return waitingFor.isEmpty
        }
        drainHeart.stop()
        finish.store(true, ordering: .releasing)
        loop.wakeUp()
        loopThread.join()
        watchdog.finish()

        let wrong = leftAlone.filter { fires.count(of: $0) != 1 }
        #expect(drained && wrong.isEmpty, "timers left alone that did not fire exactly once (of \(leftAlone.count)): \(wrong.prefix(10).map { "\($0) fired \(fires.count(of: $0))×" })")
        #expect(fires.ranMoreThanOnce(below: total).isEmpty, "a one-shot timer fired twice")
        #expect(lateFires.load(ordering: .relaxed) == 0, "a repeating timer fired after invalidate() returned and its callout ended")
        #expect(total > 0)
    }
}
