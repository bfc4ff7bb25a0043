import Foundation
@testable import RunLoopKit
import Testing
import TestSupport

/// The timer rules on a virtual clock (``VirtualWaiter``): time moves only when the loop sleeps
/// to its deadline or the test moves it, so these check exact dates and wake-up counts, and
/// none of them sleeps. The real clock's checks of the same rules are in TimerRuleTests,
/// ToleranceTests and SleepTests.
@Suite struct VirtualClockTimerTests {
    private static let tracking = EvRunLoop.Mode("virtual.timers.tracking")

    /// R22, R46: a sleep for a timer ends at its date exactly (the plan's deadline), once.
    @Test func R22_aSleepForATimerEndsAtItsDate() {
        let (firedAt, due, sleeps) = onVirtualLoopThread { loop, clock -> (ContinuousClock.Instant?, ContinuousClock.Instant, Int) in
            let due = clock.instant + .seconds(5)
            let firedAt = Box<ContinuousClock.Instant?>(nil)
            loop.add(EvTimer(fireAt: due) { _ in firedAt.set(clock.instant) }, forMode: .default)
            _ = loop.run(mode: .default, timeout: .seconds(60))
            return (firedAt.get, due, clock.sleepCount)
        }
        #expect(firedAt == due)
        #expect(sleeps == 1)
    }

    /// R41, R42: a repeating timer whose mode did not run for five intervals fires once when it
    /// runs again, then on its original grid, at the first slot strictly after that fire.
    @Test func R41_R42_missedIntervalsFireOnceThenTheGridResumes() {
        let outcome = onVirtualLoopThread { loop, clock -> (fires: [ContinuousClock.Instant], first: ContinuousClock.Instant, afterTracking: ContinuousClock.Instant) in
            let interval = Duration.seconds(1)
            let first = clock.instant + interval
            let fires = EventLog<ContinuousClock.Instant>()
            let timer = EvTimer(fireAt: first, interval: interval) { _ in
                fires.append(clock.instant)
                if fires.count == 2 { loop.stop() }
            }
            loop.add(timer, forMode: .default)
            // Another mode runs for five and a half intervals: the timer waits.
            loop.add(EvTimer(fireAt: first + interval * 5 + interval / 2) { _ in }, forMode: Self.tracking)
            _ = loop.run(mode: Self.tracking, timeout: .seconds(60))
            let afterTracking = clock.instant
            _ = loop.run(mode: .default, timeout: .seconds(60))
            timer.invalidate()
            return (fires.all, first, afterTracking)
        }
        #expect(outcome.fires.count == 2)
        guard outcome.fires.count == 2 else { return }
        #expect(outcome.fires[0] == outcome.afterTracking)  // once, at once, for all the missed slots
        #expect(outcome.fires[1] == outcome.first + .seconds(6))  // the first slot after that fire
    }

    /// R43: a one-shot timer fires once at its date and leaves every mode.
    @Test func R43_aOneShotTimerFiresOnceAtItsDate() {
        let (fires, valid, result) = onVirtualLoopThread { loop, clock -> ([ContinuousClock.Instant], Bool, EvRunLoop.RunResult) in
            let fires = EventLog<ContinuousClock.Instant>()
            let timer = EvTimer(fireAt: clock.instant + .seconds(2)) { _ in fires.append(clock.instant) }
            loop.add(timer, forMode: .default)
            let result = loop.run(mode: .default, timeout: .seconds(60))
            return (fires.all.map { $0 - .seconds(2) }, timer.isValid, result)
        }
        #expect(fires.count == 1)
        #expect(!valid)
        #expect(result == .finished)
    }

