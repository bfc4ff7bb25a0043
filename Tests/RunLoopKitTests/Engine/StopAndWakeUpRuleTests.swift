import Foundation
import RunLoopKit
import Testing
#if canImport(Glibc)
import Glibc
#endif



/// An observer that opens `latches[n]` the n-th time it sees `activity` (counting from 0).
private func counting(_ activity: EvRunLoop.Activity, _ latches: [Latch]) -> EvObserver {
    let seen = Box(0)
    return EvObserver(activities: activity, order: 1) { _, _ in
        let index = seen.update { count -> Int in
            defer { count += 1 }
            return count
        }
        if index < latches.count { latches[index].open() }
    }
}


/// R27–R32: stop, wake-up, and the run forms built on single runs.
@Suite struct StopAndWakeUpRuleTests {
    private let inner = EvRunLoop.Mode("inner")

    @Test func R27_stopEndsOnlyTheInnermostRun() {
        let log = EventLog<String>()
        let result = onLoopThread { [inner] loop -> EvRunLoop.RunResult in
            loop.add(keepAliveTimer(), forMode: .default)
            loop.add(keepAliveTimer(), forMode: inner)
            loop.add(phaseLogger(log, [.entry, .exit]), forMode: .default)
            let source = EvSource {
                log.append("outer goes on")
                loop.stop()
            }
            loop.add(source, forMode: .default)
            loop.add(EvTimer(after: .zero) { _ in
                loop.perform(inModes: [inner]) { loop.stop() }
                log.append("nested \(loop.run(mode: inner, timeout: .seconds(30)))")
                source.signal()  // performed in the outer run's next iteration, if there is one
            }, forMode: .default)
            return loop.run(mode: .default, timeout: .seconds(30))
        }
        #expect(result == .stopped)
        #expect(log.all == ["entry", "nested stopped", "outer goes on", "exit"])
    }

    @Test func R27_eachRunHasItsOwnStopMark() {
        let log = EventLog<String>()
        let result = onLoopThread { [inner] loop -> EvRunLoop.RunResult in
            loop.add(keepAliveTimer(), forMode: .default)
            loop.add(keepAliveTimer(), forMode: inner)
            loop.perform(inModes: [.default]) {
                loop.stop()  // marks the outer run
                // A run started afterwards is not stopped by the outer run's mark.
                log.append("nested \(loop.run(mode: inner, timeout: .zero))")
                log.append("nested \(loop.run(mode: inner, timeout: .zero))")
                // The nested runs used up the stop's wake-up (real CF does the same and would
                // sleep until the timeout); wake the loop so the outer run sees its own mark.
                loop.wakeUp()
            }
            return loop.run(mode: .default, timeout: .seconds(30))
        }
        #expect(result == .stopped)
        #expect(log.all == ["nested timedOut", "nested timedOut"])
    }

    @Test func R28_stopOnAnIdleLoopDoesNothing() {
        let (results, fired) = onLoopThread { loop -> ([EvRunLoop.RunResult], Bool) in
            loop.stop()
            let stopped = Latch()
            Thread {
                loop.stop()
                stopped.open()
            }.start()
            stopped.wait()
            loop.add(keepAliveTimer(), forMode: .default)
            let first = loop.run(mode: .default, timeout: .zero)
            let timer = EvTimer(after: .zero) { _ in }
            let mode = EvRunLoop.Mode("r28")
            loop.add(timer, forMode: mode)
            let second = loop.run(mode: mode, timeout: .seconds(30))
            return ([first, second], !timer.isValid)
        }
        #expect(results == [.timedOut, .finished])
        #expect(fired)
    }

    @Test func R29_stopFromAnotherThreadEndsTheRun() {
        let log = EventLog<String>()
        let result = onLoopThread { loop -> EvRunLoop.RunResult in
            loop.add(keepAliveTimer(), forMode: .default)
            loop.add(phaseLogger(log), forMode: .default)
            let asleep = Latch()
            loop.add(once(.beforeWaiting) { asleep.open() }, forMode: .default)
            Thread {
                asleep.wait()
                loop.stop()
            }.start()
            return loop.run(mode: .default, timeout: .seconds(30))
        }
        #expect(result == .stopped)
        #expect(log.all == ["entry", "beforeTimers", "beforeSources", "beforeWaiting", "afterWaiting", "exit"])
    }

