import Foundation
import RunLoopKit
import Testing

/// A source that logs the modes it is scheduled in and cancelled from.
private func trackedSource(_ log: EventLog<String>) -> EvSource {
    EvSource(
        schedule: { _, mode in log.append("schedule \(mode.name)") },
        cancel: { _, mode in log.append("cancel \(mode.name)") },
        perform: {})
}

/// R11–R18: the common modes, and when a mode counts as empty.
///
/// R17 (on the main thread the main dispatch queue makes the main loop's common modes non-empty)
/// is not covered: the main loop does not service libdispatch's main queue yet, and tests must not
/// run a loop on the process's main thread anyway.
@Suite struct CommonModeRuleTests {
    private let a = EvRunLoop.Mode("a")
    private let b = EvRunLoop.Mode("b")

    // MARK: The common set

    @Test func R11_theCommonSetStartsWithOnlyTheDefaultMode() {
        let log = EventLog<String>()
        let (inDefault, inA, callouts) = onLoopThread { [a] loop -> (Bool, Bool, [String]) in
            loop.add(keepAliveTimer(), forMode: a)  // `a` exists but is not common
            let source = trackedSource(log)
            loop.add(source, forMode: .common)
            return (loop.contains(source, forMode: .default), loop.contains(source, forMode: a), log.all)
        }
        #expect(inDefault)
        #expect(!inA)
        #expect(callouts == ["schedule kCFRunLoopDefaultMode"])
    }

    @Test func R11_addingACommonModeTwiceDoesNothingAndModesStayCommon() {
        let log = EventLog<String>()
        let (modes, lateInA, callouts) = onLoopThread { [a] loop -> ([EvRunLoop.Mode], Bool, [String]) in
            let source = trackedSource(log)
            loop.add(source, forMode: .common)
            loop.addCommonMode(a)
            loop.addCommonMode(a)
            // Removing every common item does not shrink the set: a later common item joins `a`.
            loop.remove(source, forMode: .common)
            let late = keepAliveTimer()
            loop.add(late, forMode: .common)
            return (loop.allModes, loop.contains(late, forMode: a), log.all)
        }
        #expect(modes.filter { $0 == a }.count == 1)
        #expect(Array(callouts.prefix(2)) == ["schedule kCFRunLoopDefaultMode", "schedule a"])
        #expect(Set(callouts.dropFirst(2)) == ["cancel kCFRunLoopDefaultMode", "cancel a"])
        #expect(callouts.count == 4)
        #expect(lateInA)
    }

    @Test func R12_addingToCommonAddsToEveryCommonMode() {
        let log = EventLog<String>()
        let (seen, callouts) = onLoopThread { [a, b] loop -> ([String: Bool], [String]) in
            let other = EvRunLoop.Mode("other")
            loop.add(keepAliveTimer(), forMode: other)
            loop.addCommonMode(a)
            loop.addCommonMode(b)
            let source = trackedSource(log)
            let timer = keepAliveTimer()
            let observer = EvObserver(activities: .entry) { _, _ in }
            loop.add(source, forMode: .common)
            loop.add(timer, forMode: .common)
            loop.add(observer, forMode: .common)
            var seen: [String: Bool] = [:]
            for mode in [EvRunLoop.Mode.common, .default, a, b, other] {
                seen["source \(mode.name)"] = loop.contains(source, forMode: mode)
                seen["timer \(mode.name)"] = loop.contains(timer, forMode: mode)
                seen["observer \(mode.name)"] = loop.contains(observer, forMode: mode)
            }
            return (seen, log.all)
        }
        for item in ["source", "timer", "observer"] {
            for mode in ["kCFRunLoopCommonModes", "kCFRunLoopDefaultMode", "a", "b"] {
                #expect(seen["\(item) \(mode)"] == true, "\(item) in \(mode)")
            }
            #expect(seen["\(item) other"] == false, "\(item) is not in a mode outside the common set")
        }
        #expect(Set(callouts) == ["schedule kCFRunLoopDefaultMode", "schedule a", "schedule b"])
        #expect(callouts.count == 3)
    }

