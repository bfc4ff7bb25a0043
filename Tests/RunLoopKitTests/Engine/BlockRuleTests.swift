import Foundation
import RunLoopKit
import Testing

/// Perform-blocks, R54–R57.
@Suite struct BlockRuleTests {
    private static let other = EvRunLoop.Mode("rules-b.blocks.other")
    private static let third = EvRunLoop.Mode("rules-b.blocks.third")

    // MARK: R54

    @Test func R54_blockRunsOnceInTheFirstBlocksStepOfAMatchingMode() {
        let logs = onLoopThread { loop -> [[String]] in
            let log = EventLog<String>()
            loop.add(recorder(log, prefix: "default"), forMode: .default)
            loop.add(recorder(log, prefix: "other"), forMode: Self.other)
            loop.add(keepAliveTimer(), forMode: .default)
            loop.add(keepAliveTimer(), forMode: Self.other)
            loop.perform(inModes: [Self.other]) { log.append("block") }
            var logs: [[String]] = []
            for mode in [EvRunLoop.Mode.default, Self.other, Self.other] {
                loop.run(mode: mode, timeout: .zero)
                logs.append(log.all)  // cumulative; compared run by run below
            }
            return logs
        }
        let runs = slices(logs)
        #expect(runs[0] == ["default entry", "default beforeTimers", "default beforeSources", "default exit"])
        #expect(runs[1] == ["other entry", "other beforeTimers", "other beforeSources", "block", "other exit"])
        #expect(runs[2] == ["other entry", "other beforeTimers", "other beforeSources", "other exit"])
    }

    @Test func R54_blocksForOtherModesKeepTheirPlaceAndASetOfModesRunsOnce() {
        let logs = onLoopThread { loop -> [[String]] in
            let log = EventLog<String>()
            loop.add(keepAliveTimer(), forMode: .default)
            loop.add(keepAliveTimer(), forMode: Self.other)
            loop.perform(inModes: [Self.other]) { log.append("b1 other") }
            loop.perform(inModes: [.default]) { log.append("b2 default") }
            loop.perform(inModes: [Self.other]) { log.append("b3 other") }
            loop.perform(inModes: [Self.other, .default]) { log.append("b4 both") }
            loop.perform(inModes: [Self.other]) { log.append("b5 other") }
            var logs: [[String]] = []
            for mode in [EvRunLoop.Mode.default, Self.other, .default, Self.other] {
                loop.run(mode: mode, timeout: .zero)
                logs.append(log.all)
            }
            return logs
        }
        #expect(slices(logs) == [["b2 default", "b4 both"], ["b1 other", "b3 other", "b5 other"], [], []])
    }

    @Test func R54_blockScheduledByASourceRunsInStep5BeforeTheTimers() {
        let log = onLoopThread { loop -> [String] in
            let log = EventLog<String>()
            loop.add(recorder(log, prefix: nil), forMode: .default)
            let source = EvSource {
                log.append("source")
                loop.perform(inModes: [.default]) { log.append("block") }
            }
            loop.add(source, forMode: .default)
            loop.add(EvTimer(fireAt: .now - .milliseconds(1)) { _ in log.append("timer") }, forMode: .default)
            loop.add(keepAliveTimer(), forMode: .default)
            source.signal()
            loop.run(mode: .default, timeout: .zero)
            return log.all
        }
        // Step 5 (after the sources) comes before step 11 (timers); step 12 would come after them.
        #expect(log == ["entry", "beforeTimers", "beforeSources", "source", "block", "timer", "exit"])
    }

    @Test func R54_blockScheduledByATimerRunsInStep12OfTheSameIteration() {
        let log = onLoopThread { loop -> [String] in
            let log = EventLog<String>()
            loop.add(recorder(log, prefix: nil), forMode: .default)
            loop.add(
                EvTimer(fireAt: .now - .milliseconds(1)) { _ in
                    log.append("timer")
                    loop.perform(inModes: [.default]) { log.append("block") }
                }, forMode: .default)
            loop.add(keepAliveTimer(), forMode: .default)
            loop.run(mode: .default, timeout: .zero)  // one iteration: a later step 3 would be too late
            return log.all
        }
        #expect(log == ["entry", "beforeTimers", "beforeSources", "timer", "block", "exit"])
    }

    // MARK: R55

    @Test func R55_blocksRunInTheOrderTheyWereScheduled() {
        let log = onLoopThread { loop -> [Int] in
            let log = EventLog<Int>()
            loop.add(keepAliveTimer(), forMode: .default)
            let scheduled = Latch()
            Thread {
                for index in 0..<20 { loop.perform(inModes: index.isMultiple(of: 2) ? [.common] : [.default]) { log.append(index) } }
                scheduled.open()
            }.start()
            scheduled.wait()
            loop.run(mode: .default, timeout: .zero)
            return log.all
        }
        #expect(log == Array(0..<20))
    }

    @Test func R55_blockScheduledByARunningBlockWaitsForTheNextBlocksStep() {
        let log = onLoopThread { loop -> [String] in
            let log = EventLog<String>()
            loop.perform(inModes: [.default]) {
                log.append("A")
                loop.perform(inModes: [.default]) { log.append("B") }
            }
            loop.add(EvTimer(fireAt: .now - .milliseconds(1)) { _ in log.append("timer") }, forMode: .default)
            loop.add(keepAliveTimer(), forMode: .default)
            loop.run(mode: .default, timeout: .zero)
            return log.all
        }
        // A runs in step 3; B not in that same step but in step 12, after the timers.
        #expect(log == ["A", "timer", "B"])
    }