    /// R44: a later date set in the callout is honoured to the nanosecond; C80: an earlier one
    /// wins too, and fires again at once.
    @Test func R44_C80_aDateSetInTheCalloutWins() {
        let fires = onVirtualLoopThread { loop, clock -> [Duration] in
            let start = clock.instant
            let fires = EventLog<Duration>()
            let timer = EvTimer(fireAt: start + .seconds(1), interval: .seconds(10)) { timer in
                fires.append(start.duration(to: clock.instant))
                switch fires.count {
                case 1: timer.fireDate = timer.fireDate + .milliseconds(2500)  // later, off the grid
                case 2: timer.fireDate = timer.fireDate - .seconds(1)  // earlier: due at once
                default: loop.stop()
                }
            }
            loop.add(timer, forMode: .default)
            _ = loop.run(mode: .default, timeout: .seconds(60))
            return fires.all
        }
        #expect(fires == [.seconds(1), .milliseconds(3500), .milliseconds(3500)])
    }

    /// R44, C75: a timer re-dated from another thread while the loop sleeps until a far
    /// deadline moves that sleep's deadline at once, and the timer fires at the new date. (The
    /// re-date also wakes the loop, C75, which then plans the same date again.)
    @Test func R44_C75_aDateMovedFromAnotherThreadMovesTheSleep() {
        let clock = VirtualWaiter(policy: .manual)
        let fired = Box<ContinuousClock.Instant?>(nil)
        let start = clock.instant
        let timer = EvTimer(fireAt: start + .seconds(3600)) { _ in fired.set(clock.instant) }
        let (loop, finished) = startVirtualLoopThread(clock) { loop in
            loop.add(timer, forMode: .default)
            _ = loop.run(mode: .default, timeout: nil)
        }
        clock.waitUntilAsleep()
        #expect(clock.plannedDeadline == MonotonicTime(start + .seconds(3600)))
        timer.fireDate = start + .seconds(5)
        // The re-date also wakes the loop (C75): read the deadline once it sleeps again, not
        // while it is awake between the two sleeps, when no sleep is planned.
        clock.waitUntilAsleep(afterSleeps: 1)
        #expect(clock.plannedDeadline == MonotonicTime(start + .seconds(5)))
        clock.advance(by: .seconds(5))
        #expect(finished.wait())
        #expect(fired.get == start + .seconds(5))
        _ = loop
    }

    /// R44, C75: a timer added from another thread to a loop asleep with no deadline gives that
    /// sleep one; the loop wakes at the timer's date.
    @Test func R44_aTimerAddedFromAnotherThreadGivesTheSleepADeadline() {
        let clock = VirtualWaiter(policy: .manual)
        let fired = Box<ContinuousClock.Instant?>(nil)
        let (loop, finished) = startVirtualLoopThread(clock) { loop in
            loop.add(EvSource {}, forMode: .default)  // keeps the mode alive, with no deadline
            _ = loop.run(mode: .default, timeout: nil)
        }
        clock.waitUntilAsleep()
        #expect(clock.plannedDeadline == .distantFuture)
        let due = clock.instant + .seconds(7)
        loop.add(EvTimer(fireAt: due) { _ in
            fired.set(clock.instant)
            EvRunLoop.current.stop()
        }, forMode: .default)
        #expect(clock.plannedDeadline == MonotonicTime(due))
        clock.advance(by: .seconds(7))
        #expect(finished.wait())
        #expect(fired.get == due)
    }

    /// R46: with tolerance, A (due at +1 s, 10 s of tolerance) waits for B (due at +4 s): both fire
    /// after one sleep, at B's date, neither before its own.
    @Test func R46_toleranceCoalescesTwoTimersIntoOneWakeUpAtTheLaterDate() {
        let (log, sleeps) = onVirtualLoopThread { loop, clock -> ([String], Int) in
            let start = clock.instant
            let log = EventLog<String>()
            let first = EvTimer(fireAt: start + .seconds(1), tolerance: .seconds(10)) { _ in
                log.append("A at \(start.duration(to: clock.instant))")
            }
            let second = EvTimer(fireAt: start + .seconds(4)) { _ in log.append("B at \(start.duration(to: clock.instant))") }
            loop.add(first, forMode: .default)
            loop.add(second, forMode: .default)
            _ = loop.run(mode: .default, timeout: .seconds(60))
            return (log.all, clock.sleepCount)
        }
        #expect(log == ["A at 4.0 seconds", "B at 4.0 seconds"])
        #expect(sleeps == 1)
    }

