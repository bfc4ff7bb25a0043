import Foundation
import RunLoopKit
import Testing
#if canImport(Glibc)
import Glibc
#endif




/// R19–R26: the phases of one run, in order, and how a run ends.
@Suite struct RunOrderRuleTests {
    @Test func R19_entryAndExitFireOncePerRunInTheModeRun() {
        let mode = EvRunLoop.Mode("r19")
        let log = EventLog<String>()
        let result = onLoopThread { loop -> EvRunLoop.RunResult in
            loop.add(EvObserver(activities: [.entry, .exit]) { _, activity in
                log.append("\(activity) \(loop.currentMode?.name ?? "nil")")
            }, forMode: mode)
            loop.add(EvObserver(activities: .allActivities) { _, _ in log.append("default observer") }, forMode: .default)
            loop.add(EvObserver(activities: .beforeTimers) { _, _ in log.append("iteration") }, forMode: mode)
            // A repeating timer that ends the run after its third fire: three iterations or more.
            let fires = Box(0)
            loop.add(EvTimer(after: .zero, interval: .nanoseconds(1)) { timer in
                if fires.update({ $0 += 1; return $0 }) == 3 { timer.invalidate() }
            }, forMode: mode)
            return loop.run(mode: mode, timeout: .seconds(30))
        }
        #expect(result == .finished)
        #expect(log.all.first == "entry r19")
        #expect(log.all.last == "exit r19")
        #expect(log.all.filter { $0.hasPrefix("entry") || $0.hasPrefix("exit") }.count == 2)
        #expect(log.all.filter { $0 == "iteration" }.count >= 3)
        #expect(!log.all.contains("default observer"))
    }

