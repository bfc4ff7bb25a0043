import Foundation
import RunLoopKit
import Testing

private func message(_ result: ExitTest.Result?) -> String {
    String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
}

/// `run(mode:until:orUntil:)`: the loop runs until a condition holds or a deadline passes, the
/// wait XCTest's `waitForExpectations` cannot do for a RunLoopKit loop.
@Suite struct RunUntilConditionTests {
    /// A timer makes the condition true: the wait ends at that pass, without another wake-up,
    /// having slept between the ticks rather than spun.
    @Test func aTimerThatMakesTheConditionTrueEndsTheWait() {
        let (held, ticks, iterations) = onLoopThread { loop -> (Bool, Int, UInt64) in
            var ticks = 0
            loop.addTimer(after: .milliseconds(5), interval: .milliseconds(5)) { timer in
                ticks += 1
                if ticks == 3 { timer.invalidate() }
            }
            loop.add(keepAliveTimer(), forMode: .default)
            let before = loop.metrics.iterations
            let held = loop.run(until: .now + .seconds(30), orUntil: { ticks == 3 })
            return (held, ticks, loop.metrics.iterations - before)
        }
        #expect(held)
        #expect(ticks == 3)
        // One iteration per tick and a last one that sees the condition: a spin makes thousands.
        #expect(iterations <= 8, "\(iterations) iterations for 3 ticks")
    }

    /// Nothing makes the condition true: false once the deadline has passed, having slept
    /// through the wait.
    @Test func aConditionThatNeverHoldsReturnsFalseAtTheDeadlineWithoutSpinning() {
        let (held, waited, iterations) = onLoopThread { loop -> (Bool, Duration, UInt64) in
            loop.add(keepAliveTimer(), forMode: .default)
            let before = loop.metrics.iterations
            let start = ContinuousClock.now
            let held = loop.run(until: start + .milliseconds(50), orUntil: { false })
            return (held, ContinuousClock.now - start, loop.metrics.iterations - before)
        }
        #expect(!held)
        #expect(waited >= .milliseconds(50))
        #expect(iterations <= 3, "\(iterations) iterations in 50 ms")
    }

    /// Work handed over from another thread (`execute`, which wakes the loop) and a signalled
    /// source each end the wait once they made the condition true.
    @Test func workFromAnotherThreadAndASignalledSourceEndTheWait() {
        let outcome = onLoopThread { loop -> [String] in
            var log: [String] = []
            let done = EvLoopBoundBox(false, loop: loop)
            loop.add(keepAliveTimer(), forMode: .default)
            Thread { try? loop.execute { done.value = true } }.start()
            log.append("block: \(loop.run(until: .now + .seconds(30), orUntil: { done.value }))")
            var performed = 0
            let source = loop.addSource { performed += 1 }
            Thread {
                source.signal()
                loop.wakeUp()
            }.start()
            log.append("source: \(loop.run(until: .now + .seconds(30), orUntil: { performed == 1 }))")
            source.invalidate()
            return log
        }
        #expect(outcome == ["block: true", "source: true"])
    }

    /// A condition that already holds returns at once, without a run (no Entry); an empty mode
    /// returns false at once, since nothing could make the condition true.
    @Test func aConditionAlreadyTrueOrAnEmptyModeReturnsAtOnce() {
        let outcome = onLoopThread { loop -> [String] in
            var entries = 0
            loop.addObserver(activities: .entry) { _, _ in entries += 1 }
            let already = loop.run(until: .now + .seconds(30), orUntil: { true })
            let start = ContinuousClock.now
            let empty = loop.run(until: .now + .seconds(30), orUntil: { false })
            let emptyTook = ContinuousClock.now - start
            return ["already \(already), entries \(entries)", "empty \(empty), at once \(emptyTook < .seconds(10))"]
        }
        #expect(outcome == ["already true, entries 0", "empty false, at once true"])
    }

    /// A stop ends only the run in progress: the wait goes on until its condition holds (as
    /// `run(until:)` does, C119), and it leaves no observer behind in the mode.
    @Test func aStopDoesNotEndTheWaitAndTheWaitLeavesNothingBehind() {
        let outcome = onLoopThread { loop -> [String] in
            var ticks = 0
            loop.addTimer(after: .milliseconds(1)) { _ in loop.stop() }
            loop.addTimer(after: .milliseconds(20)) { _ in ticks += 1 }
            let phases = EventLog<String>()
            let held = loop.run(until: .now + .seconds(30), orUntil: { ticks == 1 })
            loop.add(phaseLogger(phases, .beforeWaiting), forMode: .default)
            // The mode's only item now is the logger: an observer alone leaves it empty (R16).
            let after = loop.run(mode: .default, timeout: .zero)
            return ["held \(held)", "after \(after)", "phases \(phases.all)"]
        }
        #expect(outcome == ["held true", "after finished", "phases []"])
    }

    @Test func runningTheCommonPseudoModeUntilAConditionStops() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = onLoopThread { loop in loop.run(mode: .common, until: .now + .seconds(1), orUntil: { false }) }
        }
        #expect(message(result).contains(
            "EvRunLoop.run(mode:until:orUntil:): the .common pseudo-mode cannot be run (R10)"))
    }

    @Test func waitingOnAnotherThreadsLoopStops() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let (other, _) = startLoopThread { _ in Latch().wait() }
            _ = onLoopThread { _ in other.run(until: .now + .seconds(1), orUntil: { false }) }
        }
        #expect(message(result).contains(
            "EvRunLoop.run(mode:until:orUntil:): a run loop can only be run on its own thread (R5)"))
    }
}
