import Foundation
import RunLoopKit
import Testing

/// Timers, R39–R47, on the real clock. No test asserts how soon a timer fires: only order,
/// counts and fire-date arithmetic.
@Suite struct TimerRuleTests {
    private static let tracking = EvRunLoop.Mode("rules-b.timers.tracking")
    private static let other = EvRunLoop.Mode("rules-b.timers.other")

    // MARK: R39

    @Test func R39_timerKeepsItsPropertiesAndIsOneTimerAcrossItsModes() {
        let outcome = onLoopThread { loop -> (fires: [Int], inBoth: Bool, moved: Bool) in
            let fireAt = ContinuousClock.now - .milliseconds(1)
            let fires = EventLog<Int>()
            // Due now; its next slot is an hour away, so only sharing the schedule explains one fire.
            let timer = EvTimer(fireAt: fireAt, interval: .seconds(3600), tolerance: .milliseconds(7), order: 5) { _ in
                fires.append(1)
            }
            loop.add(timer, forMode: Self.tracking)
            loop.add(timer, forMode: Self.other)
            let inBoth = loop.contains(timer, forMode: Self.tracking) && loop.contains(timer, forMode: Self.other)
            loop.run(mode: Self.tracking, timeout: .zero)
            let afterFirst = fires.count
            loop.run(mode: Self.other, timeout: .zero)
            return ([afterFirst, fires.count], inBoth, timer.fireDate == fireAt + .seconds(3600))
        }
        #expect(outcome.fires == [1, 1])
        #expect(outcome.inBoth)
        #expect(outcome.moved)

        let timer = EvTimer(fireAt: .now, interval: .milliseconds(30), tolerance: .milliseconds(7), order: 5) { _ in }
        #expect(timer.interval == .milliseconds(30))
        #expect(timer.tolerance == .milliseconds(7))
        #expect(timer.order == 5)
        #expect(timer.repeats)
        #expect(!EvTimer(after: .zero) { _ in }.repeats)
    }

