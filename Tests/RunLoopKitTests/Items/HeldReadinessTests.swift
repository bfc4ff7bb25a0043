import Foundation
import RunLoopKit
import Testing
import TestSupport

/// C70, R38: where the loop has an AfterWaiting observer, an iteration takes the version-1 source
/// its wait found ready before the observers run. What they do to that source meanwhile still
/// counts: one taken out of the running mode, or invalidated, is not handled there.
@Suite struct HeldReadinessTests {
    private static let other = EvRunLoop.Mode("other")

    /// The observer takes the port out of the running mode: no handler runs in that mode, and the
    /// message waits for a run of the port's other mode (R37), which handles it.
    @Test func aSourceAnAfterWaitingObserverTakesOutOfTheRunningModeWaitsForItsOtherMode() {
        let received = EventLog<Int>()
        let port = EvMessagePort<Int> { received.append($0) }
        let (first, handledInDefault, second) = onLoopThread { loop in
            loop.add(port, forMode: .default)
            loop.add(port, forMode: Self.other)
            loop.add(keepAliveTimer(), forMode: .default)
            loop.add(EvObserver(activities: .afterWaiting, repeats: false) { _, _ in
                loop.remove(port, forMode: .default)
                loop.stop()
            }, forMode: .default)
            try! port.send(1)
            let first = loop.run(mode: .default, timeout: .seconds(30), returnAfterSourceHandled: true)
            let handledInDefault = received.count
            let second = loop.run(mode: Self.other, timeout: .seconds(30), returnAfterSourceHandled: true)
            return (first, handledInDefault, second)
        }
        #expect(first == .stopped)
        #expect(handledInDefault == 0)
        #expect(second == .handledSource)
        #expect(received.all == [1])
    }

    /// The observer invalidates the port: its handler never runs, and the run goes on.
    @Test func aSourceAnAfterWaitingObserverInvalidatesIsNotHandled() {
        let received = EventLog<Int>()
        let port = EvMessagePort<Int> { received.append($0) }
        let result = onLoopThread { loop -> EvRunLoop.RunResult in
            loop.add(port, forMode: .default)
            loop.add(keepAliveTimer(), forMode: .default)
            loop.add(EvObserver(activities: .afterWaiting, repeats: false) { _, _ in
                port.invalidate()
                loop.stop()
            }, forMode: .default)
            try! port.send(1)
            return loop.run(mode: .default, timeout: .seconds(30), returnAfterSourceHandled: true)
        }
        #expect(result == .stopped)
        #expect(received.all.isEmpty)
    }
}