    // MARK: R56

    @Test func R56_schedulingABlockDoesNotWakeTheLoop() {
        let beforeWaiting = Latch()
        let log = onLoopThread { loop -> [String] in
            let log = EventLog<String>()
            loop.add(recorder(log, prefix: nil), forMode: .default)
            let waker = EvTimer(after: .seconds(3600)) { _ in log.append("timer") }
            loop.add(waker, forMode: .default)
            loop.add(
                EvObserver(activities: .beforeWaiting, repeats: false) { _, _ in
                    // Scheduled before the wait: a wake-up now would end the coming sleep at once (R30, C52).
                    loop.perform(inModes: [.default]) { log.append("block") }
                    beforeWaiting.open()
                }, forMode: .default)
            Thread {
                guard blocksWaitUntilAsleep(loop, after: beforeWaiting) else { return }
                waker.fireDate = .now  // the only thing that ends the sleep (R44 re-arms; C75 wakes)
            }.start()
            let result = loop.run(mode: .default, timeout: .seconds(30))
            log.append("\(result)")
            return log.all
        }
        #expect(log == ["entry", "beforeTimers", "beforeSources", "beforeWaiting", "afterWaiting", "timer", "block", "exit", "finished"])
    }

    // MARK: R57

    @Test func R57_pendingBlockMakesAnOtherwiseEmptyModeRun() {
        let (empty, withBlock, afterwards) = onLoopThread {
            loop -> (([String], EvRunLoop.RunResult), ([String], EvRunLoop.RunResult), ([String], EvRunLoop.RunResult)) in
            let log = EventLog<String>()
            loop.add(recorder(log, prefix: nil), forMode: Self.other)  // the mode exists but is empty (R16)
            func run() -> ([String], EvRunLoop.RunResult) {
                let before = log.count
                let result = loop.run(mode: Self.other, timeout: .zero)
                return (Array(log.all.dropFirst(before)), result)
            }
            let empty = run()
            loop.perform(inModes: [Self.other]) { log.append("block") }
            let withBlock = run()
            return (empty, withBlock, run())
        }
        #expect(empty.0.isEmpty)
        #expect(empty.1 == .finished)
        #expect(withBlock.0 == ["entry", "beforeTimers", "beforeSources", "block", "exit"])
        #expect(withBlock.1 == .timedOut)
        #expect(afterwards.0.isEmpty)
        #expect(afterwards.1 == .finished)
    }

    /// As CFRunLoopPerformBlock does (checked on the real CF): scheduling a block for a mode never
    /// used before brings the mode into existence, so running it runs the block.
    @Test func R57_pendingBlockForANeverUsedModeMakesItRun() {
        let (log, result) = onLoopThread { loop -> ([String], EvRunLoop.RunResult) in
            let log = EventLog<String>()
            let fresh = EvRunLoop.Mode("rules-b.blocks.never-used")
            loop.perform(inModes: [fresh]) { log.append("block") }
            let result = loop.run(mode: fresh, timeout: .zero)
            return (log.all, result)
        }
        #expect(log == ["block"])
        #expect(result == .timedOut)
    }

    @Test func R57_pendingCommonBlockCountsForACommonModeOnly() {
        let (common, notCommon) = onLoopThread { loop -> ([String], [String]) in
            let log = EventLog<String>()
            loop.addCommonMode(Self.other)
            loop.add(recorder(log, prefix: "other"), forMode: Self.other)
            loop.add(recorder(log, prefix: "third"), forMode: Self.third)  // exists, not common
            loop.perform(inModes: [.common]) { log.append("block") }
            let notCommonResult = loop.run(mode: Self.third, timeout: .zero)
            let notCommon = log.all + ["\(notCommonResult)"]
            let before = log.count
            let commonResult = loop.run(mode: Self.other, timeout: .zero)
            return (Array(log.all.dropFirst(before)) + ["\(commonResult)"], notCommon)
        }
        #expect(notCommon == ["finished"])
        #expect(common == ["other entry", "other beforeTimers", "other beforeSources", "block", "other exit", "timedOut"])
    }
}

/// Logs each activity by name, optionally prefixed with a mode label.
private func recorder(_ log: EventLog<String>, prefix: String?) -> EvObserver {
    EvObserver(activities: .allActivities) { _, activity in
        log.append(prefix.map { "\($0) \(activity)" } ?? activity.description)
    }
}

/// Turns cumulative snapshots of one log into what was added between consecutive snapshots.
private func slices(_ snapshots: [[String]]) -> [[String]] {
    var previous = 0
    return snapshots.map { snapshot in
        defer { previous = snapshot.count }
        return Array(snapshot.dropFirst(previous))
    }
}

/// Waits until the loop's BeforeWaiting observer opened `beforeWaiting` and the loop is asleep.
private func blocksWaitUntilAsleep(_ loop: EvRunLoop, after beforeWaiting: Latch) -> Bool {
    guard beforeWaiting.wait() else { return false }
    let limit = ContinuousClock.now + .seconds(30)
    while !loop.isWaiting {
        if ContinuousClock.now > limit { return false }
        sched_yield()
    }
    return true
}
