import Foundation
import RunLoopKit
import Testing
import TestSupport

/// Whatever reaches a sleeping loop reaches it in libev's poll: a timer added or re-dated from
/// another thread, a descriptor source added from another thread, a signal. Each loop here runs
/// with no timeout, so only what the test does can end its sleep; a watchdog stops a loop that
/// slept through it.
@Suite struct SleepTests {
    /// R22, R46: a sleep for a timer 30 ms away ends at the timer's date, not before, with one
    /// wake-up (one AfterWaiting, the timer's).
    @Test func R22_aSleepUntilATimerEndsAtItsDateWithOneWakeUp() {
        let outcome = onLoopThread { loop -> (wakes: Int, early: Bool) in
            let wakes = EventLog<Int>()
            let date = ContinuousClock.now + .milliseconds(30)
            let firedAt = Box<ContinuousClock.Instant?>(nil)
            loop.add(EvTimer(after: .milliseconds(30)) { _ in firedAt.set(.now) }, forMode: .default)
            loop.add(EvObserver(activities: .afterWaiting) { _, _ in wakes.append(1) }, forMode: .default)
            // One-shot: the mode is empty once it fired. The timeout is only a safety net.
            _ = loop.run(mode: .default, timeout: .seconds(30))
            return (wakes.count, firedAt.get.map { $0 < date } ?? true)
        }
        #expect(outcome.wakes == 1)
        #expect(!outcome.early)
    }

    /// R44 on a loop whose timerfd exists (it slept once with a deadline): the other thread only
    /// sets the timerfd, and the sleeping loop wakes at its date: the timer's firing is the one
    /// wake-up the observers see.
    @Test func R44_aTimerAddedFromAnotherThreadEndsASleepWithNoDeadlineAtItsDate() {
        expectTimerAddedFromAnotherThreadFires(afterASleepWithADeadline: true)
    }

    /// R44 on a loop that never slept with a deadline: its first finite deadline makes the
    /// timerfd, which only the loop's thread does, inside the sleep: still one wake-up.
    @Test func R44_aFirstDeadlineFromAnotherThreadEndsASleepWithNoDeadline() {
        expectTimerAddedFromAnotherThreadFires(afterASleepWithADeadline: false)
    }

    /// R37, R6: a descriptor source added from another thread to a loop asleep with no
    /// descriptor watched: the loop wakes, starts its watcher, and sees the descriptor become
    /// readable.
    @Test func R37_aDescriptorSourceAddedFromAnotherThreadIsWatched() throws {
        var fds: [Int32] = [0, 0]
        try #require(pipe(&fds) == 0)
        let (readEnd, writeEnd) = (fds[0], fds[1])
        defer { close(readEnd); close(writeEnd) }
        let handled = Latch()
        let source = try EvFileDescriptorSource(fileDescriptor: readEnd, events: .readable) { _ in
            var byte: UInt8 = 0
            _ = read(readEnd, &byte, 1)
            handled.open()
            EvRunLoop.current.stop()
        }
        let result = Box<EvRunLoop.RunResult?>(nil)
        let (loop, finished) = startLoopThread { loop in
            loop.add(EvSource {}, forMode: .default)  // keeps the mode alive, no deadline
            result.set(loop.run(mode: .default, timeout: nil))
        }
        let watchdog = Watchdog(loop)
        #expect(spinUntil { loop.isWaiting })
        loop.add(source, forMode: .default)
        var byte: UInt8 = 1
        #expect(write(writeEnd, &byte, 1) == 1)
        #expect(handled.wait(timeout: 10))
        watchdog.cancel()
        #expect(finished.wait())
        #expect(result.get == .stopped)
        #expect(!watchdog.fired)
        source.invalidate()
    }

    /// R37, R22 for signals: a routed signal reaches a sleeping loop (the signal handler sets a
    /// request bit and writes the loop's eventfd). Dispositions are process-wide: a child process.
    @Test func R37_aSignalReachesALoopAsleepWithNoDeadline() async {
        await #expect(processExitsWith: .success) {
            let handled = Latch()
            let source = signalSource(SIGUSR2) {
                handled.open()
                EvRunLoop.current.stop()
            }
            let (loop, finished) = startLoopThread { loop in
                loop.add(source, forMode: .default)
                _ = loop.run(mode: .default, timeout: nil)
            }
            guard spinUntil({ loop.isWaiting }) else { exit(10) }
            kill(getpid(), SIGUSR2)
            guard handled.wait(timeout: 10) else { exit(11) }
            guard finished.wait() else { exit(12) }
        }
    }

    private func expectTimerAddedFromAnotherThreadFires(afterASleepWithADeadline: Bool) {
        let wakes = EventLog<Int>()
        let asleep = Latch()
        let fired = Latch()
        let added = Box<ContinuousClock.Instant?>(nil)
        let firedAt = Box<ContinuousClock.Instant?>(nil)
        let (loop, finished) = startLoopThread { loop in
            loop.add(EvSource {}, forMode: .default)  // keeps the mode alive, no deadline
            // A sleep with a deadline makes the timerfd; the later one has none.
            if afterASleepWithADeadline { _ = loop.run(mode: .default, timeout: .milliseconds(1)) }
            loop.add(EvObserver(activities: .afterWaiting) { _, _ in wakes.append(1) }, forMode: .default)
            loop.add(once(.beforeWaiting) { asleep.open() }, forMode: .default)
            _ = loop.run(mode: .default, timeout: nil)
        }
        let watchdog = Watchdog(loop)
        #expect(asleep.wait())  // the run with no deadline is about to sleep …
        #expect(spinUntil { loop.isWaiting })  // … and sleeps
        added.set(.now)
        loop.add(EvTimer(after: .milliseconds(50)) { _ in
            firedAt.set(.now)
            fired.open()
            EvRunLoop.current.stop()
        }, forMode: .default)
        #expect(fired.wait(timeout: 10))
        watchdog.cancel()
        #expect(finished.wait())
        #expect(!watchdog.fired)
        #expect(wakes.count == 1)  // the timer's: arming the new deadline is not a wake-up
        if let added = added.get, let firedAt = firedAt.get { #expect(firedAt - added >= .milliseconds(50)) }
    }
}

/// Stops `loop` if the test has not cancelled it within 10 s, and says so. `@unchecked
/// Sendable`: `thread` is written by `init` and read by `cancel()`, on the test's thread.
private final class Watchdog: @unchecked Sendable {
    private let done = Latch()
    private let didFire = Box(false)
    private var thread: pthread_t?

    init(_ loop: EvRunLoop) {
        thread = spawnThread { [done, didFire] in
            guard !done.wait(timeout: 10) else { return }
            didFire.set(true)
            loop.stop()
        }
    }

    var fired: Bool { didFire.get }

    /// Ends the watch and joins the watchdog's thread.
    func cancel() {
        done.open()
        if let thread { pthread_join(thread, nil) }
        thread = nil
    }
}

private func signalSource(_ signal: Int32, handler: @escaping @Sendable () -> Void) -> EvSignalSource {
    guard let source = try? EvSignalSource(signal: signal, handler: handler) else { exit(9) }
    return source
}
