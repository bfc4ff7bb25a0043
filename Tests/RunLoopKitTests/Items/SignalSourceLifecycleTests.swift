import Foundation
import RunLoopKit
import Testing
import TestSupport

/// Signal sources across loops and the process's signal dispositions (R37).
/// Dispositions are process-wide, so each scenario runs in a child process of its own.
@Suite struct SignalSourceLifecycleTests {
    /// A signal's last source is invalidated from another thread while its loop sleeps, then a
    /// second loop watches the signal and gets it. Before, the first loop's libev watcher
    /// stayed attached until that loop next woke, and the second loop's start tripped libev's
    /// assertion "a signal must not be attached to two different loops".
    @Test func aSignalMovesToAnotherLoopOnceItsSourceIsInvalidatedFromAnotherThread() async {
        await #expect(processExitsWith: .success) {
            let firstHandled = Latch()
            let first = signalSource(SIGUSR2) { firstHandled.open() }
            let stopFirst = Latch()
            let added = Latch()
            let (firstLoop, firstFinished) = startLoopThread { loop in
                loop.add(first, forMode: .default)
                added.open()
                let keepAlive = EvSource {}
                loop.add(keepAlive, forMode: .default)
                while !stopFirst.wait(timeout: 0) { loop.run(mode: .default, timeout: .seconds(30)) }
            }
            // The first loop watches the signal and is asleep.
            guard added.wait() else { exit(13) }
            kill(getpid(), SIGUSR2)
            guard firstHandled.wait(), spinUntil({ firstLoop.isWaiting }) else { exit(10) }
            first.invalidate()  // from this thread, while the first loop sleeps

            let secondHandled = Latch()
            let second = signalSource(SIGUSR2) {
                secondHandled.open()
                EvRunLoop.current.stop()
            }
            let result = onLoopThread { loop -> EvRunLoop.RunResult in
                loop.add(second, forMode: .default)
                kill(getpid(), SIGUSR2)
                return loop.run(mode: .default, timeout: .seconds(30))
            }
            guard result == .stopped, secondHandled.wait(timeout: 0) else { exit(11) }
            stopFirst.open()
            // A block, not `stop()`: a stop that lands between two of the thread's runs is dropped
            // (R28, C52), a block waits for the next run.
            guard (try? firstLoop.perform(inModes: [.default], waitUntilDone: false, { EvRunLoop.current.stop() })) != nil else { exit(14) }
            guard firstFinished.wait() else { exit(12) }
        }
    }

    /// Removing the last source for a signal restores what the process had before the first:
    /// `SIG_IGN` for SIGPIPE, a handler of its own for SIGUSR1. Before, both became `SIG_DFL`, so
    /// a server ignoring SIGPIPE was then killed by a write to a closed socket.
    @Test func removingTheLastSignalSourceRestoresThePreviousDisposition() async {
        await #expect(processExitsWith: .success) {
            signal(SIGPIPE, SIG_IGN)
            var own = sigaction()
            own.__sigaction_handler.sa_handler = { _ in }
            guard sigaction(SIGUSR1, &own, nil) == 0 else { exit(10) }
            let ownHandler = own.__sigaction_handler.sa_handler

            for signalNumber in [SIGPIPE, SIGUSR1] {
                let handled = Latch()
                let source = signalSource(signalNumber) {
                    handled.open()
                    EvRunLoop.current.stop()
                }
                let result = onLoopThread { loop -> EvRunLoop.RunResult in
                    loop.add(source, forMode: .default)
                    kill(getpid(), signalNumber)
                    let result = loop.run(mode: .default, timeout: .seconds(30))
                    loop.remove(source, forMode: .default)
                    return result
                }
                guard result == .stopped, handled.wait(timeout: 0) else { exit(11) }
            }
            var now = sigaction()
            sigaction(SIGPIPE, nil, &now)
            guard unsafeBitCast(now.__sigaction_handler.sa_handler, to: Int.self) == unsafeBitCast(SIG_IGN, to: Int.self) else { exit(12) }
            sigaction(SIGUSR1, nil, &now)
            guard unsafeBitCast(now.__sigaction_handler.sa_handler, to: Int.self) == unsafeBitCast(ownHandler, to: Int.self) else { exit(13) }
            // And SIGPIPE really is ignored again: this survives.
            kill(getpid(), SIGPIPE)
        }
    }

    /// R37: a signal for a source of another mode waits, and does not end the running mode's
    /// sleep (ports and descriptors do not either). Before, every delivery woke the loop for a
    /// pass with nothing to do: the run woke twice, not once. The delivery is handled once its
    /// mode runs.
    @Test func aSignalForASourceOfAnotherModeDoesNotWakeTheLoop() async {
        await #expect(processExitsWith: .success) {
            let handled = Latch()
            let source = signalSource(SIGUSR2) { handled.open() }
            let outcome = onLoopThread { loop -> Int32 in
                let tracking = EvRunLoop.Mode("tracking")
                loop.add(source, forMode: .default)
                loop.add(keepAliveTimer(), forMode: tracking)
                let afterWaiting = EventLog<EvRunLoop.Activity>()
                loop.add(activityRecorder(afterWaiting, activities: .afterWaiting), forMode: tracking)
                let sender = spawnThread {
                    if spinUntil({ loop.isWaiting }) { kill(getpid(), SIGUSR2) }
                }
                loop.run(mode: tracking, timeout: .milliseconds(200))  // its deadline ends the one sleep
                pthread_join(sender, nil)
                guard afterWaiting.count == 1 else { return 10 }
                guard loop.run(mode: .default, timeout: .seconds(30), returnAfterSourceHandled: true) == .handledSource,
                    handled.wait(timeout: 0) else { return 11 }
                source.invalidate()
                return 0
            }
            exit(outcome)
        }
    }

    /// Glibc keeps signals 32 and 33 for itself (they never reach a handler), and 65 and above
    /// do not exist; the real-time signals from SIGRTMIN on can be watched.
    @Test func signalsReservedByTheCLibraryAreRefused() throws {
        for reserved: Int32 in [32, 33, 65, 100, .max, .min] {
            #expect(throws: EvSourceError.invalidSignal(reserved)) { try EvSignalSource(signal: reserved) {} }
        }
        for usable: Int32 in [SIGHUP, SIGUSR1, 31, 34, 64] {
            #expect(throws: Never.self) { try EvSignalSource(signal: usable) {} }
        }
    }
}

/// A source for `signal`, or the child process exits with 9 (an exit test's setup).
private func signalSource(_ signal: Int32, handler: @escaping @Sendable () -> Void) -> EvSignalSource {
    guard let source = try? EvSignalSource(signal: signal, handler: handler) else { exit(9) }
    return source
}
