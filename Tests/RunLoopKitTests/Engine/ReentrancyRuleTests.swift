import Foundation
import RunLoopKit
import Testing

/// Nested runs, R58–R59.
///
/// R60 (the main loop servicing libdispatch's main queue) is covered by `MainThreadTests`.
@Suite struct ReentrancyRuleTests {
    private static let other = EvRunLoop.Mode("rules-b.reentrancy.other")

    // MARK: R58

    @Test func R58_nestedRunInAnotherModeHasItsOwnEntryExitAndResult() {
        let outcome = onLoopThread { loop -> (log: [String], nested: EvRunLoop.RunResult?, outer: EvRunLoop.RunResult) in
            let log = EventLog<String>()
            loop.add(recorder(log, "default"), forMode: .default)
            loop.add(recorder(log, "other"), forMode: Self.other)
            let source = EvSource { log.append("source in \(label(loop.currentMode))") }
            loop.add(source, forMode: Self.other)
            loop.add(keepAliveTimer(), forMode: .default)
            let nested = Box<EvRunLoop.RunResult?>(nil)
            let timer = EvTimer(fireAt: .now - .milliseconds(1)) { _ in
                log.append("timer begin in \(label(loop.currentMode))")
                source.signal()
                nested.set(loop.run(mode: Self.other, timeout: .seconds(30), returnAfterSourceHandled: true))
                log.append("timer end in \(label(loop.currentMode))")
                loop.perform(inModes: [.default]) {
                    log.append("stop")
                    loop.stop()
                }
            }
            loop.add(timer, forMode: .default)
            let outer = loop.run(mode: .default, timeout: .seconds(30))
            return (log.all, nested.get, outer)
        }
        #expect(
            outcome.log == [
                "default entry", "default beforeTimers", "default beforeSources", "default beforeWaiting", "default afterWaiting",
                "timer begin in default",
                "other entry", "other beforeTimers", "other beforeSources", "source in other", "other exit",
                "timer end in default", "stop", "default exit",
            ])
        #expect(outcome.nested == .handledSource)
        #expect(outcome.outer == .stopped)
    }

    @Test func R58_nestedRunInTheSameModeHasItsOwnEntryExitAndTimeout() {
        let outcome = onLoopThread { loop -> (log: [String], nested: EvRunLoop.RunResult?, outer: EvRunLoop.RunResult) in
            let log = EventLog<String>()
            loop.add(recorder(log, nil), forMode: .default)
            loop.add(keepAliveTimer(), forMode: .default)
            let nested = Box<EvRunLoop.RunResult?>(nil)
            let timer = EvTimer(fireAt: .now - .milliseconds(1)) { _ in
                log.append("timer begin")
                nested.set(loop.run(mode: .default, timeout: .zero))
                log.append("timer end")
                loop.perform(inModes: [.default]) { loop.stop() }
            }
            loop.add(timer, forMode: .default)
            let outer = loop.run(mode: .default, timeout: .seconds(30))
            return (log.all, nested.get, outer)
        }
        #expect(
            outcome.log == [
                "entry", "beforeTimers", "beforeSources", "beforeWaiting", "afterWaiting",
                "timer begin", "entry", "beforeTimers", "beforeSources", "exit", "timer end",
                "exit",
            ])
        #expect(outcome.nested == .timedOut)
        #expect(outcome.outer == .stopped)
    }

    @Test func R58_stoppingANestedRunLeavesTheOuterRunGoing() {
        let outcome = onLoopThread { loop -> (nested: [EvRunLoop.RunResult], outer: EvRunLoop.RunResult, log: [String]) in
            let log = EventLog<String>()
            let stopper = EvSource {
                log.append("stop nested")
                loop.stop()
            }
            loop.add(stopper, forMode: Self.other)
            let later = EvSource {
                log.append("outer still running")
                loop.stop()
            }
            loop.add(later, forMode: .default)
            let nested = EventLog<EvRunLoop.RunResult>()
            loop.add(
                EvTimer(fireAt: .now - .milliseconds(1)) { _ in
                    stopper.signal()
                    nested.append(loop.run(mode: Self.other, timeout: .seconds(30)))
                    nested.append(loop.run(mode: Self.other, timeout: .zero))  // its own (zero) timeout
                    later.signal()  // performed in the outer run's next iteration
                }, forMode: .default)
            let outer = loop.run(mode: .default, timeout: .seconds(30))
            return (nested.all, outer, log.all)
        }
        #expect(outcome.nested == [.stopped, .timedOut])
        #expect(outcome.outer == .stopped)
        #expect(outcome.log == ["stop nested", "outer still running"])
    }

    // MARK: R59

    /// A repeating timer, due now, whose first callout runs the loop nested until a second timer
    /// (`endAfter`) stops it, after `first(timer)`; its second callout stops the outer run. R59
    /// holds if the timer's second callout comes only after its first one ended.
    private static func timerNestingARunInItsFirstCallout(
        interval: Duration, endAfter: Duration, first: @escaping @Sendable (EvTimer) -> Void = { _ in }
    ) -> (log: [String], nested: EvRunLoop.RunResult?, outer: EvRunLoop.RunResult) {
        onLoopThread { loop in
            let log = EventLog<String>()
            let calls = Box(0)
            let nested = Box<EvRunLoop.RunResult?>(nil)
            let timer = EvTimer(fireAt: .now - .milliseconds(1), interval: interval) { timer in
                let call = calls.update { $0 += 1; return $0 }
                log.append("timer \(call) begin")
                if call == 1 {
                    first(timer)
                    let end = EvTimer(after: endAfter) { _ in
                        log.append("end of nested run")
                        loop.stop()
                    }
                    loop.add(end, forMode: .default)
                    nested.set(loop.run(mode: .default, timeout: .seconds(30)))
                } else {
                    loop.stop()
                }
                log.append("timer \(call) end")
            }
            loop.add(timer, forMode: .default)
            let outer = loop.run(mode: .default, timeout: .seconds(30))
            timer.invalidate()
            return (log.all, nested.get, outer)
        }
    }

    @Test func R59_timerIsNotFiredAgainWhileItsOwnCalloutRuns() {
        // Due every 2 ms: the nested run lasts several intervals (until `end` fires).
        let outcome = Self.timerNestingARunInItsFirstCallout(interval: .milliseconds(2), endAfter: .milliseconds(20))
        #expect(outcome.log == ["timer 1 begin", "end of nested run", "timer 1 end", "timer 2 begin", "timer 2 end"])
        #expect(outcome.nested == .stopped)
        #expect(outcome.outer == .stopped)
    }

    @Test func R59_timerDueAgainDuringItsOwnCalloutIsNotFiredByANestedRun() {
        // Re-dated to now, later than the date being fired, so kept (R44) — and already due
        // during the nested run.
        let outcome = Self.timerNestingARunInItsFirstCallout(interval: .seconds(3600), endAfter: .milliseconds(5)) { timer in
            timer.fireDate = .now
        }
        #expect(outcome.log == ["timer 1 begin", "end of nested run", "timer 1 end", "timer 2 begin", "timer 2 end"])
        #expect(outcome.nested == .stopped)
        #expect(outcome.outer == .stopped)
    }

    @Test func R59_sourceSignalledDuringItsPerformRunsInANestedRun() {
        let outcome = onLoopThread { loop -> (log: [String], nested: EvRunLoop.RunResult?, outer: EvRunLoop.RunResult) in
            let log = EventLog<String>()
            let calls = Box(0)
            let nested = Box<EvRunLoop.RunResult?>(nil)
            let me = Box<EvSource?>(nil)
            defer { me.set(nil) }  // the item's closure holds this box: break the cycle
            let source = EvSource {
                let call = calls.update { $0 += 1; return $0 }
                log.append("perform \(call) begin")
                if call == 1 {
                    me.get!.signal()
                    nested.set(loop.run(mode: .default, timeout: .seconds(30), returnAfterSourceHandled: true))
                }
                log.append("perform \(call) end")
            }
            me.set(source)
            loop.add(source, forMode: .default)
            source.signal()
            let outer = loop.run(mode: .default, timeout: .seconds(30), returnAfterSourceHandled: true)
            return (log.all, nested.get, outer)
        }
        #expect(outcome.log == ["perform 1 begin", "perform 2 begin", "perform 2 end", "perform 1 end"])
        #expect(outcome.nested == .handledSource)
        #expect(outcome.outer == .handledSource)
    }
}

private func label(_ mode: EvRunLoop.Mode?) -> String {
    switch mode {
    case nil: "none"
    case .default?: "default"
    case let mode?: mode.name == "rules-b.reentrancy.other" ? "other" : mode.name
    }
}

/// Logs each activity by name, optionally prefixed with a mode label.
private func recorder(_ log: EventLog<String>, _ prefix: String?) -> EvObserver {
    EvObserver(activities: .allActivities) { _, activity in
        log.append(prefix.map { "\($0) \(activity)" } ?? activity.description)
    }
}
