import Foundation
import RunLoopKit
import Testing

/// UIKit's scrolling mode, made common as UIKit does.
private let tracking = EvRunLoop.Mode("UITrackingRunLoopMode")

/// Waits until the loop's thread has exited and its loop was torn down (R4): a source's cancel
/// callout is the last word of the teardown.
private func exitedLoop() -> EvRunLoop {
    let tornDown = Latch()
    let loop = onLoopThread { loop in
        loop.add(EvSource(cancel: { _, _ in tornDown.open() }) {}, forMode: .default)
        return loop
    }
    precondition(tornDown.wait(), "loop was not torn down")
    return loop
}

/// perform on a loop in chosen modes, like Foundation's `perform(_:on:with:waitUntilDone:modes:)`.
@Suite struct PerformTests {
    @Test func waitUntilDoneOnTheLoopsOwnThreadRunsTheBlockAtOnce() {
        let log = onLoopThread { loop -> [String] in
            let log = EventLog<String>()
            // Not running, and in a mode that never runs: with waitUntilDone on its own thread the
            // block runs before perform returns, as Foundation does.
            try? loop.perform(inModes: [EvRunLoop.Mode("elsewhere")], waitUntilDone: true) { log.append("block") }
            log.append("returned")
            let value = try? loop.performAndWait(inModes: [EvRunLoop.Mode("elsewhere")]) { 42 }
            log.append("value \(value ?? -1)")
            return log.all
        }
        #expect(log == ["block", "returned", "value 42"])
    }

    @Test func waitUntilDoneFromAnotherThreadReturnsOnlyAfterTheCalloutRanOnTheLoopThread() throws {
        let log = EventLog<String>()
        let (loop, finished) = startLoopThread { loop in
            loop.add(keepAliveTimer(), forMode: .default)
            let result = loop.run(mode: .default, timeout: .seconds(30))
            log.append("run \(result)")
        }
        try loop.perform(inModes: [.default], waitUntilDone: true) {
            log.append(EvRunLoop.current === loop ? "block on loop thread" : "block elsewhere")
        }
        log.append("perform returned")
        try loop.perform(inModes: [.default], waitUntilDone: false) { EvRunLoop.current.stop() }
        #expect(finished.wait())
        #expect(log.all == ["block on loop thread", "perform returned", "run stopped"])
    }

    /// C101: `perform` does not wake a sleeping loop; `execute` is the cross-thread call that does.
    @Test func executeFromAnotherThreadWakesTheSleepingLoop() throws {
        let log = EventLog<String>()
        let asleep = Latch()
        let (loop, finished) = startLoopThread { loop in
            loop.add(keepAliveTimer(), forMode: .default)
            loop.add(once(.beforeWaiting) { asleep.open() }, forMode: .default)
            log.append("run \(loop.run(mode: .default, timeout: .seconds(120)))")
        }
        #expect(asleep.wait())
        try loop.execute {
            log.append(EvRunLoop.current === loop ? "work on loop thread" : "work elsewhere")
            EvRunLoop.current.stop()
        }
        #expect(finished.wait(timeout: 60))
        #expect(log.all == ["work on loop thread", "run stopped"])
    }

