import Foundation
@testable import RunLoopKit
import Synchronization
import Testing
import TestSupport

/// Descriptor sources that leave the loop from another thread (the loop's thread cannot end
/// their watches at once) lose their watchers at the loop's next sync: no kernel entry and no
/// watcher is left for them, whether the loop noted each one (a few, during a nested run of
/// another mode) or gave the notes up (more than it keeps while nobody runs it).
@Suite struct WatcherLeavingTests {
    @Test(arguments: [5, 100])
    func sourcesInvalidatedFromAnotherThreadLeaveNoWatcherBehind(count: Int) throws {
        var pipes: [(Int32, Int32)] = []
        for _ in 0..<count {
            var ends: [Int32] = [0, 0]
            try #require(pipe(&ends) == 0)
            pipes.append((ends[0], ends[1]))
        }
        defer { for (readEnd, writeEnd) in pipes { close(readEnd); close(writeEnd) } }
        let sources = try pipes.map { try EvFileDescriptorSource(fileDescriptor: $0.0, events: .readable) { _ in } }
        let (before, after, watchers) = onLoopThread { loop -> (Int, Int, Int) in
            for source in sources { loop.add(source, forMode: .default) }
            let inner = EvRunLoop.Mode("leaving.inner")
            loop.add(EvTimer(after: .seconds(3600)) { _ in }, forMode: inner)
            let entries = { ThreadProbe.epollTargets(of: (loop.waiter as! EvBackend).descriptors?.descriptor ?? -1).count }
            _ = loop.run(mode: .default, timeout: .zero)  // every source watched
            let before = entries()
            let invalidate = EvSource {
                // From another thread, while the default mode's watches are parked.
                let done = Latch()
                Thread {
                    for source in sources { source.invalidate() }
                    done.open()
                }.start()
                _ = done.wait()
                _ = loop.run(mode: inner, timeout: .zero)
            }
            loop.add(invalidate, forMode: .default)
            _ = loop.run(mode: inner, timeout: .zero)
            invalidate.signal()
            _ = loop.run(mode: .default, timeout: .zero, returnAfterSourceHandled: true)
            _ = loop.run(mode: .default, timeout: .zero)
            invalidate.invalidate()
            return (before, entries(), loop.state.withLock { $0.watches.count })
        }
        #expect(before == count)
        #expect(after == 0, "\(after) kernel entries left for \(count) sources that left the loop")
        #expect(watchers == 0, "\(watchers) watchers left for \(count) sources that left the loop")
    }
}
