import Foundation
import RunLoopKit
import Synchronization
import Testing
import TestSupport

extension StressTests {
    /// Stops and wake-ups from other threads race the sleep of runs and of runs nested in them:
    /// each stop made while the loop sleeps in a run ends exactly one run (R27, R29, R30).
    @Test func stopsAndWakeUpsRacingTheSleepAreNeverLost() {
        let watchdog = Watchdog("stopsAndWakeUpsRacingTheSleepAreNeverLost")
        let nested = EvRunLoop.Mode("stress.stop.nested")
        let stoppedRuns = Atomic<Int>(0)
        let wakes = Atomic<Int>(0)
        let finish = Atomic<Bool>(false)
        let loopHeart = watchdog.heart("loop thread")
        let loopThread = LoopThread(named: "stress-stoploop") { loop in
            loop.add(EvTimer(after: .seconds(3600)) { _ in }, forMode: .default)
            loop.add(EvTimer(after: .seconds(3600)) { _ in }, forMode: nested)
            // Every fourth sleep first sleeps in a nested run, which only a stop ends.
            let sleeps = Atomic<Int>(0)
            let nester = EvObserver(activities: .beforeWaiting) { _, _ in
                guard sleeps.add(1, ordering: .relaxed).newValue % 4 == 0 else { return }
                if EvRunLoop.current.run(mode: nested) == .stopped { stoppedRuns.add(1, ordering: .releasing) }
            }
            loop.add(nester, forMode: .default)
            // In either run: beats before each sleep, and counts the sleeps that ended, so the
            // stopper knows whether its stop came first.
            let sleepWatcher = EvObserver(activities: [.beforeWaiting, .afterWaiting]) { _, activity in
                if activity == .beforeWaiting { loopHeart.beat() } else { wakes.add(1, ordering: .releasing) }
            }
            loop.add(sleepWatcher, forMode: .default)
            loop.add(sleepWatcher, forMode: nested)
            while !finish.load(ordering: .acquiring) {
                if loop.run(mode: .default) == .stopped { stoppedRuns.add(1, ordering: .releasing) }
            }
            loopHeart.stop()
        }
        let loop = loopThread.loop
        let deadline = StressDuration.deadline()
        let wakersDone = Atomic<Bool>(false)
        var wakers: [pthread_t] = []
        for index in 0..<2 {
            let heart = watchdog.heart("waker \(index)")
            wakers.append(spawnThread(named: "stress-wake") {
                while !wakersDone.load(ordering: .acquiring) {
                    loop.wakeUp()
                    heart.beat()
                    sched_yield()
                }
                heart.stop()
            })
        }

        watchdog.enter("stopping sleeping runs")
        let stopperHeart = watchdog.heart("stopper")
        var issued = 0
        var madeDuringASleep = 0
        var lost = 0
        while ContinuousClock.now < deadline && lost == 0 {
            // The count of ended sleeps read just before the loop is seen asleep.
            var wakesBefore = 0
            guard waitUntil(stopperHeart, {
                wakesBefore = wakes.load(ordering: .acquiring)
                return loop.isWaiting
            }) else {
                lost += 1
                break
            }
            let before = stoppedRuns.load(ordering: .acquiring)
            loop.stop()
            issued += 1
            let wakesAfter = wakes.load(ordering: .acquiring)
            if wakesAfter == wakesBefore {
                // No sleep ended between seeing the loop asleep and the stop: it was made during
                // that sleep, so the run that slept must end.
                madeDuringASleep += 1
                if !waitUntil(stopperHeart, { stoppedRuns.load(ordering: .acquiring) > before }) { lost += 1 }
            } else {
                // The loop had woken already: the stop may have marked a run whose next
                // BeforeWaiting nests a run, which only a later stop ends (R27). Wait for the
                // run to end or the loop to sleep again, and stop again.
                _ = waitUntil(stopperHeart) {
                    stoppedRuns.load(ordering: .acquiring) > before
                        || (wakes.load(ordering: .acquiring) != wakesAfter && loop.isWaiting)
                }
            }
        }
        wakersDone.store(true, ordering: .releasing)
        for waker in wakers { pthread_join(waker, nil) }

        watchdog.enter("ending the loop thread")
        finish.store(true, ordering: .releasing)
        let exited = Atomic<Bool>(false)
        let joiner = spawnThread(named: "stress-join") {
            loopThread.join()
            exited.store(true, ordering: .releasing)
        }
        // A stop between two runs does nothing (R28): stop until the thread is out.
        let ended = waitUntil(stopperHeart) {
            loop.stop()
            return exited.load(ordering: .acquiring)
        }
        pthread_join(joiner, nil)
        stopperHeart.stop()
        watchdog.finish()

        #expect(lost == 0, "a stop made while the loop slept did not end a run (\(madeDuringASleep) of \(issued) stops made during a sleep)")
        #expect(madeDuringASleep > 0)
        #expect(ended)
    }