    @Test func R29_stopFromACalloutEndsTheRunAtTheEndOfItsIteration() {
        let log = EventLog<String>()
        let result = onLoopThread { loop -> EvRunLoop.RunResult in
            loop.add(keepAliveTimer(), forMode: .default)
            loop.add(phaseLogger(log), forMode: .default)
            loop.add(once(.beforeSources) { loop.stop() }, forMode: .default)
            loop.perform(inModes: [.default]) { log.append("block") }
            return loop.run(mode: .default, timeout: .seconds(30))
        }
        #expect(result == .stopped)
        // The rest of the iteration still runs; the stop's wake-up ends its sleep at once.
        #expect(log.all == ["entry", "beforeTimers", "beforeSources", "block", "beforeWaiting", "afterWaiting", "exit"])
    }

    @Test func R30_wakeUpEndsTheSleepAndTheLoopSleepsAgain() {
        let log = EventLog<String>()
        let result = onLoopThread { loop -> EvRunLoop.RunResult in
            loop.add(keepAliveTimer(), forMode: .default)
            loop.add(phaseLogger(log), forMode: .default)
            let asleep = [Latch(), Latch()]
            loop.add(counting(.beforeWaiting, asleep), forMode: .default)
            Thread {
                asleep[0].wait()
                _ = spinUntil { loop.isWaiting }
                loop.wakeUp()
                asleep[1].wait()
                loop.stop()
            }.start()
            return loop.run(mode: .default, timeout: .seconds(30))
        }
        #expect(result == .stopped)
        #expect(log.all == [
            "entry",
            "beforeTimers", "beforeSources", "beforeWaiting", "afterWaiting",  // woken, nothing to do
            "beforeTimers", "beforeSources", "beforeWaiting", "afterWaiting",  // asleep again until stop()
            "exit",
        ])
    }

    /// R30 as CF has it (C52, C53): wake-ups made while busy *before* the wait all end that one
    /// wait; made after it (C52) they would be dropped, see the C52 conformance tests.
    @Test func R30_C53_wakeUpsWhileBusyBeforeTheWaitEndTheNextSleepOnlyOnce() {
        let log = EventLog<String>()
        let result = onLoopThread { loop -> EvRunLoop.RunResult in
            loop.add(keepAliveTimer(), forMode: .default)
            loop.add(phaseLogger(log), forMode: .default)
            loop.perform(inModes: [.default]) {
                for _ in 0..<5 { loop.wakeUp() }  // busy before the wait: accepted once, not five times
            }
            let asleepAgain = [Latch(), Latch()]
            loop.add(counting(.beforeWaiting, asleepAgain), forMode: .default)
            loop.add(EvObserver(activities: .afterWaiting, order: 1) { _, _ in
                if log.all.contains("woken from another thread") { loop.stop() }
            }, forMode: .default)
            Thread {
                asleepAgain[1].wait()
                _ = spinUntil { loop.isWaiting }
                log.append("woken from another thread")
                loop.wakeUp()
            }.start()
            return loop.run(mode: .default, timeout: .seconds(30))
        }
        #expect(result == .stopped)
        // The second sleep lasts until the other thread's wake-up: no wake-up was left over.
        #expect(log.all == [
            "entry",
            "beforeTimers", "beforeSources", "beforeWaiting", "afterWaiting",
            "beforeTimers", "beforeSources", "beforeWaiting", "woken from another thread", "afterWaiting",
            "exit",
        ])
    }

    @Test func R31_runReturnsWhenStoppedFromAnotherThread() {
        // The keep-alive trap: Foundation's RunLoop.run() would never return here (W13).
        let returned = onLoopThread { loop -> Bool in
            loop.add(keepAliveTimer(), forMode: .default)
            let asleep = Latch()
            loop.add(once(.beforeWaiting) { asleep.open() }, forMode: .default)
            Thread {
                asleep.wait()
                loop.stop()
            }.start()
            loop.run()
            return true
        }
        #expect(returned)
    }

    @Test func R31_runReturnsWhenTheDefaultModeIsEmpty() {
        let log = EventLog<String>()
        onLoopThread { loop in
            loop.add(phaseLogger(log, [.entry, .exit]), forMode: .default)
            loop.run()  // empty: returns at once, with no callout
            log.append("returned")
            loop.add(EvTimer(after: .zero) { _ in log.append("timer") }, forMode: .default)
            loop.run()  // finished once the one-shot timer has fired
            log.append("returned")
        }
        #expect(log.all == ["returned", "entry", "timer", "exit", "returned"])
    }

    @Test func R31_runRunsOnlyTheDefaultMode() {
        let log = EventLog<String>()
        onLoopThread { loop in
            let other = EvRunLoop.Mode("other")
            loop.add(EvTimer(after: .zero) { _ in log.append("other mode's timer") }, forMode: other)
            loop.add(EvTimer(after: .zero) { _ in log.append("default timer") }, forMode: .default)
            loop.run()
        }
        #expect(log.all == ["default timer"])
    }

    @Test func R32_runUntilRepeatsSingleRunsUntilTheModeIsEmpty() {
        let log = EventLog<String>()
        let result = onLoopThread { loop -> EvRunLoop.RunResult in
            loop.add(phaseLogger(log, [.entry, .exit]), forMode: .default)
            let performs = Box(0)
            let sourceBox = Box<EvSource?>(nil)
            defer { sourceBox.set(nil) }  // the item's closure holds this box: break the cycle
            let source = EvSource {
                let count = performs.update { $0 += 1; return $0 }
                log.append("source \(count)")
                if count < 3 { sourceBox.get?.signal() } else { sourceBox.get?.invalidate() }
            }
            sourceBox.set(source)
            loop.add(source, forMode: .default)
            source.signal()
            return loop.run(until: .now + .seconds(30))
        }
        #expect(result == .finished)
        // One source per run (each returns handledSource), then a run finds the mode empty.
        #expect(log.all == [
            "entry", "source 1", "exit",
            "entry", "source 2", "exit",
            "entry", "source 3", "exit",
        ])
    }

    @Test func R32_runUntilReturnsOnceTheDatePasses() {
        let log = EventLog<String>()
        let result = onLoopThread { loop -> EvRunLoop.RunResult in
            loop.add(keepAliveTimer(), forMode: .default)
            loop.add(phaseLogger(log, [.entry, .exit]), forMode: .default)
            let source = EvSource { log.append("source") }
            loop.add(source, forMode: .default)
            source.signal()
            return loop.run(until: .now + .milliseconds(200))
        }
        #expect(result == .timedOut)
        #expect(Array(log.all.prefix(3)) == ["entry", "source", "exit"])
        #expect(log.all.filter { $0 == "source" }.count == 1)
        #expect(log.all.filter { $0 == "entry" }.count == log.all.filter { $0 == "exit" }.count)
    }

    @Test func R32_runUntilAPastDateStillPollsOnce() {
        let log = EventLog<String>()
        let result = onLoopThread { loop -> EvRunLoop.RunResult in
            loop.add(keepAliveTimer(), forMode: .default)
            loop.add(phaseLogger(log, [.entry, .beforeWaiting, .exit]), forMode: .default)
            let source = EvSource { log.append("source") }
            loop.add(source, forMode: .default)
            source.signal()
            return loop.run(until: .now - .seconds(1))
        }
        #expect(result == .handledSource)
        #expect(log.all == ["entry", "source", "exit"])  // one run, no sleep (R25)
    }

    @Test func R32_stopEndsOnlyTheCurrentSingleRunOfRunUntil() {
        // A timer (not a source, so the single runs do not end with handledSource) stops the
        // loop twice; run(until:) goes on until the timer's third fire empties the mode.
        let log = EventLog<String>()
        let result = onLoopThread { loop -> EvRunLoop.RunResult in
            loop.add(phaseLogger(log, [.entry, .exit]), forMode: .default)
            let fires = Box(0)
            let timer = EvTimer(after: .milliseconds(1), interval: .milliseconds(1)) { timer in
                let count = fires.update { $0 += 1; return $0 }
                log.append("fire \(count)")
                if count < 3 { loop.stop() } else { timer.invalidate() }
            }
            loop.add(timer, forMode: .default)
            return loop.run(until: .now + .seconds(30))
        }
        #expect(result == .finished)
        #expect(log.all == [
            "entry", "fire 1", "exit",
            "entry", "fire 2", "exit",
            "entry", "fire 3", "exit",
        ])
    }
}