    /// R46: a tolerant timer never fires before its date, however often other timers wake the loop.
    @Test func R46_aTolerantTimerNeverFiresEarly() {
        let early = onVirtualLoopThread { loop, clock -> [String] in
            let early = EventLog<String>()
            let fires = Box(0)
            let tolerant = EvTimer(fireAt: clock.instant + .milliseconds(7), interval: .milliseconds(7), tolerance: .milliseconds(50)) { timer in
                if clock.instant < timer.fireDate { early.append("tolerant") }
                fires.set(fires.get + 1)
                if fires.get == 10 { timer.invalidate() }
            }
            let driver = EvTimer(fireAt: clock.instant + .milliseconds(1), interval: .milliseconds(1)) { timer in
                if clock.instant < timer.fireDate { early.append("driver") }
                if !tolerant.isValid { timer.invalidate() }
            }
            loop.add(tolerant, forMode: .default)
            loop.add(driver, forMode: .default)
            _ = loop.run(mode: .default, timeout: .seconds(60))
            return early.all
        }
        #expect(early.isEmpty)
    }

    /// R40, R42: three repeating timers of 3, 5 and 7 intervals share a mode until 105. Each
    /// fires at every multiple of its interval, exactly then. Timers due together fire in one
    /// step in the order they were last scheduled, as CF's sorted insertion keeps them: a
    /// timer rescheduled by an earlier fire goes first. A fire alone reschedules the timer in
    /// the heap's place, a shared one through the list of due timers; either way this holds.
    @Test func R40_R42_repeatingTimersKeepTheirGridsWhenAloneAndWhenDueTogether() {
        let unit = Duration.milliseconds(1)
        let intervals = [3, 5, 7]
        let fires = onVirtualLoopThread { loop, clock -> [String] in
            let start = clock.instant
            let fires = EventLog<String>()
            for interval in intervals {
                let timer = EvTimer(fireAt: start + unit * interval, interval: unit * interval) { timer in
                    let at = Int(start.duration(to: clock.instant) / unit)
                    fires.append("\(at):\(interval)")
                    if at >= 105 { timer.invalidate() }
                }
                loop.add(timer, forMode: .default)
            }
            _ = loop.run(mode: .default, timeout: .seconds(60))
            return fires.all
        }
        // The same schedule worked out: each timer's last scheduling, in a count of schedulings.
        var scheduled = Dictionary(uniqueKeysWithValues: intervals.enumerated().map { ($1, $0) })
        var count = intervals.count
        var expected: [String] = []
        for at in 1...105 {
            for interval in intervals.filter({ at % $0 == 0 }).sorted(by: { scheduled[$0]! < scheduled[$1]! }) {
                expected.append("\(at):\(interval)")
                scheduled[interval] = count
                count += 1
            }
        }
        #expect(fires == expected)
    }

    /// R39, R42: a repeating timer in two modes moves to its next slot in both when it fires
    /// in one: the other mode, run next, does not fire it again for the slot already served,
    /// and fires it at the next one. (A timer in one mode moves in its heap's place; one in
    /// several is rescheduled in each.)
    @Test func R39_R42_aRepeatingTimerInTwoModesMovesOnInBoth() {
        let (fires, first, halfwayResult) = onVirtualLoopThread { loop, clock -> ([ContinuousClock.Instant], ContinuousClock.Instant, EvRunLoop.RunResult) in
            let interval = Duration.seconds(1)
            let first = clock.instant + interval
            let fires = EventLog<ContinuousClock.Instant>()
            let timer = EvTimer(fireAt: first, interval: interval) { _ in
                fires.append(clock.instant)
                loop.stop()
            }
            loop.add(timer, forMode: .default)
            loop.add(timer, forMode: Self.tracking)
            _ = loop.run(mode: .default, timeout: .seconds(60))
            // Half an interval in the other mode: the slot at `first` was served already.
            let halfwayResult = loop.run(mode: Self.tracking, timeout: interval / 2)
            _ = loop.run(mode: Self.tracking, timeout: .seconds(60))
            timer.invalidate()
            return (fires.all, first, halfwayResult)
        }
        #expect(fires == [first, first + .seconds(1)])
        #expect(halfwayResult == .timedOut)
    }