    @Test func R12_commonItemsActInEveryCommonMode() {
        let log = EventLog<String>()
        onLoopThread { [a] loop in
            loop.addCommonMode(a)
            loop.add(EvObserver(activities: .entry) { _, _ in log.append("entry \(loop.currentMode!.name)") }, forMode: .common)
            let timer = EvTimer(after: .zero, interval: .seconds(3600)) { _ in log.append("timer \(loop.currentMode!.name)") }
            loop.add(timer, forMode: .common)
            _ = loop.run(mode: a, timeout: .zero)
            timer.fireDate = .now
            _ = loop.run(mode: .default, timeout: .zero)
        }
        #expect(log.all == ["entry a", "timer a", "entry kCFRunLoopDefaultMode", "timer kCFRunLoopDefaultMode"])
    }

    @Test func R13_aModeMadeCommonLaterGetsTheCommonItemsAtOnce() {
        let log = EventLog<String>()
        let (contained, callouts) = onLoopThread { [a] loop -> ([Bool], [String]) in
            let source = trackedSource(log)
            let timer = EvTimer(after: .zero) { _ in log.append("timer \(loop.currentMode!.name)") }
            let observer = EvObserver(activities: .entry) { _, _ in log.append("entry \(loop.currentMode!.name)") }
            loop.add(source, forMode: .common)
            loop.add(timer, forMode: .common)
            loop.add(observer, forMode: .common)
            let before = [loop.contains(source, forMode: a), loop.contains(timer, forMode: a), loop.contains(observer, forMode: a)]
            log.append("addCommonMode")
            loop.addCommonMode(a)
            let after = [loop.contains(source, forMode: a), loop.contains(timer, forMode: a), loop.contains(observer, forMode: a)]
            _ = loop.run(mode: a, timeout: .zero)
            return (before + after, log.all)
        }
        #expect(contained == [false, false, false, true, true, true])
        #expect(callouts == ["schedule kCFRunLoopDefaultMode", "addCommonMode", "schedule a", "entry a", "timer a"])
    }

    /// R12, R13: the common set and the common items keep their order, whatever the process's
    /// hash seed: a common source is scheduled in the default mode and then in the modes in the
    /// order they were made common, and a mode made common takes the common sources in the order
    /// they were made common. (Eight of each: by chance, a hashed order matches 1 time in 40,320.)
    @Test func R12_R13_commonModesAndItemsKeepTheirOrder() {
        let modes = (0..<8).map { EvRunLoop.Mode("ordered.\(7 - $0)") }
        let late = EvRunLoop.Mode("ordered.late")
        let (scheduled, joined) = onLoopThread { loop -> ([String], [String]) in
            for mode in modes { loop.addCommonMode(mode) }
            let log = EventLog<String>()
            loop.add(trackedSource(log), forMode: .common)
            let scheduled = log.all
            let joins = EventLog<Int>()
            let sources = (0..<8).map { index in
                EvSource(schedule: { _, mode in if mode == late { joins.append(index) } }, perform: {})
            }
            for source in sources { loop.add(source, forMode: .common) }
            loop.addCommonMode(late)
            return (scheduled, joins.all.map(String.init))
        }
        #expect(scheduled == ["schedule kCFRunLoopDefaultMode"] + modes.map { "schedule \($0.name)" })
        #expect(joined == (0..<8).map(String.init))
    }

    /// C21: as CF's CFRunLoopContainsTimer, a common timer removed by name from its last mode is
    /// not contained in `.common` any more, yet it stays a common item: a mode made common later
    /// takes it, and then it is contained again.
    @Test func C21_aCommonTimerOutOfEveryModeIsNotContainedInCommon() {
        let (whileOut, inLate, afterJoining) = onLoopThread { [a] loop -> (Bool, Bool, Bool) in
            let timer = keepAliveTimer()
            loop.add(timer, forMode: .common)
            loop.remove(timer, forMode: .default)
            let whileOut = loop.contains(timer, forMode: .common)
            loop.addCommonMode(a)
            return (whileOut, loop.contains(timer, forMode: a), loop.contains(timer, forMode: .common))
        }
        #expect(!whileOut)
        #expect(inLate)
        #expect(afterJoining)
    }

