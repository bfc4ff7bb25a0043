import Foundation
import RunLoopKit
import Testing

/// A loop keeps its timers alive, and lets them go when it is torn down; a timer cancelled and
/// dropped during a step is not read afterwards (under `make test-asan` such a read fails).
@Suite struct TimerLifetimeTests {
    /// Weak reference to a timer, to see when it is freed.
    private final class Weak: @unchecked Sendable {  // written on the loop's thread, read after its join
        weak var timer: EvTimer?
    }

    @Test func aTimerInAModeIsKeptAliveByItsLoopAndFreedWhenTheLoopIsTornDown() {
        let weak = Weak()
        let keptAlive = onLoopThread { loop -> Bool in
            do {
                let timer = EvTimer(after: .seconds(3600)) { _ in }
                weak.timer = timer
                loop.add(timer, forMode: .default)
            }
            return weak.timer != nil
        }
        #expect(keptAlive)
        #expect(weak.timer == nil)  // the thread has exited: its loop let the timer go (R4)
    }

    /// Cancelling leaves a stale heap entry that still holds the timer (lazy deletion); once
    /// stale entries outnumber live ones the heap is compacted, so cancelled timers are let go
    /// without the loop running (R45), not kept alive until their fire dates come round.
    @Test func R45_cancelledTimersAreLetGoOnceStaleEntriesOutnumberLiveOnes() {
        let count = 200
        let stillAlive = onLoopThread { loop -> Int in
            let weaks = (0..<count).map { _ in Weak() }
            do {
                let timers = (0..<count).map { index in
                    EvTimer(after: .seconds(3600 + index)) { _ in }
                }
                for (weak, timer) in zip(weaks, timers) {
                    weak.timer = timer
                    loop.add(timer, forMode: .default)
                }
                for timer in timers { timer.invalidate() }
            }
            return weaks.count { $0.timer != nil }
        }
        #expect(stillAlive <= 65)  // at most the compaction's slack of 64 stale entries
    }

    /// Two timers due in the same step: the first one's handler cancels the second and drops the
    /// last reference to it. The second does not fire, and the step does not read freed memory.
    @Test func aDueTimerCancelledAndDroppedByAnEarlierOneInTheSameStepDoesNotFire() {
        let fires = onLoopThread { loop -> [String] in
            let fires = EventLog<String>()
            let holder = Box<EvTimer?>(nil)
            let first = EvTimer(fireAt: .now - .milliseconds(2)) { _ in
                fires.append("first")
                holder.update { timer in
                    timer?.invalidate()
                    timer = nil
                }
            }
            holder.set(EvTimer(fireAt: .now - .milliseconds(1)) { _ in fires.append("second") })
            loop.add(first, forMode: .default)
            loop.add(holder.get!, forMode: .default)
            loop.run(mode: .default, timeout: .seconds(30))
            return fires.all
        }
        #expect(fires == ["first"])
    }
}
