import Foundation
import RunLoopKit
import Testing

/// Version-0 sources, R33–R36.
///
/// R37 and R38 (version-1 sources) are covered by the version-1 source tests (message ports,
/// signal sources, file-descriptor sources).
@Suite struct SourceRuleTests {
    private static let other = EvRunLoop.Mode("rules-b.sources.other")

    // MARK: R33

    @Test func R33_signalledSourcesPerformInAscendingOrderInOneIteration() {
        let log = onLoopThread { loop -> [String] in
            let log = EventLog<String>()
            loop.add(EvObserver(activities: .beforeSources) { _, _ in log.append("beforeSources") }, forMode: .default)
            let sources = [3, 1, 2, -4].map { order in EvSource(order: order) { log.append("source \(order)") } }
            for source in sources { loop.add(source, forMode: .default) }
            for source in sources { source.signal() }
            loop.run(mode: .default, timeout: .zero)  // exactly one iteration (R25)
            return log.all
        }
        #expect(log == ["beforeSources", "source -4", "source 1", "source 2", "source 3"])
    }

    @Test func R33_equalOrdersPerformInTheOrderTheyWereSignalled() {
        let log = onLoopThread { loop -> [String] in
            let log = EventLog<String>()
            let names = ["a", "b", "c", "d", "e", "f"]
            var sources: [String: EvSource] = [:]
            for name in names {
                let source = EvSource { log.append(name) }
                sources[name] = source
                loop.add(source, forMode: .default)  // added in alphabetical order
            }
            let early = EvSource(order: -1) { log.append("early") }
            loop.add(early, forMode: .default)
            for name in ["d", "b", "f", "a", "e", "c"] { sources[name]!.signal() }
            early.signal()  // signalled last, but a lower order goes first
            loop.run(mode: .default, timeout: .zero)
            return log.all
        }
        #expect(log == ["early", "d", "b", "f", "a", "e", "c"])
    }

    @Test func R33_sourceSignalledDuringItsOwnPerformRunsAgainInALaterIteration() {
        let (performedIn, signalledDuringPerform, result) = onLoopThread {
            loop -> ([Int], [Bool], EvRunLoop.RunResult) in
            let iteration = Box(0)
            loop.add(EvObserver(activities: .beforeSources) { _, _ in iteration.update { $0 += 1 } }, forMode: .default)
            let performedIn = EventLog<Int>()
            let flags = EventLog<Bool>()
            let me = Box<EvSource?>(nil)
            defer { me.set(nil) }  // the item's closure holds this box: break the cycle
            let source = EvSource {
                flags.append(me.get!.isSignalled)  // cleared just before the callout
                performedIn.append(iteration.get)
                if performedIn.count == 1 { me.get!.signal() } else { loop.stop() }
            }
            me.set(source)
            loop.add(source, forMode: .default)
            source.signal()
            // The safety-net timeout only matters if the second signal were lost.
            let result = loop.run(mode: .default, timeout: .seconds(30))
            return (performedIn.all, flags.all, result)
        }
        #expect(performedIn == [1, 2])
        #expect(signalledDuringPerform == [false, false])
        #expect(result == .stopped)
    }

    /// C59, C60: a run nested in the first perform of a pass performs the other signalled
    /// sources (in order, once each, with sources signalled meanwhile in its own list); the outer
    /// pass then finds them no longer signalled and skips them. Each pass lists its sources apart
    /// from the other's, though both reuse the loop's one scratch list.
    @Test func R33_C60_aRunNestedInAPerformPerformsTheOtherSignalledSourcesOnce() {
        let log = onLoopThread { loop -> [String] in
            let log = EventLog<String>()
            let late = EvSource(order: 0) { log.append("late") }
            let others = [3, 2].map { order in EvSource(order: order) { log.append("source \(order)") } }
            let first = EvSource(order: 1) {
                log.append("source 1")
                late.signal()  // signalled during the outer pass: only the nested one sees it
                loop.run(mode: .default, timeout: .zero)
                log.append("nested run returned")
            }
            for source in [first, late] + others { loop.add(source, forMode: .default) }
            for source in others + [first] { source.signal() }
            loop.run(mode: .default, timeout: .zero)  // one pass (R25)
            log.append("outer run returned")
            return log.all
        }
        #expect(log == ["source 1", "late", "source 2", "source 3", "nested run returned", "outer run returned"])
    }

    // MARK: R34

    @Test func R34_returnAfterSourceHandledPerformsOnlyTheFirstSource() {
        let (logs, results, pending) = onLoopThread {
            loop -> ([[Int]], [EvRunLoop.RunResult], [Bool]) in
            let log = EventLog<Int>()
            let sources = [1, 2, 3].map { order in EvSource(order: order) { log.append(order) } }
            for source in sources { loop.add(source, forMode: .default) }
            for source in sources { source.signal() }
            var logs: [[Int]] = []
            var results: [EvRunLoop.RunResult] = []
            results.append(loop.run(mode: .default, timeout: .seconds(10), returnAfterSourceHandled: true))
            logs.append(log.all)
            let pending = sources.map(\.isSignalled)
            for _ in 0..<2 {
                results.append(loop.run(mode: .default, timeout: .seconds(10), returnAfterSourceHandled: true))
                logs.append(log.all)
            }
            return (logs, results, pending)
        }
        #expect(logs == [[1], [1, 2], [1, 2, 3]])
        #expect(results == [.handledSource, .handledSource, .handledSource])
        #expect(pending == [false, true, true])
    }

