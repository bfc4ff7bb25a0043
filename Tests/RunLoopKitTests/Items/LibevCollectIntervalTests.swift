import CLibev
import Foundation
import RunLoopKit
import Testing

/// libev's I/O collect interval (`ev_set_io_collect_interval`) on an ``EvLibevSource``'s loop:
/// libev sleeps that long before its poll, deaf to every wake-up, so RunLoopKit keeps it at zero.
@Suite struct LibevCollectIntervalTests {
    /// A timer of the run loop fires at its date in a mode holding the source, though a library
    /// set a collect interval of a second (it fired most of that second late, R46).
    @Test func aLibrarysIOCollectIntervalDoesNotDelayTheLoopsTimer() {
        let late = onLoopThread { loop -> Duration? in
            let source = EvLibevSource()
            loop.add(source, forMode: .default)
            source.withEventLoop { ev_set_io_collect_interval($0, 1) }
            _ = loop.run(mode: .default, timeout: .zero)
            let firedAt = Box<ContinuousClock.Instant?>(nil)
            let due = ContinuousClock.now + .milliseconds(10)
            loop.add(EvTimer(after: .milliseconds(10)) { _ in
                firedAt.set(.now)
                EvRunLoop.current.stop()
            }, forMode: .default)
            _ = loop.run(mode: .default, timeout: .seconds(30))
            source.invalidate()
            return firedAt.get.map { $0 - due }
        }
        guard let late else {
            Issue.record("the timer never fired")
            return
        }
        #expect(late < .milliseconds(500))
    }
}
