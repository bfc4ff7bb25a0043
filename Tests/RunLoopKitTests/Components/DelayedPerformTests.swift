import Foundation
import RunLoopKit
import Testing

private let tracking = EvRunLoop.Mode("UITrackingRunLoopMode")

/// An object requests belong to, as the `self` of Foundation's `perform(_:with:afterDelay:)`.
private final class Target: Sendable {}

/// perform after a delay in chosen modes, and cancelling pending requests for a target
/// (Foundation's `perform(_:with:afterDelay:inModes:)` and `cancelPreviousPerformRequests(withTarget:)`).
@Suite struct DelayedPerformTests {
    @Test func aDelayedPerformRunsOnceOnTheLoopThreadNeverBeforeItsDelay() {
        let outcome = onLoopThread { loop -> (EvRunLoop.RunResult, [Bool], EvDelayedPerform.State?) in
            let calls = EventLog<Bool>()
            let delay = Duration.milliseconds(20)
            let scheduledAt = ContinuousClock.now
            let request = try? loop.perform(after: delay) {
                // R46: a timer never fires before its fire date.
                calls.append(EvRunLoop.current === loop && ContinuousClock.now >= scheduledAt + delay)
            }
            #expect(request?.state == .pending)
            let result = loop.run(mode: .default, timeout: .seconds(20))
            return (result, calls.all, request?.state)
        }
        // The one-shot timer was the mode's only content: once it ran, the mode is empty (R16, R43).
        #expect(outcome.0 == .finished)
        #expect(outcome.1 == [true])
        #expect(outcome.2 == .performed)
    }

