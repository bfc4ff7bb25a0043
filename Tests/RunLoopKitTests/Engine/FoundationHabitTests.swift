import Foundation
import RunLoopKit
import Testing

/// Foundation's habits on RunLoopKit: the run form a stop ends, `run(mode:before:)`,
/// `limitDate(forMode:)`, the next timer's fire date, one-call timers, `fire()`, timers made
/// from an interval and a `repeats` flag, loops compared by identity, and ports added and
/// removed through the loop.
@Suite struct FoundationHabitTests {
    /// C119: `run(until:)` carries on after a stop, as Foundation's does; `runUntilStopped`,
    /// the daemon's form, returns at the stop.
    @Test func C119_runUntilStoppedEndsAtStopWhereRunUntilCarriesOn() {
        let log = onLoopThread { loop -> [String] in
            var log: [String] = []
            loop.addTimer(after: .milliseconds(1)) { _ in loop.stop() }
            loop.add(keepAliveTimer(), forMode: .default)
            log.append("runUntilStopped: \(loop.runUntilStopped(deadline: .now + .seconds(60)))")
            loop.addTimer(after: .milliseconds(1)) { _ in loop.stop() }
            loop.addTimer(after: .milliseconds(20)) { _ in log.append("later timer") }
            loop.run(until: .now + .milliseconds(300))
            log.append("run(until:) returned")
            return log
        }
        #expect(log == ["runUntilStopped: stopped", "later timer", "run(until:) returned"])
    }

    @Test func runUntilStoppedTimesOutAtItsDeadlineAndFinishesOnAnEmptyMode() {
        let results = onLoopThread { loop -> [EvRunLoop.RunResult] in
            let empty = loop.runUntilStopped(mode: EvRunLoop.Mode("empty"))
            let keepAlive = keepAliveTimer()
            loop.add(keepAlive, forMode: .default)
            let timedOut = loop.runUntilStopped(deadline: .now + .milliseconds(20))
            keepAlive.invalidate()
            return [empty, timedOut]
        }
        #expect(results == [.finished, .timedOut])
    }

