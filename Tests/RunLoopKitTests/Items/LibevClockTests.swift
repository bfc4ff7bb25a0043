import CLibev
import Foundation
import RunLoopKit
import Testing

/// The libraries' libev clock (`ev_now`) while modes without an ``EvLibevSource`` run: library
/// code called from their callouts, outside `withEventLoop`, times its watchers from it.
@Suite struct LibevClockTests {
    /// A library keeps its `ev_loop` and starts a timer whenever the application calls it; called
    /// after a mode without the source ran a while, the timer is timed from then, as on a libev
    /// loop that keeps running (the clock stood still, and the timer came due at once).
    @Test func aLibraryTimerStartedAfterAnotherModeRanIsTimedFromThen() {
        let (started, fired) = onLoopThread { loop -> (ContinuousClock.Instant, ContinuousClock.Instant?) in
            let tracking = EvRunLoop.Mode("tracking")
            let source = EvLibevSource()
            loop.add(source, forMode: .default)
            var fired: ContinuousClock.Instant?
            let timer = LibraryWatcher(.timer(seconds: 0.2)) {
                fired = .now
                loop.stop()
            }
            let evLoop = source.withEventLoop { $0 }  // kept, as a library keeps it
            loop.add(keepAliveTimer(), forMode: tracking)
            _ = loop.run(mode: tracking, timeout: .milliseconds(300))
            let started = ContinuousClock.now
            timer.start(evLoop)  // library code, called by the application
            _ = loop.run(mode: .default, timeout: .seconds(30))
            source.withEventLoop { timer.stop($0) }
            source.invalidate()
            return (started, fired)
        }
        guard let fired else {
            Issue.record("the library timer was not started, or never fired")
            return
        }
        #expect(fired - started >= .milliseconds(200))
    }
}