    @Test func R39_addingATimerToASecondLoopStopsWithAMessage() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let timer = EvTimer(after: .seconds(3600)) { _ in }
            let (first, _) = startLoopThread { _ in Latch().wait() }
            first.add(timer, forMode: .default)
            let done = DispatchSemaphore(value: 0)
            let thread = Thread {
                EvRunLoop.current.add(timer, forMode: .default)  // a second loop: stops here
                done.signal()
            }
            thread.start()
            done.wait()
        }
        let message = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(message.contains("this EvTimer is already scheduled in another run loop"))
    }

    // MARK: R40

    @Test func R40_dueTimersFireInFireDateOrderInOneHandlingStep() {
        let log = onLoopThread { loop -> [String] in
            let log = EventLog<String>()
            loop.add(activityRecorderStrings(log), forMode: .default)
            let now = ContinuousClock.now
            for offset in [10, 30, 20, 40] {
                loop.add(EvTimer(fireAt: now - .milliseconds(offset)) { _ in log.append("-\(offset)ms") }, forMode: .default)
            }
            loop.add(keepAliveTimer(), forMode: .default)
            loop.run(mode: .default, timeout: .zero)
            return log.all
        }
        #expect(log == ["entry", "beforeTimers", "beforeSources", "-40ms", "-30ms", "-20ms", "-10ms", "exit"])
    }

    // MARK: R41, R42: VirtualClockTimerTests (missed intervals, on a virtual clock)

    // MARK: R43

    @Test func R43_oneShotTimerIsInvalidatedAfterItsCallout() {
        let outcome = onLoopThread { loop -> (validInCallout: [Bool], after: [Bool], results: [EvRunLoop.RunResult], otherLog: [String]) in
            let validInCallout = EventLog<Bool>()
            let timer = EvTimer(after: .zero) { timer in
                validInCallout.append(timer.isValid)
                if validInCallout.count > 1 { loop.stop() }  // safety net: it must not fire twice
            }
            loop.add(timer, forMode: .default)
            loop.add(timer, forMode: Self.other)
            let otherLog = EventLog<String>()
            loop.add(activityRecorderStrings(otherLog), forMode: Self.other)
            let first = loop.run(mode: .default, timeout: .seconds(30))
            let after = [timer.isValid, loop.contains(timer, forMode: .default), loop.contains(timer, forMode: Self.other)]
            let second = loop.run(mode: Self.other, timeout: .seconds(30))
            return (validInCallout.all, after, [first, second], otherLog.all)
        }
        #expect(outcome.validInCallout == [true])
        #expect(outcome.after == [false, false, false])
        #expect(outcome.results == [.finished, .finished])  // both modes are empty once it fired
        #expect(outcome.otherLog.isEmpty)
    }

    // MARK: R44

    // A later date set in the callout, to the nanosecond: VirtualClockTimerTests.

    /// C80 (where R44 used to let the grid win): a date set inside the callout always wins, even
    /// one before the date just fired; that date is due, so the timer fires again in the next
    /// timers step, an interval early.
    @Test func C80_anEarlierFireDateSetInTheCalloutWinsAndFiresAgainAtOnce() {
        let interval = Duration.seconds(3600)
        let fired = onLoopThread { loop -> [ContinuousClock.Instant] in
            let fired = EventLog<ContinuousClock.Instant>()
            let timer = EvTimer(fireAt: .now - .milliseconds(1), interval: interval) { timer in
                let date = timer.fireDate
                fired.append(date)
                if fired.count == 1 { timer.fireDate = date - .seconds(1) } else { loop.stop() }
            }
            loop.add(timer, forMode: .default)
            loop.run(mode: .default, timeout: .seconds(30))
            return fired.all
        }
        #expect(fired.count == 2)
        if fired.count == 2 { #expect(fired[1].duration(to: fired[0]) == .seconds(1)) }
    }

    /// R40, R44: a far-off timer re-dated to now from a source's callout fires in the same pass
    /// (the timers step after the source, with no BeforeWaiting between), although the passes
    /// before had learnt that nothing could be due for an hour and skip the step until then.
    @Test func R44_aTimerReDatedToNowInACalloutFiresInThatPass() {
        let outcome = onLoopThread { loop -> (result: EvRunLoop.RunResult, log: [String]) in
            let log = EventLog<String>()
            let timer = EvTimer(after: .seconds(3600)) { _ in
                log.append("timer")
                EvRunLoop.current.stop()
            }
            let source = EvSource {
                log.append("source")
                timer.fireDate = .now
            }
            loop.add(timer, forMode: .default)
            loop.add(source, forMode: .default)
            loop.add(EvObserver(activities: .beforeWaiting) { _, _ in log.append("beforeWaiting") }, forMode: .default)
            // Two passes that find no timer due, then the source: a perform wakes the loop for it.
            loop.perform(inModes: [.default]) {
                loop.perform(inModes: [.default]) { source.signal() }
                loop.wakeUp()
            }
            let result = loop.run(mode: .default, timeout: .seconds(10))
            return (result, log.all)
        }
        #expect(outcome.result == .stopped)
        #expect(outcome.log.suffix(2) == ["source", "timer"])
    }

    @Test func R44_fireDateSetFromAnotherThreadRearmsTheSleepingLoop() {
        let beforeWaiting = Latch()
        let outcome = onLoopThread { loop -> (result: EvRunLoop.RunResult, fires: Int, wakes: Int) in
            let fires = EventLog<Int>()
            let wakes = EventLog<Int>()
            let timer = EvTimer(after: .seconds(3600)) { _ in fires.append(1) }
            loop.add(timer, forMode: .default)
            loop.add(
                EvObserver(activities: [.beforeWaiting, .afterWaiting]) { _, activity in
                    if activity == .beforeWaiting { beforeWaiting.open() } else { wakes.append(1) }
                }, forMode: .default)
            let mover = Thread {
                guard waitUntilAsleep(loop, after: beforeWaiting) else { return }
                timer.fireDate = .now  // re-arms the wait (R44) and wakes the loop (C75): one pass
            }
            mover.start()
            // One-shot: the mode is empty once it fired. The timeout is only a safety net.
            let result = loop.run(mode: .default, timeout: .seconds(30))
            return (result, fires.count, wakes.count)
        }
        #expect(outcome.result == .finished)
        #expect(outcome.fires == 1)
        #expect(outcome.wakes == 1)
    }

    // MARK: R45

    @Test func R45_timerInvalidatedInItsOwnCalloutNeverFiresAgain() {
        let (result, fires, modes) = onLoopThread { loop -> (EvRunLoop.RunResult, Int, [Bool]) in
            let fires = EventLog<Int>()
            let timer = EvTimer(fireAt: .now - .milliseconds(5), interval: .milliseconds(1)) { timer in
                fires.append(1)
                if fires.count == 1 { timer.invalidate() } else { loop.stop() }  // stop: safety net
            }
            loop.add(timer, forMode: .default)
            loop.add(timer, forMode: Self.other)
            let result = loop.run(mode: .default, timeout: .seconds(30))
            return (result, fires.count, [loop.contains(timer, forMode: .default), loop.contains(timer, forMode: Self.other), timer.isValid])
        }
        #expect(result == .finished)
        #expect(fires == 1)
        #expect(modes == [false, false, false])
    }

    @Test func R45_timerInvalidatedFromAnotherThreadLeavesEveryModeAndNeverFires() {
        let (fires, modes) = onLoopThread { loop -> (Int, [Bool]) in
            let fires = EventLog<Int>()
            let timer = EvTimer(fireAt: .now - .milliseconds(5), interval: .milliseconds(1)) { _ in fires.append(1) }
            loop.add(timer, forMode: Self.tracking)
            loop.add(timer, forMode: Self.other)
            loop.add(keepAliveTimer(), forMode: Self.tracking)
            loop.add(keepAliveTimer(), forMode: Self.other)
            let done = Latch()
            Thread {
                timer.invalidate()
                done.open()
            }.start()
            done.wait()
            // Still due: had it stayed in either mode, this poll would fire it.
            loop.run(mode: Self.tracking, timeout: .zero)
            loop.run(mode: Self.other, timeout: .zero)
            return (fires.count, [loop.contains(timer, forMode: Self.tracking), loop.contains(timer, forMode: Self.other), timer.isValid])
        }
        #expect(fires == 0)
        #expect(modes == [false, false, false])
    }

    // MARK: R46

    // A tolerant timer never fires early: VirtualClockTimerTests; coalescing on the real clock:
    // ToleranceTests.

    // MARK: R47

    @Test func R47_hugeIntervalIsCappedAndNeverOverflows() {
        let timer0 = EvTimer(fireAt: .now, interval: .seconds(Int64.max)) { _ in }
        #expect(timer0.interval == EvTimer.intervalLimit)

        let outcome = onLoopThread { loop -> (result: EvRunLoop.RunResult, fires: Int, step: Duration?) in
            let fires = EventLog<ContinuousClock.Instant>()
            let timer = EvTimer(fireAt: .now - .milliseconds(1), interval: .seconds(Int64.max)) { timer in
                fires.append(timer.fireDate)
                loop.stop()
            }
            loop.add(timer, forMode: .default)
            let result = loop.run(mode: .default, timeout: .seconds(30))
            loop.run(mode: .default, timeout: .zero)  // not due again
            return (result, fires.count, fires.all.first.map { $0.duration(to: timer.fireDate) })
        }
        #expect(outcome.result == .stopped)
        #expect(outcome.fires == 1)
        #expect(outcome.step == EvTimer.intervalLimit)
    }
}

/// Logs each activity by name (`entry`, `beforeTimers`, …).
private func activityRecorderStrings(_ log: EventLog<String>) -> EvObserver {
    EvObserver(activities: .allActivities) { _, activity in log.append(activity.description) }
}

/// Waits until the loop's BeforeWaiting observer opened `beforeWaiting` and the loop is asleep.
private func waitUntilAsleep(_ loop: EvRunLoop, after beforeWaiting: Latch) -> Bool {
    guard beforeWaiting.wait() else { return false }
    let limit = ContinuousClock.now + .seconds(30)
    while !loop.isWaiting {
        if ContinuousClock.now > limit { return false }
        sched_yield()
    }
    return true
}
