import CLibev
import Foundation
import RunLoopKit
import Testing

/// Library code that libev runs inside the wait (a prepare callback) is a callout like any other.
@Suite struct LibevWaitCalloutTests {
    /// R23: ``EvRunLoop/isWaiting`` is false inside a callout, a prepare callback too, though it
    /// runs between BeforeWaiting and AfterWaiting; once it returns and the loop sleeps, it is
    /// true again.
    @Test func R23_isWaitingIsFalseInAPrepareCallbackAndTrueAgainOnceTheLoopSleeps() {
        let seen = Box<[Bool]>([])
        let prepared = Latch()
        let (loop, finished) = startLoopThread { loop in
            let source = EvLibevSource()
            loop.add(source, forMode: .default)
            let prepare = LibraryWatcher(.prepare) {
                seen.update { $0.append(loop.isWaiting) }
                prepared.open()
            }
            source.withEventLoop { prepare.start($0) }
            _ = loop.run(mode: .default, timeout: .seconds(30))
            source.withEventLoop { prepare.stop($0) }
            source.invalidate()
        }
        #expect(prepared.wait())
        let asleepAgain = spinUntil { loop.isWaiting }
        loop.stop()
        #expect(finished.wait())
        #expect(asleepAgain)
        #expect(seen.get.first == false)
    }
}