    /// R42: a repeating timer that leaves its only mode in its own handler still moves to its
    /// next slot, as CF's does: added again, it fires one interval after its first fire, not at
    /// once for the slot already served.
    @Test func R42_aTimerThatLeftItsLastModeInItsHandlerKeepsItsGrid() {
        let (fires, first, dateWhileOut) = onVirtualLoopThread { loop, clock -> ([ContinuousClock.Instant], ContinuousClock.Instant, ContinuousClock.Instant) in
            let interval = Duration.seconds(10)
            let first = clock.instant + .seconds(1)
            let fires = EventLog<ContinuousClock.Instant>()
            let timer = EvTimer(fireAt: first, interval: interval) { timer in
                fires.append(clock.instant)
                if fires.count == 1 { loop.remove(timer, forMode: .default) } else { loop.stop() }
            }
            loop.add(timer, forMode: .default)
            // Another item keeps the mode from being empty once the timer leaves it (R16).
            let keeper = EvTimer(fireAt: clock.instant + .seconds(3)) { _ in loop.add(timer, forMode: .default) }
            loop.add(keeper, forMode: .default)
            _ = loop.run(mode: .default, timeout: .seconds(2))
            let dateWhileOut = timer.fireDate
            _ = loop.run(mode: .default, timeout: .seconds(60))
            timer.invalidate()
            return (fires.all, first, dateWhileOut)
        }
        #expect(dateWhileOut == first + .seconds(10))
        #expect(fires == [first, first + .seconds(10)])
    }

    /// R47: a repeating timer dated centuries ago, beyond what 64 bits of nanoseconds reach back
    /// to, fires once, then on its grid's slots after now, one interval apart. Before, its next
    /// date stayed at the far past and it fired at every pass (the run never ended here).
    @Test func R47_aRepeatingTimerDatedCenturiesAgoFiresOnceThenEveryInterval() {
        let fires = onVirtualLoopThread { loop, clock -> [ContinuousClock.Instant] in
            let fires = EventLog<ContinuousClock.Instant>()
            let timer = EvTimer(fireAt: clock.instant - .seconds(400 * 365 * 86_400), interval: .seconds(1)) { _ in
                fires.append(clock.instant)
            }
            loop.add(timer, forMode: .default)
            _ = loop.run(mode: .default, timeout: .milliseconds(3_500))
            timer.invalidate()
            return fires.all
        }
        #expect((4...5).contains(fires.count))
        #expect(zip(fires.dropFirst(), fires.dropFirst(2)).allSatisfy { $0.duration(to: $1) == .seconds(1) })
    }

    /// R47: the next slot of a grid whose date lies so far behind that the gap, or the advance to
    /// the slot, leaves 64 bits, is still the first one after now.
    @Test func R47_theNextSlotOfAGridFarBehindIsTheFirstAfterNow() {
        let now = MonotonicTime(nanoseconds: 5_000_000_000)
        let second: Int64 = 1_000_000_000
        let fromTheFarPast = EvRunLoop.nextFireDate(after: MonotonicTime(nanoseconds: .min), everyNanoseconds: second, now: now)
        #expect(fromTheFarPast > now && fromTheFarPast.nanoseconds - now.nanoseconds <= second)
        #expect((Int128(fromTheFarPast.nanoseconds) - Int128(Int64.min)) % Int128(second) == 0)
        // An interval of 200 years from a date 150 years back: the slot is 50 years ahead.
        let year: Int64 = 365 * 86_400 * second
        let longStep = EvRunLoop.nextFireDate(after: MonotonicTime(nanoseconds: -150 * year), everyNanoseconds: 200 * year, now: now)
        #expect(longStep == MonotonicTime(nanoseconds: 50 * year))
    }

