import Dispatch
import Foundation
import RunLoopKit
import Testing

/// R4: whatever waits asynchronously on a loop ends when the loop's thread exits, instead of
/// waiting for ever.
@Suite struct LoopExitTests {
    /// Iterates `stream` and reports whether it ended by itself within the safety net (the
    /// iteration is cancelled after `seconds`, which also ends it, so the test cannot hang).
    private func ends(_ stream: AsyncStream<ContinuousClock.Instant>, within seconds: Int = 20) async -> Bool {
        await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                for await _ in stream {}
                return !Task.isCancelled
            }
            group.addTask {
                try? await Task.sleep(for: .seconds(seconds))
                return false
            }
            let first = await group.next()!
            group.cancelAll()
            return first
        }
    }

    @Test func ticksEndWhenTheLoopsThreadExits() async {
        let exit = Latch()
        let (loop, finished) = startLoopThread { loop in
            loop.add(EvMessagePort<Int> { _ in }, forMode: .default)
            while !exit.wait(timeout: 0) { loop.run(mode: .default, timeout: .milliseconds(5)) }
        }
        let stream = loop.ticks(every: .milliseconds(1))
        exit.open()
        #expect(finished.wait())
        #expect(await ends(stream), "ticks(every:) kept waiting after the loop's thread exited")
    }

    /// What `ticks(every:)` relies on should its loop's thread exit, finishing the stream, before
    /// the stream's termination handler is set: the handler still runs once the stream's last copy
    /// goes, and releases what it holds (the timer, and through it the continuation).
    @Test func aStreamFinishedBeforeItsTerminationHandlerWasSetStillRunsItWhenDropped() {
        final class Held: Sendable {}
        let calls = EventLog<String>()
        weak var held: Held?
        do {
            let (stream, continuation) = AsyncStream<Int>.makeStream()
            continuation.finish()
            let object = Held()
            held = object
            continuation.onTermination = { termination in
                withExtendedLifetime(object) {}
                calls.append("\(termination)")
                _ = continuation  // a cycle through the stream's storage, as the timer's block makes
            }
            withExtendedLifetime(stream) { #expect(calls.all.isEmpty) }  // not while a copy lives
        }
        #expect(calls.all == ["cancelled"])
        #expect(held == nil)
    }

    @Test func ticksOfALoopWhoseThreadHasExitedEndAtOnce() async {
        let (loop, finished) = startLoopThread { _ in }
        #expect(finished.wait())
        // Let the thread finish its teardown: the latch opens before the thread-exit destructors.
        #expect(spinUntil { (try? loop.perform(waitUntilDone: false) {}) == nil })
        #expect(await ends(loop.ticks(every: .milliseconds(1))), "ticks(every:) of a dead loop never ended")
    }
}
