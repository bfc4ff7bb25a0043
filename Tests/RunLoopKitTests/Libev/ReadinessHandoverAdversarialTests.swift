import Foundation
import RunLoopKit
import Testing
import TestSupport

/// How a ready descriptor reaches its source's handler when sources leave, rejoin, fail or are
/// made while readiness waits: none is lost, none is handed to another source or file.
@Suite struct ReadinessHandoverAdversarialTests {
    /// Readiness reported while its source was out of the loop (another thread removed it during
    /// the wait) is ignored; the source rejoins before the loop syncs its watchers, so it keeps
    /// its watcher, whose entry must report again: else it rests as if a handler would take it,
    /// and a loop that only polls never sees the descriptor.
    @Test func readinessReportedWhileItsSourceWasOutOfTheLoopIsSeenOnceItRejoins() throws {
        let pipe = DescriptorPipe()
        defer { pipe.close() }
        let handled = EventLog<EvFileDescriptorSource.Readiness>()
        let source = try EvFileDescriptorSource(fileDescriptor: pipe.readEnd, events: .readable) { readiness in
            handled.append(readiness)
            pipe.drain()
        }
        let (woke, polls) = onLoopThread { loop -> (EvRunLoop.RunResult, Int) in
            loop.add(source, forMode: .default)
            loop.add(keepAliveTimer(), forMode: .default)
            _ = loop.run(mode: .default, timeout: .zero)  // watched now
            // Out of the loop while it sleeps watching it, then readable: the wake-up finds it out.
            let helper = spawnThread {
                guard spinUntil({ loop.isWaiting }) else { return }
                loop.remove(source, forMode: .default)
                pipe.write()
            }
            loop.add(once(.afterWaiting) {
                loop.add(source, forMode: .default)  // back before the next sync: same watcher
                loop.stop()
            }, forMode: .default)
            let woke = loop.run(mode: .default, timeout: .seconds(30))
            pthread_join(helper, nil)
            var polls = 0
            while handled.count == 0 && polls < 50 {
                polls += 1
                _ = loop.run(mode: .default, timeout: .zero)
            }
            source.invalidate()
            return (woke, polls)
        }
        #expect(woke == .stopped)
        #expect(handled.all == [.readable])
        #expect(polls <= 2)
    }
}