    @Test func R20_oneIterationRunsItsStepsInCFsOrder() {
        // The same scenario on the real CFRunLoop logs exactly this sequence.
        let log = EventLog<String>()
        let result = onLoopThread { loop -> EvRunLoop.RunResult in
            loop.add(phaseLogger(log), forMode: .default)
            let source = EvSource {
                log.append("source")
                loop.perform(inModes: [.default]) { log.append("block after sources") }
            }
            loop.add(source, forMode: .default)
            source.signal()
            loop.perform(inModes: [.default]) { log.append("block") }
            loop.add(EvTimer(after: .zero) { _ in
                log.append("timer")
                loop.perform(inModes: [.default]) { log.append("block after timers") }
            }, forMode: .default)
            loop.add(once(.beforeWaiting) { loop.wakeUp() }, forMode: .default)
            loop.add(once(.afterWaiting) {
                loop.perform(inModes: [.default]) { log.append("block after waking") }
                loop.stop()
            }, forMode: .default)
            return loop.run(mode: .default, timeout: .seconds(30))
        }
        #expect(result == .stopped)
        #expect(log.all == [
            "entry",
            // Iteration 1: a source was performed, so it polls: no waiting phases (R21).
            "beforeTimers", "beforeSources", "block", "source", "block after sources", "timer", "block after timers",
            // Iteration 2: nothing to do, so it sleeps until the wake-up.
            "beforeTimers", "beforeSources", "beforeWaiting", "afterWaiting", "block after waking",
            "exit",
        ])
    }

    @Test func R21_pollIterationsSkipTheWaitingPhases() {
        let log = EventLog<String>()
        let result = onLoopThread { loop -> EvRunLoop.RunResult in
            loop.add(phaseLogger(log), forMode: .default)
            let performs = Box(0)
            let sourceBox = Box<EvSource?>(nil)
            defer { sourceBox.set(nil) }  // the item's closure holds this box: break the cycle
            let source = EvSource {
                let count = performs.update { $0 += 1; return $0 }
                log.append("source \(count)")
                if count < 3 { sourceBox.get?.signal() } else { loop.stop() }
            }
            sourceBox.set(source)
            loop.add(source, forMode: .default)
            source.signal()
            return loop.run(mode: .default, timeout: .seconds(30))
        }
        #expect(result == .stopped)
        #expect(log.all == [
            "entry",
            "beforeTimers", "beforeSources", "source 1",
            "beforeTimers", "beforeSources", "source 2",
            "beforeTimers", "beforeSources", "source 3",
            "exit",
        ])
    }

    @Test func R22_signallingASourceOrSchedulingABlockDoesNotEndTheSleep() {
        let log = EventLog<String>()
        let (result, stillSignalled) = onLoopThread { loop -> (EvRunLoop.RunResult, Bool) in
            loop.add(keepAliveTimer(), forMode: .default)
            loop.add(phaseLogger(log), forMode: .default)
            let source = EvSource { log.append("source") }
            loop.add(source, forMode: .default)
            // Right before the sleep, without wakeUp(): only the run's timeout ends the sleep.
            loop.add(once(.beforeWaiting) {
                source.signal()
                loop.perform(inModes: [.default]) { log.append("block") }
            }, forMode: .default)
            return (loop.run(mode: .default, timeout: .milliseconds(200)), source.isSignalled)
        }
        #expect(result == .timedOut)
        #expect(stillSignalled)
        // Woken early, the loop would have gone round again and performed the source.
        #expect(log.all == ["entry", "beforeTimers", "beforeSources", "beforeWaiting", "afterWaiting", "block", "exit"])
    }

    @Test func R22_wakeUpAfterSignallingEndsTheSleep() {
        let log = EventLog<String>()
        let result = onLoopThread { loop -> EvRunLoop.RunResult in
            loop.add(keepAliveTimer(), forMode: .default)
            loop.add(phaseLogger(log), forMode: .default)
            let source = EvSource { log.append("source") }
            loop.add(source, forMode: .default)
            loop.add(once(.beforeWaiting) {
                source.signal()
                loop.wakeUp()
            }, forMode: .default)
            return loop.run(mode: .default, timeout: .seconds(30), returnAfterSourceHandled: true)
        }
        #expect(result == .handledSource)
        #expect(log.all == [
            "entry", "beforeTimers", "beforeSources", "beforeWaiting", "afterWaiting",
            "beforeTimers", "beforeSources", "source", "exit",
        ])
    }

    @Test func R22_theModesTimerEndsTheSleep() {
        let log = EventLog<String>()
        let result = onLoopThread { loop -> EvRunLoop.RunResult in
            loop.add(phaseLogger(log), forMode: .default)
            loop.add(EvTimer(after: .milliseconds(20)) { _ in log.append("timer") }, forMode: .default)
            return loop.run(mode: .default, timeout: .seconds(30))
        }
        // Not woken by the timer, the run would sleep until its timeout and report timedOut.
        #expect(result == .finished)
        #expect(log.all == ["entry", "beforeTimers", "beforeSources", "beforeWaiting", "afterWaiting", "timer", "exit"])
    }

    @Test func R22_aTimerOfAnotherModeDoesNotEndTheSleep() {
        let log = EventLog<String>()
        let result = onLoopThread { loop -> EvRunLoop.RunResult in
            loop.add(keepAliveTimer(), forMode: .default)
            loop.add(phaseLogger(log), forMode: .default)
            loop.add(EvTimer(after: .milliseconds(1)) { _ in log.append("other mode's timer") }, forMode: EvRunLoop.Mode("other"))
            return loop.run(mode: .default, timeout: .milliseconds(200))
        }
        #expect(result == .timedOut)
        #expect(log.all == ["entry", "beforeTimers", "beforeSources", "beforeWaiting", "afterWaiting", "exit"])
    }

    @Test func R23_isWaitingIsTrueOnlyWhileTheLoopSleeps() {
        let seen = EventLog<String>()
        let result = onLoopThread { loop -> EvRunLoop.RunResult in
            seen.append("idle \(loop.isWaiting)")
            loop.add(EvObserver(activities: .allActivities) { _, activity in seen.append("\(activity) \(loop.isWaiting)") }, forMode: .default)
            let busy = Latch()
            let checked = Latch()
            let asleep = Latch()
            let source = EvSource {
                busy.open()
                checked.wait()
            }
            loop.add(source, forMode: .default)
            source.signal()
            loop.add(once(.beforeWaiting) { asleep.open() }, forMode: .default)
            loop.add(once(.afterWaiting) { loop.stop() }, forMode: .default)
            Thread {
                busy.wait()
                seen.append("from another thread, while a callout runs: \(loop.isWaiting)")
                checked.open()
                asleep.wait()
                seen.append("from another thread, after beforeWaiting: \(spinUntil { loop.isWaiting })")
                loop.wakeUp()
            }.start()
            let result = loop.run(mode: .default, timeout: .seconds(30))
            seen.append("after the run \(loop.isWaiting)")
            return result
        }
        #expect(result == .stopped)
        #expect(seen.all == [
            "idle false",
            "entry false", "beforeTimers false", "beforeSources false",
            "from another thread, while a callout runs: false",
            "beforeTimers false", "beforeSources false",
            "beforeWaiting false",  // as in CF: set once the BeforeWaiting callouts are done
            "from another thread, after beforeWaiting: true",
            "afterWaiting false", "exit false",
            "after the run false",
        ])
    }

    // MARK: Results (R24)

    @Test func R24_handledSourceWinsOverTimeoutAndStop() {
        let result = onLoopThread { loop -> EvRunLoop.RunResult in
            let source = EvSource { loop.stop() }
            loop.add(source, forMode: .default)
            source.signal()
            return loop.run(mode: .default, timeout: .zero, returnAfterSourceHandled: true)
        }
        #expect(result == .handledSource)
    }

    @Test func R24_timedOutWinsOverStopped() {
        let result = onLoopThread { loop -> EvRunLoop.RunResult in
            loop.add(keepAliveTimer(), forMode: .default)
            loop.add(once(.beforeSources) { loop.stop() }, forMode: .default)
            return loop.run(mode: .default, timeout: .zero)
        }
        #expect(result == .timedOut)
    }

    @Test func R24_stoppedWinsOverFinished() {
        let result = onLoopThread { loop -> EvRunLoop.RunResult in
            loop.add(EvTimer(after: .zero) { _ in loop.stop() }, forMode: .default)
            return loop.run(mode: .default, timeout: .seconds(30))
        }
        #expect(result == .stopped)
    }

    @Test func R24_finishedOnceTheModeBecomesEmpty() {
        let log = EventLog<String>()
        let result = onLoopThread { loop -> EvRunLoop.RunResult in
            loop.add(phaseLogger(log, [.entry, .exit]), forMode: .default)
            let source = EvSource {}
            loop.add(source, forMode: .default)
            loop.add(EvTimer(after: .zero) { _ in
                log.append("timer")
                source.invalidate()
            }, forMode: .default)
            return loop.run(mode: .default, timeout: .seconds(30))
        }
        #expect(result == .finished)
        #expect(log.all == ["entry", "timer", "exit"])
    }

    @Test func R24_timersAndBlocksAreNotHandledSources() {
        let log = EventLog<String>()
        let result = onLoopThread { loop -> EvRunLoop.RunResult in
            loop.add(EvSource {}, forMode: .default)  // never signalled
            loop.perform(inModes: [.default]) { log.append("block") }
            loop.add(EvTimer(after: .zero) { _ in
                log.append("timer")
                loop.stop()
            }, forMode: .default)
            return loop.run(mode: .default, timeout: .seconds(30), returnAfterSourceHandled: true)
        }
        #expect(result == .stopped)
        #expect(log.all == ["block", "timer"])
    }

    @Test func R24_aHandledSourceEndsTheRunOnlyWhenAsked() {
        let log = EventLog<String>()
        let result = onLoopThread { loop -> EvRunLoop.RunResult in
            let source = EvSource { log.append("source") }
            loop.add(source, forMode: .default)
            source.signal()
            loop.add(EvTimer(after: .zero) { _ in
                log.append("timer")
                source.invalidate()
            }, forMode: .default)
            return loop.run(mode: .default, timeout: .seconds(30), returnAfterSourceHandled: false)
        }
        #expect(result == .finished)
        #expect(log.all == ["source", "timer"])
    }

    // MARK: Timeouts

    @Test(arguments: [Duration.zero, .nanoseconds(-1), .seconds(-3600)])
    func R25_aZeroTimeoutRunsOnePollingIterationWithEntryAndExit(_ timeout: Duration) {
        let log = EventLog<String>()
        let result = onLoopThread { loop -> EvRunLoop.RunResult in
            loop.add(keepAliveTimer(), forMode: .default)
            loop.add(phaseLogger(log), forMode: .default)
            return loop.run(mode: .default, timeout: timeout)
        }
        #expect(result == .timedOut)
        #expect(log.all == ["entry", "beforeTimers", "beforeSources", "exit"])
    }

    @Test func R25_aZeroTimeoutPerformsASourceOnceEvenIfItSignalsItselfAgain() {
        let performs = Box(0)
        let results = onLoopThread { loop -> [EvRunLoop.RunResult] in
            let sourceBox = Box<EvSource?>(nil)
            defer { sourceBox.set(nil) }  // the item's closure holds this box: break the cycle
            let source = EvSource {
                performs.update { $0 += 1 }
                sourceBox.get?.signal()
            }
            sourceBox.set(source)
            loop.add(source, forMode: .default)
            source.signal()
            let first = loop.run(mode: .default, timeout: .zero)
            let second = loop.run(mode: .default, timeout: .zero, returnAfterSourceHandled: true)
            return [first, second]
        }
        #expect(results == [.timedOut, .handledSource])
        #expect(performs.get == 2)
    }

    @Test(arguments: [
        Duration.seconds(Int64.max),
        Duration(secondsComponent: Int64.max, attosecondsComponent: 999_999_999_999_999_999),
        .seconds(4_000_000_000),  // 126 years: no saturation, a real far deadline
        .seconds(1e10),  // CFRunLoopRun's own "forever"
    ])
    func R26_aHugeTimeoutMeansNoDeadline(_ timeout: Duration) {
        let log = EventLog<String>()
        let result = onLoopThread { loop -> EvRunLoop.RunResult in
            loop.add(keepAliveTimer(), forMode: .default)
            loop.add(phaseLogger(log), forMode: .default)
            // The loop sleeps, then is stopped: an overflowed deadline would time out first.
            loop.add(once(.beforeWaiting) { loop.stop() }, forMode: .default)
            return loop.run(mode: .default, timeout: timeout)
        }
        #expect(result == .stopped)
        #expect(log.all == ["entry", "beforeTimers", "beforeSources", "beforeWaiting", "afterWaiting", "exit"])
    }
}
