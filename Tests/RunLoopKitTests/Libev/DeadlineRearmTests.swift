import Foundation
import RunLoopKit
import Testing
import TestSupport

/// The loop sets its timerfd only when the deadline changes (no system call on a wake-up that
/// libev does not make). These pin down when an unchanged date must still be set.
@Suite struct DeadlineRearmTests {
    /// The timerfd is one-shot: once it expired and was read it holds nothing, so a later sleep
    /// for the same date must set it again. Here a timer's date T is armed by a sleep in mode
    /// `m1`; the loop is woken before T; after T a poll of mode `m2` (whose descriptor source
    /// makes the poll enter `ev_run`) reads the expired timerfd without firing the timer, which
    /// is not in `m2`; then `m1` runs again and must sleep for T, which is past: the timer fires at
    /// once (R40, R22). Had the loop taken the timerfd for still holding T, it would sleep until
    /// the run's timeout, and so for ever (only the timer's date is armed).
    @Test func aDateTheTimerfdFiredForIsArmedAgain() {
        let m1 = EvRunLoop.Mode("DeadlineRearm.m1")
        let m2 = EvRunLoop.Mode("DeadlineRearm.m2")
        let outcome = onLoopThread { loop -> (result: EvRunLoop.RunResult, seconds: Double)? in
            var fds: [Int32] = [0, 0]
            guard pipe(&fds) == 0 else { return nil }
            defer { close(fds[0]); close(fds[1]) }
            // Never readable: it only makes m2's poll go through libev.
            guard let pipeSource = try? EvFileDescriptorSource(fileDescriptor: fds[0], events: .readable, handler: { _ in })
            else { return nil }
            loop.add(pipeSource, forMode: m2)
            let source = EvSource {}
            loop.add(source, forMode: m1)
            let timerDate = ContinuousClock.now + .milliseconds(100)
            loop.add(EvTimer(after: .milliseconds(100)) { _ in EvRunLoop.current.stop() }, forMode: m1)
            // 1. Sleep in m1, armed for the timer; woken well before its date.
            let waker = spawnThread {
                while !loop.isWaiting { sched_yield() }
                source.signal()
                loop.wakeUp()
            }
            let first = loop.run(mode: m1, timeout: .seconds(10), returnAfterSourceHandled: true)
            pthread_join(waker, nil)
            guard first == .handledSource, ContinuousClock.now < timerDate else { return nil }
            // 2. Past the date, m2's poll reads the expired timerfd.
            while ContinuousClock.now < timerDate + .milliseconds(5) {}
            _ = loop.run(mode: m2, timeout: .zero)
            // 3. m1 again: the timer is due; its handler stops the run. Had the loop slept for
            // good (the timer's date comes before the run's timeout, so only it is armed), a
            // watchdog stops it after 3 s, which the elapsed time shows.
            let finished = Latch()
            let watchdog = spawnThread {
                if !finished.wait(timeout: 3) { loop.stop() }
            }
            let start = ContinuousClock.now
            let result = loop.run(mode: m1, timeout: .seconds(10))
            let elapsed = ContinuousClock.now - start
            finished.open()
            pthread_join(watchdog, nil)
            pipeSource.invalidate()
            return (result, Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
        }
        guard let outcome else {
            Issue.record("the scenario did not set up (the wake-up came after the timer's date, or pipe failed)")
            return
        }
        #expect(outcome.result == .stopped, "the timer did not fire at once: run ended \(outcome.result) after \(outcome.seconds) s")
        #expect(outcome.seconds < 2, "the timer fired only after \(outcome.seconds) s")
    }

    /// A timer removed, or invalidated, from another thread while the loop sleeps for it does not
    /// wake the loop at its date: the sleep goes on to the run's timeout, the one wake-up its
    /// observers see. Before, the timerfd stayed armed for the timer that was gone, and the loop
    /// woke once for nothing (two AfterWaitings, not one).
    @Test(arguments: [false, true])
    func aTimerThatLeavesTheModeFromAnotherThreadNoLongerWakesTheSleep(invalidates: Bool) {
        let (wakeUps, fired) = onLoopThread { loop -> (Int, Bool) in
            let afterWaiting = EventLog<EvRunLoop.Activity>()
            loop.add(EvObserver(activities: .afterWaiting) { _, activity in afterWaiting.append(activity) }, forMode: .default)
            loop.add(EvSource {}, forMode: .default)  // keeps the mode from being empty (R16)
            let fired = Latch()
            let timer = EvTimer(after: .milliseconds(400)) { _ in fired.open() }
            loop.add(timer, forMode: .default)
            let remover = spawnThread {
                guard spinUntil({ loop.isWaiting }) else { return }
                if invalidates { timer.invalidate() } else { loop.remove(timer, forMode: .default) }
            }
            loop.run(mode: .default, timeout: .milliseconds(700))
            pthread_join(remover, nil)
            return (afterWaiting.count, fired.wait(timeout: 0))
        }
        #expect(!fired)
        #expect(wakeUps == 1)
    }
}