    // MARK: R35

    @Test func R35_sourceSignalledWhileItsModeIsNotRunningPerformsWhenItRuns() {
        let (whileOtherRan, stillSignalled, result, afterwards) = onLoopThread {
            loop -> (Int, Bool, EvRunLoop.RunResult, Int) in
            let performed = EventLog<Int>()
            let source = EvSource { performed.append(1) }
            loop.add(source, forMode: Self.other)
            loop.add(keepAliveTimer(), forMode: .default)
            source.signal()
            loop.run(mode: .default, timeout: .zero)
            let whileOtherRan = performed.count
            let stillSignalled = source.isSignalled
            let result = loop.run(mode: Self.other, timeout: .seconds(30), returnAfterSourceHandled: true)
            return (whileOtherRan, stillSignalled, result, performed.count)
        }
        #expect(whileOtherRan == 0)
        #expect(stillSignalled)
        #expect(result == .handledSource)
        #expect(afterwards == 1)
    }

    @Test func R35_sourceSignalledBeforeBeingAddedPerformsWhenItsModeRuns() {
        let (result, performed) = onLoopThread { loop -> (EvRunLoop.RunResult, Int) in
            let performed = EventLog<Int>()
            let source = EvSource { performed.append(1) }
            source.signal()
            loop.add(source, forMode: .default)
            let result = loop.run(mode: .default, timeout: .seconds(30), returnAfterSourceHandled: true)
            return (result, performed.count)
        }
        #expect(result == .handledSource)
        #expect(performed == 1)
    }

    @Test func R35_signallingIsIdempotentUntilTheSourcePerforms() {
        let (first, second, stillSignalled) = onLoopThread { loop -> (Int, Int, Bool) in
            let performed = EventLog<Int>()
            let source = EvSource { performed.append(1) }
            loop.add(source, forMode: .default)
            source.signal()
            source.signal()
            source.signal()
            loop.run(mode: .default, timeout: .zero)
            let first = performed.count
            loop.run(mode: .default, timeout: .zero)
            return (first, performed.count, source.isSignalled)
        }
        #expect(first == 1)
        #expect(second == 1)
        #expect(!stillSignalled)
    }

    @Test func R35_R4_sourceSignalledOnALoopThatExitedPerformsOnTheNextLoopItJoins() {
        let performed = EventLog<Int>()
        let source = EvSource { performed.append(1) }
        onLoopThread { loop in
            loop.add(source, forMode: .default)
            source.signal()  // never run here: the thread exits and its loop is torn down (R4)
        }
        let result = onLoopThread { loop -> EvRunLoop.RunResult in
            loop.add(source, forMode: .default)
            return loop.run(mode: .default, timeout: .seconds(30), returnAfterSourceHandled: true)
        }
        #expect(result == .handledSource)
        #expect(performed.count == 1)
    }

    /// A source signalled on one loop, then moved to another before the first ran, performs
    /// once, on the loop it joined; the loop it left keeps no reference to it.
    @Test func R35_aSignalledSourceMovedToAnotherLoopPerformsThereOnlyAndIsNotKeptByTheFirst() {
        let (performedOn, releasedBeforeFirstRan, performedAfterFirstRan) = onLoopThread { first -> ([String], Bool, Int) in
            let performedOn = EventLog<String>()
            weak var released: EvSource?
            do {
                let source = EvSource { performedOn.append(EvRunLoop.current === first ? "first" : "second") }
                released = source
                first.add(source, forMode: .default)
                source.signal()
                first.remove(source, forMode: .default)
                onLoopThread { second in
                    second.add(source, forMode: .default)
                    second.run(mode: .default, timeout: .seconds(30), returnAfterSourceHandled: true)
                }
            }
            // Gone once its last holder (the second loop, torn down) let go, though the first
            // loop has not run since it was signalled there.
            let releasedBeforeFirstRan = released == nil
            first.add(keepAliveTimer(), forMode: .default)
            first.run(mode: .default, timeout: .zero)
            return (performedOn.all, releasedBeforeFirstRan, performedOn.count)
        }
        #expect(performedOn == ["second"])
        #expect(releasedBeforeFirstRan)
        #expect(performedAfterFirstRan == 1)
    }

