import Foundation
@testable import RunLoopKit
import Testing
import TestSupport

/// The descriptor that woke a loop (its eventfd, its timerfd) is read after the callouts it
/// woke the loop for, before the loop next enters libev: the callouts run one system call sooner
/// than if libev's callback read it, and the loop still sleeps afterwards.
@Suite struct WakeReadTests {
    /// A source signalled and woken from another thread while its loop sleeps in libev: in its
    /// callout the loop's eventfd still holds the write that woke it, and the loop sleeps again
    /// afterwards (an eventfd left unread would have libev return at once, for ever).
    @Test func aWokenSourcesCalloutRunsBeforeTheEventfdIsRead() {
        let counts = EventLog<UInt64>()
        let eventfd = Box<Int32>(-1)
        let tid = Box<Int32>(-1)
        let source = EvSource { counts.append(ThreadProbe.eventfdCount(of: eventfd.get) ?? 0) }
        let (loop, finished) = startLoopThread { loop in
            eventfd.set((loop.waiter as! EvBackend).wake.descriptor)
            tid.set(ThreadProbe.currentThreadID())
            loop.add(source, forMode: .default)
            _ = loop.run(mode: .default, timeout: nil)
        }
        #expect(spinUntil { tid.get >= 0 })
        for cycle in 1...20 {
            #expect(isInLibevPoll(loop, thread: tid.get))
            source.signal()
            loop.wakeUp()
            #expect(spinUntil { counts.all.count == cycle })
        }
        #expect(isInLibevPoll(loop, thread: tid.get))
        loop.stop()
        #expect(finished.wait())
        #expect(counts.all.allSatisfy { $0 > 0 }, "the eventfd's count in each callout: \(counts.all)")
    }

    /// A repeating timer (its timerfd repeats by itself and is read once per fire): in each
    /// callout the timerfd still holds the expiry that woke the loop, and every fire still comes
    /// from a sleep (an expiry left unread would wake the loop at once, and fire it early).
    @Test func aRepeatingTimersCalloutRunsBeforeTheTimerfdIsRead() {
        let ticks = EventLog<UInt64>()
        let (_, finished) = startLoopThread { loop in
            let timer = EvTimer(after: .milliseconds(1), interval: .milliseconds(1)) { timer in
                let timerfd = (EvRunLoop.current.waiter as! EvBackend).withDeadline { $0.timerFD }
                ticks.append(ThreadProbe.timerfdTicks(of: timerfd) ?? 0)
                if ticks.all.count == 20 { timer.invalidate() }
            }
            loop.add(timer, forMode: .default)
            _ = loop.run(mode: .default, timeout: .seconds(30))
        }
        #expect(finished.wait())
        #expect(ticks.all.count == 20 && ticks.all.allSatisfy { $0 > 0 }, "the timerfd's unread expiries in each callout: \(ticks.all)")
    }
}
