import CLibev
import Foundation
import RunLoopKit
import Testing

/// A library's event dropped before the version-1 step runs it: libev leaves a placeholder in
/// its pending array, which no public call tells from an event, so the step still runs as the
/// source's callout and counts as handled (<doc:LibevLibraries>, "When the libraries' callbacks run").
@Suite struct LibevClearedEventTests {
    enum Drop: CaseIterable { case clearPending, stop }

    /// R38 as documented: the wait reported the event, AfterWaiting dropped it; no callback runs,
    /// and the run still returns handledSource with one libev-source callout.
    @Test(arguments: Drop.allCases)
    func R38_aBatchWhoseOnlyEventWasDroppedAfterTheWaitStillCountsAsHandled(_ drop: Drop) {
        let pipe = DescriptorPipe()
        defer { pipe.close() }
        pipe.write()
        let outcome = onLoopThread { loop -> (EvRunLoop.RunResult, wasPending: Bool, calls: Int, libevCallouts: UInt64) in
            let source = EvLibevSource()
            loop.add(source, forMode: .default)
            let calls = Box(0)
            // Used on the loop's thread only, by the observer too.
            nonisolated(unsafe) let watcher = LibraryWatcher(.readable(pipe.readEnd)) { calls.set(calls.get + 1) }
            source.withEventLoop { watcher.start($0) }
            let wasPending = Box(false)
            let observer = EvObserver(activities: .afterWaiting, repeats: false) { _, _ in
                wasPending.set(watcher.isPending)
                source.withEventLoop { evLoop in
                    switch drop {
                    case .clearPending: _ = watcher.clearPending(evLoop)
                    case .stop: watcher.stop(evLoop)
                    }
                }
            }
            loop.add(observer, forMode: .default)
            let before = loop.metrics.callouts.libevSources
            let result = loop.run(mode: .default, timeout: .seconds(10), returnAfterSourceHandled: true)
            let callouts = loop.metrics.callouts.libevSources - before
            source.withEventLoop { watcher.stop($0) }
            source.invalidate()
            return (result, wasPending.get, calls.get, callouts)
        }
        #expect(outcome.wasPending)
        #expect(outcome.calls == 0)
        #expect(outcome.0 == .handledSource)
        #expect(outcome.libevCallouts == 1)
    }
}