    @Test func aDefaultModeRequestWaitsOutTrackingThenFiresOnceInDefault() {
        let log = onLoopThread { loop -> [String] in
            let log = EventLog<String>()
            loop.addCommonMode(tracking)
            let request = try? loop.perform(after: .milliseconds(1), inModes: [.default]) { log.append("delayed perform") }
            // Fires after the request's date: when it runs, the request is overdue yet held back (R41).
            loop.add(EvTimer(after: .milliseconds(30)) { _ in
                log.append("tracking timer, request \(request?.state == .pending ? "pending" : "not pending")")
            }, forMode: tracking)
            log.append("tracking: \(loop.run(mode: tracking, timeout: .seconds(20)))")
            log.append("default: \(loop.run(mode: .default, timeout: .seconds(20)))")
            return log.all
        }
        #expect(log == [
            "tracking timer, request pending", "tracking: finished",
            "delayed perform", "default: finished",
        ])
    }

    @Test func aCommonModesRequestFiresDuringTracking() {
        let log = onLoopThread { loop -> [String] in
            let log = EventLog<String>()
            loop.addCommonMode(tracking)
            _ = try? loop.perform(after: .milliseconds(1), inModes: [.common]) { log.append("delayed perform") }
            log.append("tracking: \(loop.run(mode: tracking, timeout: .seconds(20)))")
            return log.all
        }
        #expect(log == ["delayed perform", "tracking: finished"])
    }

    @Test func cancellingATargetCancelsOnlyItsPendingRequests() {
        let outcome = onLoopThread { loop -> (Int, Int, [String], EvRunLoop.RunResult) in
            let log = EventLog<String>()
            let a = Target(), b = Target()
            _ = try? loop.perform(after: .milliseconds(1), target: a) { log.append("a1") }
            _ = try? loop.perform(after: .milliseconds(2), inModes: [.common], target: a) { log.append("a2") }
            _ = try? loop.perform(after: .milliseconds(3), target: b) { log.append("b1") }
            _ = try? loop.perform(after: .milliseconds(4)) { log.append("no target") }
            let cancelled = loop.cancelPerformRequests(target: a)
            let cancelledAgain = loop.cancelPerformRequests(target: a)
            let result = loop.run(mode: .default, timeout: .seconds(20))
            return (cancelled, cancelledAgain, log.all, result)
        }
        #expect(outcome.0 == 2)
        #expect(outcome.1 == 0)
        #expect(outcome.2 == ["b1", "no target"])
        #expect(outcome.3 == .finished)
    }

    @Test func cancelThenRescheduleDebouncesToTheLastRequest() {
        let log = onLoopThread { loop -> [Int] in
            let log = EventLog<Int>()
            let searchField = Target()
            for keystroke in 0..<5 {
                loop.cancelPerformRequests(target: searchField)
                _ = try? loop.perform(after: .milliseconds(1), target: searchField) { log.append(keystroke) }
            }
            loop.run(mode: .default, timeout: .seconds(20))
            return log.all
        }
        #expect(log == [4])
    }

    @Test func aCalloutCanCancelItsTargetsOtherRequests() {
        let log = onLoopThread { loop -> [String] in
            let log = EventLog<String>()
            let target = Target()
            _ = try? loop.perform(after: .milliseconds(1), target: target) {
                log.append("first, cancelled \(loop.cancelPerformRequests(target: target))")
            }
            _ = try? loop.perform(after: .milliseconds(1), target: target) { log.append("second") }
            _ = try? loop.perform(after: .milliseconds(50), target: target) { log.append("third") }
            loop.run(mode: .default, timeout: .seconds(20))
            return log.all
        }
        #expect(log == ["first, cancelled 2"])
    }

    @Test func cancellingOneRequestByItsHandleAnswersOnce() {
        let outcome = onLoopThread { loop -> [String] in
            let log = EventLog<String>()
            let dropped = try? loop.perform(after: .milliseconds(1)) { log.append("dropped ran") }
            let kept = try? loop.perform(after: .milliseconds(2)) { log.append("kept ran") }
            log.append("cancel: \(dropped?.cancel() == true), again: \(dropped?.cancel() == true)")
            loop.run(mode: .default, timeout: .seconds(20))
            log.append("after run, cancel kept: \(kept?.cancel() == true)")
            log.append("states: \(dropped?.state == .cancelled) \(kept?.state == .performed)")
            return log.all
        }
        #expect(outcome == [
            "cancel: true, again: false", "kept ran", "after run, cancel kept: false", "states: true true",
        ])
    }

    @Test func aCancelledRequestNoLongerKeepsItsModeAlive() {
        let result = onLoopThread { loop -> EvRunLoop.RunResult in
            let request = try? loop.perform(after: .seconds(3600)) {}
            request?.cancel()
            // R16, R18: its timer was the mode's only content.
            return loop.run(mode: .default, timeout: .seconds(20))
        }
        #expect(result == .finished)
    }

    @Test func theTargetIsReleasedOnceItsRequestRanOrWasCancelled() {
        weak var ranTarget: Target?
        weak var cancelledTarget: Target?
        // Handed over through a box the loop thread empties, so that only the requests hold them.
        let handOver = Box<(ran: Target, cancelled: Target)?>((Target(), Target()))
        ranTarget = handOver.get?.ran
        cancelledTarget = handOver.get?.cancelled
        let state = onLoopThread { loop -> EvDelayedPerform.State? in
            guard let targets = handOver.update({ value in defer { value = nil }; return value }) else { return nil }
            let request = try? loop.perform(after: .milliseconds(1), target: targets.ran) {}
            _ = try? loop.perform(after: .seconds(3600), target: targets.cancelled) {}
            loop.cancelPerformRequests(target: targets.cancelled)
            loop.run(mode: .default, timeout: .seconds(20))
            return request?.state
        }
        #expect(state == .performed)
        #expect(ranTarget == nil)
        #expect(cancelledTarget == nil)
    }

    @Test func requestsLeftOnALoopWhoseThreadExitedEndAndReleaseTheirTargets() throws {
        weak var strandedTarget: Target?
        let handOver = Box<Target?>(Target())
        strandedTarget = handOver.get
        let request = onLoopThread { loop -> EvDelayedPerform? in
            guard let stranded = handOver.update({ value in defer { value = nil }; return value }) else { return nil }
            // Never fires: the thread exits first.
            return try? loop.perform(after: .seconds(3600), target: stranded) {}
        }
        // onLoopThread joined the thread, so its loop's teardown is complete (R4).
        #expect(request?.state == .loopExited)
        #expect(strandedTarget == nil)
    }

    @Test func performAfterOnALoopWhoseThreadExitedThrowsLoopExited() {
        let tornDown = Latch()
        let loop = onLoopThread { loop in
            loop.add(EvSource(cancel: { _, _ in tornDown.open() }) {}, forMode: .default)
            return loop
        }
        #expect(tornDown.wait())
        #expect(throws: EvPerformError.loopExited) {
            try loop.perform(after: .milliseconds(1), target: Target()) {}
        }
    }
}