    /// A signalled source that joins a second mode of its loop performs once.
    @Test func R35_aSignalledSourceJoiningASecondModePerformsOnce() {
        let (first, second, inOther, stillSignalled) = onLoopThread { loop -> (Int, Int, Int, Bool) in
            let performed = EventLog<Int>()
            let source = EvSource { performed.append(1) }
            loop.add(source, forMode: .default)
            loop.add(keepAliveTimer(), forMode: .default)
            loop.add(keepAliveTimer(), forMode: Self.other)
            source.signal()
            loop.add(source, forMode: Self.other)
            loop.run(mode: .default, timeout: .zero)
            let first = performed.count
            loop.run(mode: .default, timeout: .zero)
            let second = performed.count
            loop.run(mode: Self.other, timeout: .zero)
            return (first, second, performed.count, source.isSignalled)
        }
        #expect(first == 1)
        #expect(second == 1)
        #expect(inOther == 1)
        #expect(!stillSignalled)
    }

    @Test func R35_signalledSourcesLeavingAndRejoiningStillPerformInOrder() {
        let order = onLoopThread { loop -> [Int] in
            let performed = EventLog<Int>()
            let sources = (0..<4).map { i in EvSource(order: i) { performed.append(i) } }
            for source in sources {
                loop.add(source, forMode: .default)
                source.signal()
            }
            // The first and the third leave while signalled (the list refills their places),
            // then the first comes back, still signalled (R35).
            loop.remove(sources[0], forMode: .default)
            loop.remove(sources[2], forMode: .default)
            loop.add(sources[0], forMode: .default)
            loop.run(mode: .default, timeout: .zero)
            loop.add(sources[2], forMode: .default)
            loop.run(mode: .default, timeout: .zero)
            return performed.all
        }
        #expect(order == [0, 1, 3, 2])
    }

    // MARK: R36

    @Test func R36_addingCallsScheduleOncePerModeWithTheLoopAndMode() {
        let (calls, sameLoop) = onLoopThread { loop -> ([String], Bool) in
            let calls = EventLog<String>()
            let sameLoop = Box(true)
            let source = EvSource(
                schedule: { scheduledOn, mode in
                    if scheduledOn !== loop { sameLoop.set(false) }
                    calls.append("schedule \(mode.name)")
                },
                cancel: { _, mode in calls.append("cancel \(mode.name)") },
                perform: {})
            loop.add(source, forMode: .default)
            loop.add(source, forMode: Self.other)
            loop.add(source, forMode: .default)  // already there: no second schedule
            return (calls.all, sameLoop.get)
        }
        #expect(calls == ["schedule \(EvRunLoop.Mode.default.name)", "schedule \(Self.other.name)"])
        #expect(sameLoop)
    }

    @Test func R36_removingCallsCancelForTheModeLeftOnly() {
        let (calls, inDefault, inOther) = onLoopThread { loop -> ([String], Bool, Bool) in
            let calls = EventLog<String>()
            let source = EvSource(
                schedule: { _, _ in },
                cancel: { cancelledOn, mode in calls.append("cancel \(mode.name)\(cancelledOn === loop ? "" : " elsewhere")") },
                perform: {})
            loop.add(source, forMode: .default)
            loop.add(source, forMode: Self.other)
            loop.remove(source, forMode: Self.other)
            loop.remove(source, forMode: Self.other)  // no longer there: no second cancel
            return (calls.all, loop.contains(source, forMode: .default), loop.contains(source, forMode: Self.other))
        }
        #expect(calls == ["cancel \(Self.other.name)"])
        #expect(inDefault)
        #expect(!inOther)
    }

    @Test func R36_invalidatingCancelsInEveryModeAndTheSourceNeverPerformsAgain() {
        let outcome = onLoopThread { loop -> (cancels: [String], flags: [Bool], performed: Int, readdSchedules: Int) in
            let cancels = EventLog<String>()
            let schedules = EventLog<String>()
            let performed = EventLog<Int>()
            let source = EvSource(
                schedule: { _, mode in schedules.append(mode.name) },
                cancel: { _, mode in cancels.append(mode.name) },
                perform: { performed.append(1) })
            loop.add(source, forMode: .default)
            loop.add(source, forMode: Self.other)
            loop.add(keepAliveTimer(), forMode: .default)
            loop.add(keepAliveTimer(), forMode: Self.other)
            source.signal()
            source.invalidate()
            source.signal()  // does nothing now
            let flags = [
                source.isValid, source.isSignalled,
                loop.contains(source, forMode: .default), loop.contains(source, forMode: Self.other),
            ]
            loop.run(mode: .default, timeout: .zero)
            loop.run(mode: Self.other, timeout: .zero)
            let schedulesBefore = schedules.count
            loop.add(source, forMode: .default)  // an invalidated source cannot come back
            loop.run(mode: .default, timeout: .zero)
            return (cancels.all.sorted(), flags, performed.count, schedules.count - schedulesBefore)
        }
        #expect(outcome.cancels == [EvRunLoop.Mode.default.name, Self.other.name].sorted())
        #expect(outcome.flags == [false, false, false, false])
        #expect(outcome.performed == 0)
        #expect(outcome.readdSchedules == 0)
    }
}