    @Test func R14_removingFromCommonRemovesFromEveryCommonMode() {
        let log = EventLog<String>()
        let (contained, callouts) = onLoopThread { [a, b] loop -> ([Bool], [String]) in
            loop.addCommonMode(a)
            loop.addCommonMode(b)
            let source = trackedSource(log)
            let timer = keepAliveTimer()
            let observer = EvObserver(activities: .entry) { _, _ in }
            loop.add(source, forMode: .common)
            loop.add(timer, forMode: .common)
            loop.add(observer, forMode: .common)
            log.append("remove")
            loop.remove(source, forMode: .common)
            loop.remove(timer, forMode: .common)
            loop.remove(observer, forMode: .common)
            // A mode made common afterwards does not bring them back.
            let late = EvRunLoop.Mode("late")
            loop.addCommonMode(late)
            let contained = [EvRunLoop.Mode.common, .default, a, b, late].flatMap { mode in
                [loop.contains(source, forMode: mode), loop.contains(timer, forMode: mode), loop.contains(observer, forMode: mode)]
            }
            return (contained, log.all)
        }
        #expect(contained.allSatisfy { !$0 })
        let removal = callouts.split(separator: "remove", omittingEmptySubsequences: false)
        #expect(removal.count == 2)
        #expect(Set(removal.last ?? []) == ["cancel kCFRunLoopDefaultMode", "cancel a", "cancel b"])
        #expect(removal.last?.count == 3)
    }