    /// R46: lowering a scheduled timer's tolerance counts from its next wake-up, as Foundation's
    /// habit of setting it after scheduling expects. Before, the heap kept the old latest date
    /// and the timer fired a minute late.
    @Test func R46_aToleranceLoweredAfterTheTimerWasAddedIsHonoured() {
        let (firedAt, due) = onVirtualLoopThread { loop, clock -> (ContinuousClock.Instant?, ContinuousClock.Instant) in
            let due = clock.instant + .seconds(5)
            let firedAt = Box<ContinuousClock.Instant?>(nil)
            let timer = EvTimer(fireAt: due, tolerance: .seconds(60)) { _ in firedAt.set(clock.instant) }
            loop.add(timer, forMode: .default)
            timer.tolerance = .zero
            _ = loop.run(mode: .default, timeout: .seconds(120))
            return (firedAt.get, due)
        }
        #expect(firedAt == due)
    }

    /// R47: a repeating interval under a nanosecond is a nanosecond, not zero: the timer repeats,
    /// as it says. Before, it reported the interval but fired once, as a one-shot.
    @Test func R47_aRepeatingIntervalUnderANanosecondIsOne() {
        let timer = EvTimer(interval: .nanoseconds(0.5), repeats: true) { _ in }
        #expect(timer.interval == .nanoseconds(1))
        #expect(timer.repeats)
    }

    /// R46, R44: on a loop with precise timers, a deadline that another thread moves to a
    /// timer's date is a precise one, as the loop's own plan makes it: added, the timer brings
    /// the sleep forward; removed, the sleep goes back to the next timer, then to the run's
    /// timeout, which is not precise. Before, a moved deadline always lost its precision, and
    /// such a timer fired as late as a standard one.
    @Test func R46_aDeadlineMovedFromAnotherThreadKeepsTheLoopsPrecision() {
        let clock = VirtualWaiter(policy: .manual)
        let start = clock.instant
        let (loop, finished) = startVirtualLoopThread(clock) { loop in
            loop.timerPrecision = .precise
            loop.add(EvSource {}, forMode: .default)  // keeps the mode from being empty (R16)
            _ = loop.run(mode: .default, timeout: .seconds(600))
        }
        clock.waitUntilAsleep()
        let timeout = MonotonicTime(start + .seconds(600))
        #expect(clock.plannedSleep == SleepDeadline(date: timeout))
        let later = EvTimer(fireAt: start + .seconds(7)) { _ in }
        let sooner = EvTimer(fireAt: start + .seconds(3)) { _ in }
        loop.add(later, forMode: .default)
        #expect(clock.plannedSleep == SleepDeadline(date: MonotonicTime(start + .seconds(7)), precise: true))
        loop.add(sooner, forMode: .default)
        #expect(clock.plannedSleep == SleepDeadline(date: MonotonicTime(start + .seconds(3)), precise: true))
        loop.remove(sooner, forMode: .default)
        #expect(clock.plannedSleep == SleepDeadline(date: MonotonicTime(start + .seconds(7)), precise: true))
        later.invalidate()
        #expect(clock.plannedSleep == SleepDeadline(date: timeout))
        loop.stop()
        #expect(finished.wait())
    }

    /// R26, R47: a run's timeout ends its sleep at that date when no timer comes first.
    @Test func R26_aRunTimesOutAtItsDeadline() {
        let (result, elapsed) = onVirtualLoopThread { loop, clock -> (EvRunLoop.RunResult, Duration) in
            let start = clock.instant
            loop.add(EvTimer(fireAt: start + .seconds(3600)) { _ in }, forMode: .default)
            let result = loop.run(mode: .default, timeout: .seconds(90))
            return (result, start.duration(to: clock.instant))
        }
        #expect(result == .timedOut)
        #expect(elapsed == .seconds(90))
    }
}