    /// A loop's thread exits while other threads keep signalling, waking, stopping, performing
    /// on it and adding, removing and invalidating its items: nothing crashes, every source's
    /// schedule callouts are matched by cancel callouts (teardown cancels what was left, a dead
    /// loop schedules nothing, R4, R36), and no block runs twice.
    @Test func aLoopTornDownWhileOtherThreadsStillUseItsItems() {
        let watchdog = Watchdog("aLoopTornDownWhileOtherThreadsStillUseItsItems")
        let deadline = StressDuration.deadline()
        let membership = Membership()
        let blocks = Tally(count: 1_000_000)
        let blocksSent = Atomic<Int>(0)
        let mainHeart = watchdog.heart("rounds")
        var rounds = 0
        watchdog.enter("rounds")
        while ContinuousClock.now < deadline {
            rounds += 1
            let other = EvRunLoop.Mode("stress.teardown.other")
            let sources = (0..<4).map { membership.source(order: $0) }
            let timers = (0..<4).map { _ in EvTimer(after: .milliseconds(1), interval: .milliseconds(1)) { _ in } }
            let observer = EvObserver(activities: .allActivities) { _, _ in }
            let loopThread = LoopThread(named: "stress-dying") { loop in
                loop.addCommonMode(other)
                for (index, source) in sources.enumerated() { loop.add(source, forMode: index % 2 == 0 ? .common : .default) }
                for timer in timers { loop.add(timer, forMode: .common) }
                loop.add(observer, forMode: .default)
                for _ in 0..<5 { loop.run(mode: .default, timeout: .milliseconds(1)) }
            }
            let loop = loopThread.loop
            let workersStop = Atomic<Bool>(false)
            let dead = Atomic<Bool>(false)
            let usesAfterDeath = Atomic<Int>(0)
            var workers: [pthread_t] = []
            for index in 0..<3 {
                let seed = UInt64(rounds * 7 + index)
                workers.append(spawnThread(named: "stress-user") {
                    var random = SplitMix64(seed: seed)
                    while !workersStop.load(ordering: .acquiring) {
                        if dead.load(ordering: .acquiring) { usesAfterDeath.add(1, ordering: .relaxed) }
                        let source = sources.randomElement(using: &random)!
                        let mode: EvRunLoop.Mode = [.default, .common, other].randomElement(using: &random)!
                        switch Int.random(in: 0..<9, using: &random) {
                        case 0: source.signal()
                        case 1: loop.wakeUp()
                        case 2: loop.stop()
                        case 3:
                            let id = blocksSent.add(1, ordering: .relaxed).oldValue
                            if id < 1_000_000 { loop.perform(inModes: [mode]) { blocks.record(id) } }
                        case 4: loop.add(source, forMode: mode)
                        case 5: loop.remove(source, forMode: mode)
                        case 6: if Int.random(in: 0..<20, using: &random) == 0 { source.invalidate() }
                        case 7: timers.randomElement(using: &random)!.fireDate = .now
                        default: loop.add(membership.source(), forMode: mode)
                        }
                    }
                })
            }
            // The workers go on after the thread exited, against the dead loop.
            loopThread.join()
            dead.store(true, ordering: .releasing)
            _ = waitUntil(mainHeart) { usesAfterDeath.load(ordering: .relaxed) >= 300 }
            workersStop.store(true, ordering: .releasing)
            for worker in workers { pthread_join(worker, nil) }
            mainHeart.beat()
        }
        mainHeart.stop()
        watchdog.finish()

        #expect(rounds > 0)
        #expect(membership.balance.load(ordering: .relaxed) == 0, "schedule and cancel callouts do not balance over \(rounds) loops")
        let sent = min(blocksSent.load(ordering: .relaxed), 1_000_000)
        #expect(blocks.ranMoreThanOnce(below: sent).isEmpty, "a block ran twice")
    }
}