    /// C118: false without running for an empty mode, `.common` or another thread's loop; else one
    /// run that returns after one handled source, and true whatever the result.
    @Test func C118_runModeBeforeRunsOnceAndSaysWhetherItRan() {
        let log = onLoopThread { loop -> [String] in
            var log: [String] = []
            let observer = loop.addObserver(activities: .entry) { _, _ in log.append("entry") }
            log.append("empty: \(loop.run(mode: .default, before: .now + .seconds(10)))")
            log.append("common: \(loop.run(mode: .common, before: .now + .seconds(10)))")
            let first = loop.addSource { log.append("first") }
            let second = loop.addSource { log.append("second") }
            first.signal()
            second.signal()
            log.append("ran: \(loop.run(mode: .default, before: .now + .seconds(10)))")
            log.append("ran: \(loop.run(mode: .default, before: .now + .seconds(10)))")
            log.append("past limit: \(loop.run(mode: .default, before: .now - .seconds(1)))")
            let other = onLoopThread { _ in loop.run(mode: .default, before: .now + .seconds(10)) }
            log.append("other thread: \(other)")
            first.invalidate()
            second.invalidate()
            observer.invalidate()
            return log
        }
        #expect(log == [
            "empty: false", "common: false", "entry", "first", "ran: true", "entry", "second", "ran: true",
            "entry", "past limit: true", "other thread: false",
        ])
    }

    /// C122 and C84: one poll, then nil for an empty mode, the next timer's date, or the distant
    /// future when the mode has only sources.
    @Test func C122_limitDatePollsOnceThenTellsTheNextTimerDate() {
        let outcome = onLoopThread { loop -> [String] in
            var log: [String] = []
            let tracking = EvRunLoop.Mode("tracking")
            log.append("empty: \(loop.limitDate(forMode: tracking) == nil)")
            let source = loop.addSource(forMode: tracking) { log.append("polled") }
            source.signal()
            log.append("only a source: \(loop.limitDate(forMode: tracking) == EvRunLoop.distantFuture)")
            let late = loop.addTimer(after: .seconds(200), forMode: tracking) { _ in }
            let soon = loop.addTimer(after: .seconds(100), forMode: tracking) { _ in }
            log.append("next timer: \(loop.limitDate(forMode: tracking) == soon.fireDate)")
            log.append("next fire date: \(loop.nextTimerFireDate(forMode: tracking) == soon.fireDate)")
            soon.invalidate()
            log.append("after invalidate: \(loop.nextTimerFireDate(forMode: tracking) == late.fireDate)")
            log.append("common: \(loop.limitDate(forMode: .common) == nil) \(loop.nextTimerFireDate(forMode: .common) == nil)")
            let fromOtherThread = onLoopThread { _ in
                (loop.limitDate(forMode: tracking) == nil, loop.nextTimerFireDate(forMode: tracking))
            }
            log.append("other thread: \(fromOtherThread.0) \(fromOtherThread.1 == late.fireDate)")
            log.append("no timer: \(loop.nextTimerFireDate(forMode: .default) == nil)")
            late.invalidate()
            source.invalidate()
            return log
        }
        #expect(outcome == [
            "empty: true", "polled", "only a source: true", "next timer: true", "next fire date: true",
            "after invalidate: true", "common: true true", "other thread: true true", "no timer: true",
        ])
    }

    /// C123: one call makes the timer and adds it to the calling thread's loop, in the default
    /// mode only.
    @Test func C123_addTimerSchedulesInTheDefaultModeOnly() {
        let outcome = onLoopThread { loop -> [Bool] in
            let tracking = EvRunLoop.Mode("tracking")
            loop.addCommonMode(tracking)
            var fired = 0
            let timer = loop.addTimer(after: .milliseconds(1)) { _ in fired += 1 }
            let placement = [loop.contains(timer, forMode: .default), loop.contains(timer, forMode: tracking)]
            loop.run(mode: .default, timeout: .seconds(10))
            return placement + [fired == 1, timer.isValid]
        }
        #expect(outcome == [true, false, true, false])
    }

    /// C125: `fire()` runs the handler at once without moving the schedule, and invalidates a
    /// timer that does not repeat.
    @Test func C125_fireRunsTheHandlerNowAndKeepsTheSchedule() {
        let fired = Box(0)
        let repeating = EvTimer(after: .seconds(100), interval: .seconds(1)) { _ in fired.update { $0 += 1 } }
        let date = repeating.fireDate
        repeating.fire()
        #expect(fired.get == 1)
        #expect(repeating.fireDate == date)
        #expect(repeating.isValid)
        let oneShot = EvTimer(after: .seconds(100)) { _ in fired.update { $0 += 10 } }
        oneShot.fire()
        #expect(fired.get == 11)
        #expect(!oneShot.isValid)
        oneShot.fire()
        #expect(fired.get == 11)
        repeating.invalidate()
    }
    /// Foundation's `Timer(timeInterval:repeats:block:)`: the interval is the first delay, and
    /// `repeats: false` makes a one-shot timer (whose interval then reads zero, as Foundation's
    /// `timeInterval` does); the one-call form on the loop's thread likewise.
    @Test func aTimerMadeFromAnIntervalAndARepeatsFlagFiresOnceOrRepeats() {
        let outcome = onLoopThread { loop -> [String] in
            let start = ContinuousClock.now
            var log: [String] = []
            let oneShot = EvTimer(interval: .milliseconds(10), repeats: false) { _ in }
            log.append("one-shot: repeats \(oneShot.repeats), interval \(oneShot.interval), due after the interval \(oneShot.fireDate >= start + .milliseconds(10))")
            var onceFired = 0, everyFired = 0
            let once = loop.addTimer(interval: .milliseconds(2), repeats: false) { _ in onceFired += 1 }
            let every = loop.addTimer(interval: .milliseconds(2), repeats: true) { timer in
                everyFired += 1
                if everyFired == 3 { timer.invalidate() }
            }
            log.append("every: repeats \(every.repeats), interval \(every.interval)")
            loop.run(mode: .default, timeout: .seconds(30))
            log.append("fired once \(onceFired), repeating \(everyFired); valid \(once.isValid) \(every.isValid)")
            return log
        }
        #expect(outcome == [
            "one-shot: repeats false, interval 0.0 seconds, due after the interval true",
            "every: repeats true, interval 0.002 seconds",
            "fired once 1, repeating 3; valid false false",
        ])
    }

    @Test func aRepeatingTimerWithAZeroIntervalStops() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = EvTimer(interval: .zero, repeats: true) { _ in }
        }
        let message = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(message.contains("EvTimer.init(interval:repeats:): a repeating timer needs an interval greater than zero"))
    }

    /// Loops are `Equatable` and `Hashable` by identity, as XCTest's `XCTAssertEqual(loop, loop)`
    /// and a dictionary keyed by loop need.
    @Test func loopsAreEqualAndHashedByIdentity() {
        let (first, sameAgain) = onLoopThread { loop in (loop, EvRunLoop.current) }
        let second = onLoopThread { $0 }
        #expect(first == sameAgain)
        #expect(first != second)
        #expect(first.hashValue == sameAgain.hashValue)
        #expect(Set([first, sameAgain, second]).count == 2)
        let names: [EvRunLoop: String] = [first: "first", second: "second"]
        #expect(names[sameAgain] == "first")
    }

    /// Foundation's `port.schedule(in:forMode:)` and `port.remove(from:forMode:)` are the loop's
    /// `add` and `remove`: a port removed from one of its modes is handled in the other, and one
    /// removed from every mode keeps its messages until it is added again.
    @Test func aPortIsScheduledAndRemovedThroughTheLoop() {
        let outcome = onLoopThread { loop -> [String] in
            let tracking = EvRunLoop.Mode("tracking")
            let log = EventLog<String>()
            let port = EvMessagePort<String> { log.append($0) }
            loop.add(port, forMode: .default)
            loop.add(port, forMode: tracking)
            loop.remove(port, forMode: .default)
            try! port.send("in tracking")
            let inDefault = loop.run(mode: .default, timeout: .zero)
            loop.run(mode: tracking, timeout: .seconds(30), returnAfterSourceHandled: true)
            loop.remove(port, forMode: tracking)
            try! port.send("kept while in no mode")
            let nowhere = loop.run(mode: tracking, timeout: .zero)
            loop.add(port, forMode: .default)
            loop.run(mode: .default, timeout: .seconds(30), returnAfterSourceHandled: true)
            port.invalidate()
            return ["default \(inDefault)", "no mode \(nowhere)"] + log.all
        }
        #expect(outcome == ["default finished", "no mode finished", "in tracking", "kept while in no mode"])
    }
}