    @Test func R14_removingFromOneNamedModeLeavesTheOthers() {
        let log = EventLog<String>()
        let (contained, runs, callouts) = onLoopThread { [a, b] loop -> ([String: Bool], [EvRunLoop.RunResult], [String]) in
            loop.addCommonMode(a)
            loop.addCommonMode(b)
            let source = trackedSource(log)
            loop.add(source, forMode: .common)
            loop.remove(source, forMode: a)
            // A timer added to two named modes and removed from one still fires in the other.
            let timer = EvTimer(after: .zero) { _ in log.append("timer \(loop.currentMode!.name)") }
            let x = EvRunLoop.Mode("x")
            let y = EvRunLoop.Mode("y")
            loop.add(timer, forMode: x)
            loop.add(timer, forMode: y)
            loop.remove(timer, forMode: x)
            var contained: [String: Bool] = [:]
            for mode in [EvRunLoop.Mode.common, .default, a, b] { contained["source \(mode.name)"] = loop.contains(source, forMode: mode) }
            contained["timer x"] = loop.contains(timer, forMode: x)
            contained["timer y"] = loop.contains(timer, forMode: y)
            let runs = [loop.run(mode: x, timeout: .seconds(30)), loop.run(mode: y, timeout: .seconds(30))]
            return (contained, runs, log.all)
        }
        #expect(contained == [
            "source kCFRunLoopCommonModes": true, "source kCFRunLoopDefaultMode": true, "source a": false, "source b": true,
            "timer x": false, "timer y": true,
        ])
        #expect(runs == [.finished, .finished])
        #expect(Set(callouts.prefix(3)) == ["schedule kCFRunLoopDefaultMode", "schedule a", "schedule b"])
        #expect(Array(callouts.dropFirst(3)) == ["cancel a", "timer y"])
    }

    @Test func R15_commonBlocksRunInWhicheverCommonModeIsRunningThen() {
        let log = EventLog<String>()
        onLoopThread { [a] loop in
            loop.add(keepAliveTimer(), forMode: a)
            loop.add(keepAliveTimer(), forMode: .default)
            loop.perform(inModes: [.common]) { log.append("first in \(loop.currentMode!.name)") }
            log.append("run a")
            _ = loop.run(mode: a, timeout: .zero)  // `a` is not common: the block waits
            loop.addCommonMode(a)
            log.append("run a")
            _ = loop.run(mode: a, timeout: .zero)  // membership is checked now, not when scheduled
            loop.perform(inModes: [.common]) { log.append("second in \(loop.currentMode!.name)") }
            log.append("run default")
            _ = loop.run(mode: .default, timeout: .zero)
        }
        #expect(log.all == ["run a", "run a", "first in a", "run default", "second in kCFRunLoopDefaultMode"])
    }

    // MARK: Empty modes

    @Test func R16_observersDoNotCountAsContent() {
        let log = EventLog<String>()
        let result = onLoopThread { [a] loop -> EvRunLoop.RunResult in
            for order in 0..<3 { loop.add(EvObserver(activities: .allActivities, order: order) { _, _ in log.append("called") }, forMode: a) }
            return loop.run(mode: a, timeout: .seconds(30))
        }
        #expect(result == .finished)
        #expect(log.count == 0)
    }

    @Test func R16_aPendingBlockCountsAsContent() {
        let log = EventLog<String>()
        let results = onLoopThread { [a, b] loop -> [EvRunLoop.RunResult] in
            // A mode with only an observer and a pending block is run.
            loop.perform(inModes: [a]) { log.append("block a") }
            loop.add(phaseLogger(log), forMode: a)
            let first = loop.run(mode: a, timeout: .zero)
            // Through .common too, while the mode is common.
            loop.add(phaseLogger(log), forMode: b)
            loop.addCommonMode(b)
            loop.perform(inModes: [.common]) { log.append("block b") }
            log.append("run b")
            let second = loop.run(mode: b, timeout: .zero)
            return [first, second]
        }
        #expect(results == [.timedOut, .timedOut])
        #expect(log.all == [
            "entry", "beforeTimers", "beforeSources", "block a", "exit",
            "run b", "entry", "beforeTimers", "beforeSources", "block b", "exit",
        ])
    }

    @Test func R16_aPendingBlockMakesAModeNothingWasAddedToRunnable() {
        // CF's CFRunLoopPerformBlock creates the mode it is given, so the block runs.
        let ran = onLoopThread { [a] loop -> (EvRunLoop.RunResult, Bool) in
            let ran = Box(false)
            loop.perform(inModes: [a]) { ran.set(true) }
            return (loop.run(mode: a, timeout: .zero), ran.get)
        }
        #expect(ran.0 == .timedOut)
        #expect(ran.1)
    }

    @Test func R16_aCommonBlockDoesNotCountForAModeThatIsNotCommon() {
        let log = EventLog<String>()
        let result = onLoopThread { [a] loop -> EvRunLoop.RunResult in
            loop.add(phaseLogger(log), forMode: a)
            loop.perform(inModes: [.common]) { log.append("block") }
            return loop.run(mode: a, timeout: .seconds(30))
        }
        #expect(result == .finished)
        #expect(log.count == 0)
    }

    @Test func R16_invalidatedItemsDoNotCount() {
        let log = EventLog<String>()
        let results = onLoopThread { [a] loop -> [EvRunLoop.RunResult] in
            loop.add(phaseLogger(log), forMode: a)
            let timer = keepAliveTimer()
            let source = EvSource {}
            loop.add(timer, forMode: a)
            loop.add(source, forMode: a)
            let before = loop.run(mode: a, timeout: .zero)
            log.append("invalidate")
            timer.invalidate()
            source.invalidate()
            return [before, loop.run(mode: a, timeout: .seconds(30))]
        }
        #expect(results == [.timedOut, .finished])
        #expect(log.all == ["entry", "beforeTimers", "beforeSources", "exit", "invalidate"])
    }

    @Test func R18_runningAnEmptyModeReturnsFinishedWithoutEntryOrExit() {
        let log = EventLog<String>()
        let results = onLoopThread { loop -> [EvRunLoop.RunResult] in
            loop.add(phaseLogger(log), forMode: .default)
            return [
                loop.run(mode: .default),
                loop.run(mode: .default, timeout: .zero),
                loop.run(mode: .default, timeout: .seconds(30), returnAfterSourceHandled: true),
                loop.run(until: .now + .seconds(30)),
            ]
        }
        #expect(results == [.finished, .finished, .finished, .finished])
        #expect(log.count == 0)
    }
}
