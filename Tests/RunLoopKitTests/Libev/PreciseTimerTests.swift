import Foundation
@testable import RunLoopKit
import Testing
import TestSupport

/// `timerPrecision = .precise` (R46): the wait arms a timer's deadline early, by how late its
/// deadline wake-ups come, and waits out the rest awake. These check what must hold on any
/// machine: never a fire before the date, and the early arming and the wait awake wherever the
/// deadline comes from. How much sooner than a standard timer it fires is the benchmark's to say.
@Suite struct PreciseTimerTests {
    /// Thirty precise timers, each added by the last one's callout, 2 ms on: none fires before
    /// its date.
    @Test func aPreciseTimerNeverFiresBeforeItsDate() {
        let earliness = EventLog<Duration>()
        let (_, finished) = startLoopThread { loop in
            loop.timerPrecision = .precise
            @Sendable func addTimer() {
                let due = ContinuousClock.now + .milliseconds(2)
                EvRunLoop.current.add(EvTimer(fireAt: due) { _ in
                    earliness.append(due - ContinuousClock.now)
                    if earliness.all.count < 30 { addTimer() }
                }, forMode: .default)
            }
            addTimer()
            _ = loop.run(mode: .default, timeout: .seconds(30))
        }
        #expect(finished.wait())
        #expect(earliness.all.count == 30)
        #expect(earliness.all.allSatisfy { $0 <= .zero }, "fires before their dates: \(earliness.all.filter { $0 > .zero })")
    }

    /// A timer added from another thread to a precise loop asleep with no deadline: the sleep's
    /// new deadline is a precise one, so the wake-up it ends with is measured and the rest waited
    /// out awake, as for the loop's own timers. Before, a deadline moved from another thread lost
    /// its precision: the timer fired as late as a standard one, and the lead learnt nothing.
    @Test func aTimerAddedFromAnotherThreadToASleepingPreciseLoopIsPrecise() {
        let seen = Box<(precise: Bool, leadLearnt: Bool, early: Bool)?>(nil)
        let (loop, finished) = startLoopThread { loop in
            loop.timerPrecision = .precise
            loop.add(EvSource {}, forMode: .default)  // keeps the mode from being empty (R16)
            _ = loop.run(mode: .default, timeout: nil)
        }
        #expect(spinUntil { loop.isWaiting })
        let due = ContinuousClock.now + .milliseconds(20)
        loop.add(EvTimer(fireAt: due) { _ in
            let now = ContinuousClock.now
            let deadline = (EvRunLoop.current.waiter as! EvBackend).withDeadline { $0 }
            seen.set((deadline.requested.precise, deadline.wakeLead.nanoseconds > 0, now < due))
            EvRunLoop.current.stop()
        }, forMode: .default)
        #expect(finished.wait())
        #expect(seen.get?.precise == true, "the moved deadline was not a precise one")
        #expect(seen.get?.leadLearnt == true, "the deadline's wake-up was not measured")
        #expect(seen.get?.early == false, "the timer fired before its date")
    }
}
