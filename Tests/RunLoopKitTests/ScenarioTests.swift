import Foundation
import RunLoopKit
import Testing

/// End-to-end scenarios: a timer in the common modes while a tracking mode runs (R11–R13, R41),
/// and the exact phase sequence of whole runs (R19–R21).
@Suite struct ScenarioTests {
    private static let tracking = EvRunLoop.Mode("rules-b.scenario.tracking")

    /// A carousel timer in `.common` keeps firing while a custom "tracking" mode runs;
    /// a timer only in `.default` stays silent, then fires once — not once per missed interval —
    /// when `.default` runs again, and keeps its original grid.
    @Test func commonTimerFiresDuringTrackingWhileADefaultOnlyTimerCatchesUpOnce() {
        let interval = Duration.milliseconds(10)
        let outcome = onLoopThread { loop -> TrackingOutcome in
            let first = ContinuousClock.now + interval
            let log = EventLog<String>()
            let commonFires = Box(0)
            let common = EvTimer(fireAt: first, interval: interval) { _ in
                log.append("common in \(loop.currentMode == Self.tracking ? "tracking" : "default")")
                if commonFires.update({ $0 += 1; return $0 }) == 5 { loop.stop() }  // ends the tracking run
            }
            loop.add(common, forMode: .common)
            loop.addCommonMode(Self.tracking)  // R13: the common timer joins it now

            let defaultFires = EventLog<(fired: ContinuousClock.Instant, now: ContinuousClock.Instant)>()
            let defaultOnly = EvTimer(fireAt: first, interval: interval) { timer in
                defaultFires.append((timer.fireDate, .now))
                log.append("default-only")
                if defaultFires.count == 2 { loop.stop() }
            }
            loop.add(defaultOnly, forMode: .default)

            let trackingResult = loop.run(mode: Self.tracking, timeout: .seconds(30))
            let duringTracking = log.all
            let defaultResult = loop.run(mode: .default, timeout: .seconds(30))
            common.invalidate()
            defaultOnly.invalidate()
            return TrackingOutcome(
                interval: interval, first: first, trackingResult: trackingResult, duringTracking: duringTracking,
                defaultResult: defaultResult, defaultFires: defaultFires.all.map { [$0.fired, $0.now] })
        }
        #expect(outcome.trackingResult == .stopped)
        #expect(outcome.duringTracking == Array(repeating: "common in tracking", count: 5))
        #expect(outcome.defaultResult == .stopped)
        #expect(outcome.defaultFires.count == 2)
        guard outcome.defaultFires.count == 2 else { return }
        let (firstFire, secondFire) = (outcome.defaultFires[0], outcome.defaultFires[1])
        // It missed at least four intervals: the common timer fired five times meanwhile.
        #expect(firstFire[0] == outcome.first)
        #expect(firstFire[1] >= outcome.first + outcome.interval * 4)
        // Fired once for all of them: the next fire is the first grid slot strictly after then.
        let step = scenarioNanoseconds(outcome.interval)
        let offset = scenarioNanoseconds(outcome.first.duration(to: secondFire[0]))
        #expect(offset % step == 0)
        #expect(secondFire[0] > firstFire[1])
        #expect(secondFire[0] - outcome.interval <= secondFire[1])
    }

    /// The exact phases of a run that sleeps and is woken by a timer.
    @Test func observerSeesThePhasesOfARunWokenByATimer() {
        let (log, result) = onLoopThread { loop -> ([String], EvRunLoop.RunResult) in
            let log = EventLog<String>()
            loop.add(EvObserver(activities: .allActivities) { _, activity in log.append(activity.description) }, forMode: .default)
            loop.add(EvTimer(after: .milliseconds(5)) { _ in log.append("timer") }, forMode: .default)
            let result = loop.run(mode: .default, timeout: .seconds(30))  // one-shot: then the mode is empty
            return (log.all, result)
        }
        #expect(log == ["entry", "beforeTimers", "beforeSources", "beforeWaiting", "afterWaiting", "timer", "exit"])
        #expect(result == .finished)
    }

    /// The same with a repeating timer: every wake-up is a full iteration with both waiting phases.
    @Test func observerSeesEveryIterationOfARepeatingTimer() {
        let (log, result) = onLoopThread { loop -> ([String], EvRunLoop.RunResult) in
            let log = EventLog<String>()
            loop.add(EvObserver(activities: .allActivities) { _, activity in log.append(activity.description) }, forMode: .default)
            let fires = Box(0)
            loop.add(
                EvTimer(after: .milliseconds(2), interval: .milliseconds(2)) { timer in
                    log.append("timer")
                    if fires.update({ $0 += 1; return $0 }) == 3 { timer.invalidate() }
                }, forMode: .default)
            let result = loop.run(mode: .default, timeout: .seconds(30))
            return (log.all, result)
        }
        let iteration = ["beforeTimers", "beforeSources", "beforeWaiting", "afterWaiting", "timer"]
        #expect(log == ["entry"] + iteration + iteration + iteration + ["exit"])
        #expect(result == .finished)
    }

    /// The exact phases of a run woken by `wakeUp()` from another thread and stopped
    /// by its AfterWaiting observer.
    @Test func observerSeesThePhasesOfARunWokenFromAnotherThread() {
        let asleep = Latch()
        let (log, result, wasWaiting) = onLoopThread { loop -> ([String], EvRunLoop.RunResult, Bool) in
            let log = EventLog<String>()
            loop.add(
                EvObserver(activities: .allActivities) { _, activity in
                    log.append(activity.description)
                    if activity == .beforeWaiting { asleep.open() }
                    if activity == .afterWaiting { loop.stop() }
                }, forMode: .default)
            loop.add(keepAliveTimer(), forMode: .default)
            let wasWaiting = Box(false)
            Thread {
                guard asleep.wait() else { return }
                let limit = ContinuousClock.now + .seconds(30)
                while !loop.isWaiting && ContinuousClock.now < limit { sched_yield() }
                wasWaiting.set(loop.isWaiting)
                loop.wakeUp()
            }.start()
            let result = loop.run(mode: .default, timeout: .seconds(30))
            return (log.all, result, wasWaiting.get)
        }
        #expect(wasWaiting)
        #expect(log == ["entry", "beforeTimers", "beforeSources", "beforeWaiting", "afterWaiting", "exit"])
        #expect(result == .stopped)
    }
}

private struct TrackingOutcome: Sendable {
    let interval: Duration
    let first: ContinuousClock.Instant
    let trackingResult: EvRunLoop.RunResult
    let duringTracking: [String]
    let defaultResult: EvRunLoop.RunResult
    /// For each fire of the default-only timer: its fire date and the time it ran.
    let defaultFires: [[ContinuousClock.Instant]]
}

private func scenarioNanoseconds(_ duration: Duration) -> Int64 {
    let (seconds, attoseconds) = duration.components
    return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
}