    @Test func performAndWaitAcrossThreadsReturnsTheValueOrRethrows() throws {
        struct Failure: Error, Equatable {}
        let (loop, finished) = startLoopThread { loop in
            loop.add(keepAliveTimer(), forMode: .default)
            loop.run(mode: .default, timeout: .seconds(30))
        }
        let answer = try loop.performAndWait(inModes: [.default]) { EvRunLoop.current === loop ? 42 : -1 }
        #expect(answer == 42)
        #expect(throws: Failure()) {
            try loop.performAndWait(inModes: [.default]) { () throws -> Int in throw Failure() }
        }
        try loop.perform(inModes: [.default], waitUntilDone: false) { EvRunLoop.current.stop() }
        #expect(finished.wait())
    }

    @Test func performWithoutWaitingWakesTheSleepingLoopUnlikeAPlainPerformBlock() throws {
        let aboutToSleep = Latch()
        let result = Box<EvRunLoop.RunResult?>(nil)
        let (loop, finished) = startLoopThread { loop in
            loop.add(keepAliveTimer(), forMode: .default)
            loop.add(EvObserver(activities: .beforeWaiting, repeats: false) { _, _ in aboutToSleep.open() }, forMode: .default)
            result.set(loop.run(mode: .default, timeout: .seconds(20)))
        }
        #expect(aboutToSleep.wait())
        // R56: a perform-block alone would not end the sleep; this perform wakes the loop itself.
        try loop.perform(inModes: [.default], waitUntilDone: false) { EvRunLoop.current.stop() }
        #expect(finished.wait())
        #expect(result.get == .stopped)
    }

    @Test func aDefaultModePerformWaitsOutATrackingModeAndRunsWhenDefaultComesBack() throws {
        let log = EventLog<String>()
        let scheduled = Latch()
        let (loop, finished) = startLoopThread { loop in
            loop.addCommonMode(tracking)
            loop.add(keepAliveTimer(), forMode: .common)
            scheduled.wait()
            let trackingResult = loop.run(mode: tracking, timeout: .seconds(20))
            log.append("tracking ended: \(trackingResult)")
            loop.run(mode: .default, timeout: .zero)
            log.append("default ran once")
        }
        // Decode images only in the default mode, never while the user scrolls.
        try loop.perform(inModes: [.default], waitUntilDone: false) { log.append("decode image") }
        // Scheduled after it: when this runs, the default block has been passed over (R54).
        try loop.perform(inModes: [tracking], waitUntilDone: false) {
            log.append("tracking block")
            EvRunLoop.current.stop()
        }
        scheduled.open()
        #expect(finished.wait())
        #expect(log.all == ["tracking block", "tracking ended: stopped", "decode image", "default ran once"])
    }

    @Test func aCommonModesPerformRunsWhileTheCommonTrackingModeRuns() throws {
        let log = EventLog<String>()
        let scheduled = Latch()
        let (loop, finished) = startLoopThread { loop in
            loop.addCommonMode(tracking)
            loop.add(keepAliveTimer(), forMode: .common)
            scheduled.wait()
            log.append("tracking ended: \(loop.run(mode: tracking, timeout: .seconds(20)))")
        }
        try loop.perform(inModes: [.common], waitUntilDone: false) { log.append("common block") }
        try loop.perform(inModes: [tracking], waitUntilDone: false) { EvRunLoop.current.stop() }
        scheduled.open()
        #expect(finished.wait())
        #expect(log.all == ["common block", "tracking ended: stopped"])
    }

    @Test func performOnALoopWhoseThreadExitedThrowsLoopExited() {
        let loop = exitedLoop()
        let ran = Box(false)
        #expect(throws: EvPerformError.loopExited) {
            try loop.perform(inModes: [.default], waitUntilDone: false) { ran.set(true) }
        }
        #expect(throws: EvPerformError.loopExited) {
            try loop.perform(inModes: [.default], waitUntilDone: true) { ran.set(true) }
        }
        #expect(throws: EvPerformError.loopExited) {
            try loop.performAndWait { ran.set(true) }
        }
        #expect(ran.get == false)
    }

    @Test func aWaitingCallerIsReleasedWithLoopExitedWhenTheLoopDiesFirst() throws {
        let (loop, loopFinished) = startLoopThread { loop in
            loop.add(keepAliveTimer(), forMode: .default)
            loop.run(mode: .default, timeout: .seconds(20))
        }
        let outcome = Box<String?>(nil)
        let waiter = startLoopThread { _ in
            do {
                // A mode the loop never runs: the block stays pending until the thread exits and
                // the loop drops it (or the loop is already dead when it is scheduled).
                try loop.perform(inModes: [EvRunLoop.Mode("never")], waitUntilDone: true) {}
                outcome.set("returned normally")
            } catch {
                outcome.set("\(error)")
            }
        }
        try loop.perform(inModes: [.default], waitUntilDone: false) { EvRunLoop.current.stop() }
        #expect(loopFinished.wait())
        #expect(waiter.finished.wait())
        #expect(outcome.get == EvPerformError.loopExited.description)
    }
}
