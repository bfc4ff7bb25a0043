import Foundation
import RunLoopKit
import Testing

/// The checks a run makes without its lock (a mode that cannot be empty, a mode without timers,
/// watchers in step with the mode, no stop since the run last looked) must still see every
/// change made under the lock before the check: from another thread before a wake-up, and from
/// a nested run of another mode. Each run here first handles a source, so that it has made those
/// checks once before the change (the first pass of a run reads everything afresh).
@Suite struct LockFreeCheckTests {
    /// R16: the last source removed from another thread while the loop sleeps; the wake-up that
    /// follows ends the run as finished instead of letting it sleep again.
    @Test func R16_aModeEmptiedFromAnotherThreadEndsTheRunAfterTheNextWakeUp() {
        let source = EvSource {}
        let result = Box<EvRunLoop.RunResult?>(nil)
        let (loop, finished) = startLoopThread { loop in
            loop.add(source, forMode: .default)
            source.signal()  // a first pass that checks, then a second that sleeps
            result.set(loop.run(mode: .default, timeout: .seconds(30)))
        }
        #expect(spinUntil { loop.isWaiting })
        source.invalidate()  // as in CF, removing a source does not wake the loop
        loop.wakeUp()
        #expect(finished.wait())
        #expect(result.get == .finished)
    }

    /// R44: a timer added from another thread to a mode that had none fires: the timers step of
    /// a mode without timers skips the lock, but not once one has joined.
    @Test func R44_aTimerAddedFromAnotherThreadToAModeWithoutTimersFires() {
        let fired = Latch()
        let result = Box<EvRunLoop.RunResult?>(nil)
        let (loop, finished) = startLoopThread { loop in
            let source = EvSource {}  // keeps the mode alive without a timer
            loop.add(source, forMode: .default)
            source.signal()  // a first pass that checks, then a second that sleeps
            result.set(loop.run(mode: .default, timeout: .seconds(30)))
        }
        #expect(spinUntil { loop.isWaiting })
        loop.add(EvTimer(after: .milliseconds(1)) { _ in
            fired.open()
            loop.stop()
        }, forMode: .default)
        #expect(fired.wait())
        #expect(finished.wait())
        #expect(result.get == .stopped)
    }

    /// R20.9, R37: after a source is handled the next wait only polls, and that poll sees a
    /// descriptor of the running mode that became ready meanwhile, even when a nested run of
    /// another mode had the watchers in step with that other mode: the descriptor's source runs
    /// in the same pass, with no BeforeWaiting before it.
    @Test func R37_aPollAfterANestedRunOfAnotherModeWatchesTheRunningModesDescriptors() throws {
        var fds: [Int32] = [0, 0]
        precondition(pipe(&fds) == 0)
        let (readEnd, writeEnd) = (fds[0], fds[1])
        defer { close(readEnd); close(writeEnd) }
        let log = EventLog<String>()
        let inner = EvRunLoop.Mode("lock-free-inner")
        let descriptor = try EvFileDescriptorSource(fileDescriptor: readEnd, events: .readable) { _ in
            var buffer: UInt8 = 0
            _ = read(readEnd, &buffer, 1)
            log.append("descriptor")
            EvRunLoop.current.stop()
        }
        let results = onLoopThread { loop -> [EvRunLoop.RunResult] in
            let trigger = EvSource {
                log.append("trigger")
                log.append("nested \(loop.run(mode: inner, timeout: .zero))")
                var byte: UInt8 = 1
                precondition(write(writeEnd, &byte, 1) == 1)
            }
            // The first pass handles this one and polls with the watchers in step; it signals
            // the trigger for the second pass.
            let first = EvSource {
                log.append("first")
                trigger.signal()
            }
            loop.add(descriptor, forMode: .default)
            loop.add(trigger, forMode: .default)
            loop.add(first, forMode: .default)
            loop.add(keepAliveTimer(), forMode: inner)
            loop.add(phaseLogger(log, .beforeWaiting), forMode: .default)
            // Once, so that the descriptor is watched for the default mode from the start.
            let poll = loop.run(mode: .default, timeout: .zero)
            first.signal()
            return [poll, loop.run(mode: .default, timeout: .seconds(30))]
        }
        #expect(results == [.timedOut, .stopped])
        #expect(log.all == ["first", "trigger", "nested timedOut", "descriptor"])
    }
}
