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

    /// A failure (the number closed while its file stays open elsewhere) waits its turn behind
    /// another source, whose handler takes the failing source out of its mode and back in: the
    /// failure went with it, and the watcher it stopped must start again and report it, or the
    /// source stays in its mode watching nothing and is never told.
    @Test func aFailureDroppedWithASourceThatLeftItsModeAndRejoinedIsReportedAgain() throws {
        let first = DescriptorPipe()
        let pipe = DescriptorPipe(readEndAt: reservedDescriptorNumber(20))
        let keeper = dup(pipe.readEnd)
        defer { first.close(); close(keeper); close(pipe.writeEnd) }
        let events = EventLog<EvFileDescriptorSource.Readiness>()
        let failing = try EvFileDescriptorSource(fileDescriptor: pipe.readEnd, events: .readable) { events.append($0) }
        let early = try EvFileDescriptorSource(fileDescriptor: first.readEnd, events: .readable) { _ in
            first.drain()
            EvRunLoop.current.remove(failing, forMode: .default)
            EvRunLoop.current.add(failing, forMode: .default)
        }
        let (polls, stillValid) = onLoopThread { loop -> (Int, Bool) in
            loop.add(early, forMode: .default)
            loop.add(failing, forMode: .default)
            loop.add(keepAliveTimer(), forMode: .default)
            _ = loop.run(mode: .default, timeout: .zero)  // both watched
            first.write()
            close(pipe.readEnd)
            pipe.write()  // reported by the file's entry after `first`: a failure, as the number is closed
            _ = loop.run(mode: .default, timeout: .zero, returnAfterSourceHandled: true)  // `early`
            var polls = 0
            while events.count == 0 && polls < 50 {
                polls += 1
                _ = loop.run(mode: .default, timeout: .zero)
            }
            let stillValid = failing.isValid
            early.invalidate()
            failing.invalidate()
            return (polls, stillValid)
        }
        #expect(events.all == [.error])
        #expect(!stillValid)
        #expect(polls <= 2)
    }
}
