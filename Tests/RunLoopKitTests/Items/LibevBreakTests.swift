import CLibev
import Foundation
import RunLoopKit
import Testing

/// `ev_break` on an ``EvLibevSource``'s libev loop is without effect, wherever library code
/// calls it.
@Suite struct LibevBreakTests {
    /// A prepare callback runs inside the wait, before the poll: its `ev_break` made libev skip
    /// the poll, and the wait, which had not ended, entered `ev_run` again, so the loop spun
    /// there for ever, past the run's deadline (here the callback stops breaking after a while).
    @Test func anEvBreakInAPrepareCallbackDoesNotKeepTheLoopFromPolling() {
        let (result, prepares) = onLoopThread { loop -> (EvRunLoop.RunResult, Int) in
            let source = EvLibevSource()
            loop.add(source, forMode: .default)
            let evLoop = source.withEventLoop { $0 }
            var prepares = 0
            let prepare = LibraryWatcher(.prepare) {
                prepares += 1
                if prepares < 10_000 { ev_break(evLoop, Int32(EVBREAK_ONE)) }
            }
            source.withEventLoop { prepare.start($0) }
            let result = loop.run(mode: .default, timeout: .milliseconds(20))
            source.withEventLoop { prepare.stop($0) }
            source.invalidate()
            return (result, prepares)
        }
        #expect(result == .timedOut)
        #expect(prepares < 100, "the prepare callback ran \(prepares) times: the loop did not poll")
    }
}
