import CLibev
import Foundation
@testable import RunLoopKit
import TestSupport
import Testing

/// Watchers that libev runs outside the poll's events, started by a library on an
/// ``EvLibevSource``'s loop: they run when libev runs them on a plain loop, and never keep the
/// run loop from blocking.
@Suite struct LibevWatcherKindsTests {
    /// libev runs prepare watchers just before it blocks. Held back for the version-1 step, a
    /// prepare watcher, queued again by every wait, ended every wait before its poll: the loop
    /// spun and no other library event was seen.
    @Test func aPrepareWatcherRunsBeforeThePollAndTheLoopStillPolls() {
        let pipe = DescriptorPipe()
        defer { pipe.close() }
        pipe.write()
        let log = EventLog<String>()
        let result = onLoopThread { loop -> EvRunLoop.RunResult in
            let source = EvLibevSource()
            loop.add(source, forMode: .default)
            let prepare = LibraryWatcher(.prepare) { log.append("prepare") }
            let reader = LibraryWatcher(.readable(pipe.readEnd)) {
                pipe.readByte()
                log.append("readable")
            }
            source.withEventLoop { evLoop in
                prepare.start(evLoop)
                reader.start(evLoop)
            }
            let result = loop.run(mode: .default, timeout: .seconds(30), returnAfterSourceHandled: true)
            source.withEventLoop { evLoop in
                prepare.stop(evLoop)
                reader.stop(evLoop)
            }
            source.invalidate()
            return result
        }
        #expect(result == .handledSource)
        #expect(log.all == ["prepare", "readable"])
    }

    /// An event a library feeds from library code (`ev_feed_event`) is an event like any other:
    /// its callback runs in the version-1 step, as a handled source, not inside the wait.
    @Test func aFedEventRunsInTheVersion1StepAsAHandledSource() {
        let pipe = DescriptorPipe()
        defer { pipe.close() }
        let log = EventLog<String>()
        let result = onLoopThread { loop -> EvRunLoop.RunResult in
            let source = EvLibevSource()
            loop.add(source, forMode: .default)
            loop.add(phaseLogger(log, [.beforeWaiting, .afterWaiting]), forMode: .default)
            let reader = LibraryWatcher(.readable(pipe.readEnd)) { log.append("fed") }
            source.withEventLoop { evLoop in
                reader.start(evLoop)
                reader.feed(evLoop, Int32(EV_READ))
            }
            let result = loop.run(mode: .default, timeout: .seconds(30), returnAfterSourceHandled: true)
            source.withEventLoop { reader.stop($0) }
            source.invalidate()
            return result
        }
        #expect(result == .handledSource)
        #expect(log.all == ["beforeWaiting", "afterWaiting", "fed"])
    }

    /// libev runs fork watchers once after `ev_loop_fork`, before its next poll, and then
    /// rebuilds its kernel state; held back, they were queued again at every wait.
    @Test func aForkWatcherRunsOnceAfterEvLoopFork() {
        let pipe = DescriptorPipe()
        defer { pipe.close() }
        pipe.write()
        let log = EventLog<String>()
        let results = onLoopThread { loop -> [EvRunLoop.RunResult] in
            let source = EvLibevSource()
            loop.add(source, forMode: .default)
            let fork = LibraryWatcher(.fork) { log.append("fork") }
            let reader = LibraryWatcher(.readable(pipe.readEnd)) {
                pipe.readByte()
                log.append("readable")
            }
            source.withEventLoop { evLoop in
                fork.start(evLoop)
                reader.start(evLoop)
                ev_loop_fork(evLoop)
            }
            var results = [loop.run(mode: .default, timeout: .seconds(30), returnAfterSourceHandled: true)]
            results.append(loop.run(mode: .default, timeout: .zero))
            source.withEventLoop { evLoop in
                fork.stop(evLoop)
                reader.stop(evLoop)
            }
            source.invalidate()
            return results
        }
        #expect(results == [.handledSource, .timedOut])
        #expect(log.all == ["fork", "readable"])
    }

    /// `ev_loop_fork` has libev make its epoll sets again: the libraries' loop's, and, through
    /// the embedding, the run loop's own. The new numbers are the loop's own descriptors, and an
    /// old one libev closed is not. (The old numbers stayed marked: a caller's descriptor that
    /// took one was refused, and the new sets could be watched as a caller's.)
    @Test func theEpollSetsLibevMakesAgainAfterEvLoopForkAreTheLoopsOwn() {
        let (old, new, newAreOwn, oldLeftOrReused) = onLoopThread { loop -> ([Int32], [Int32], Bool, Bool) in
            let below = open("/dev/null", O_RDONLY)  // a free number below the libraries' set once closed
            let source = EvLibevSource()
            loop.add(source, forMode: .default)
            source.withEventLoop { _ in }
            let old = epollSets(of: loop)
            close(below)
            source.withEventLoop { ev_loop_fork($0) }
            _ = loop.run(mode: .default, timeout: .zero)
            let new = epollSets(of: loop)
            let newAreOwn = new.allSatisfy(EvBackend.isInternalDescriptor)
            // Closed by libev: unless another thread opened the number since, not the loop's.
            let oldLeftOrReused = old.filter { !new.contains($0) }
                .allSatisfy { !EvBackend.isInternalDescriptor($0) || fcntl($0, F_GETFD) >= 0 }
            source.invalidate()
            return (old, new, newAreOwn, oldLeftOrReused)
        }
        #expect(old.count == 2 && new.count == 2)
        #expect(newAreOwn, "old \(old), new \(new)")
        #expect(oldLeftOrReused, "old \(old), new \(new)")
    }

    /// A cleanup watcher still started when the loop's thread exits runs as libev destroys the
    /// loop, as on a plain libev loop (it stopped the program with a message about `ev_run`).
    @Test func aCleanupWatcherLeftStartedRunsWhenTheLoopsThreadExits() {
        let calls = Box(0)
        let kept = KeptWatcher()
        onLoopThread { loop in
            let source = EvLibevSource()
            loop.add(source, forMode: .default)
            let cleanup = LibraryWatcher(.cleanup) { calls.set(calls.get + 1) }
            kept.watcher = cleanup  // libev still holds it when the thread exits
            source.withEventLoop { cleanup.start($0) }
            _ = loop.run(mode: .default, timeout: .zero)
        }
        #expect(calls.get == 1)
    }

    /// A prepare callback runs inside the wait, before it blocks: a run nested in it that sleeps
    /// ends the enclosing sleep too, so a wake-up made after the nested run is not lost.
    @Test func aWakeUpAfterARunNestedInAPrepareCallbackEndsTheSleep() {
        let trackingPipe = DescriptorPipe()
        defer { trackingPipe.close() }
        let nestedAsleep = Latch()
        let nestedRunEnded = Latch()
        let handled = Box(false)
        let signal = EvSource { handled.set(true) }
        let (loop, finished) = startLoopThread { loop in
            let tracking = EvRunLoop.Mode("tracking")
            loop.add(try! EvFileDescriptorSource(fileDescriptor: trackingPipe.readEnd, events: .readable) { _ in trackingPipe.readByte() }, forMode: tracking)
            loop.add(EvObserver(activities: .beforeWaiting, repeats: false) { _, _ in nestedAsleep.open() }, forMode: tracking)
            loop.add(signal, forMode: .default)
            let source = EvLibevSource()
            loop.add(source, forMode: .default)
            var nested = false
            let prepare = LibraryWatcher(.prepare) {
                guard !nested else { return }
                nested = true
                _ = loop.run(mode: tracking, timeout: .seconds(30), returnAfterSourceHandled: true)
                nestedRunEnded.open()
            }
            source.withEventLoop { prepare.start($0) }
            while !handled.get {
                guard loop.run(mode: .default, timeout: .seconds(30), returnAfterSourceHandled: true) == .handledSource else { break }
            }
            source.withEventLoop { prepare.stop($0) }
            source.invalidate()
        }
        #expect(nestedAsleep.wait())
        trackingPipe.write()
        #expect(nestedRunEnded.wait())
        signal.signal()
        loop.wakeUp()
        #expect(finished.wait(timeout: 10))
        #expect(handled.get)
    }

    /// The libraries' loop does not iterate while modes without the source run: the time it
    /// reports to library code is brought up to date, so a timer started there is timed from now.
    @Test func libraryCodeSeesTheCurrentTimeAfterAnotherModeRan() {
        let (before, now) = onLoopThread { loop -> (Double, Double) in
            let tracking = EvRunLoop.Mode("tracking")
            loop.add(keepAliveTimer(), forMode: tracking)
            let source = EvLibevSource()
            loop.add(source, forMode: .default)
            _ = loop.run(mode: .default, timeout: .zero)
            _ = loop.run(mode: tracking, timeout: .milliseconds(20))
            let before = ev_time()
            let now = source.withEventLoop { ev_now($0) }
            source.invalidate()
            return (before, now)
        }
        #expect(now >= before)
    }
}

/// Keeps a watcher alive past the loop thread's exit (libev still holds it then).
private final class KeptWatcher: @unchecked Sendable {
    var watcher: LibraryWatcher?
}

/// A stall monitor sees library code that runs inside the wait.
@Suite struct LibevWatcherStallTests {
    /// A prepare callback runs after BeforeWaiting, inside the wait: the loop's thread is busy
    /// there, not asleep, and a stall in it is reported as the libev sources' callout.
    @Test func aPrepareCallbackThatStallsIsReported() throws {
        let reported = Latch()
        let monitorStarted = Latch()
        let (loop, finished) = startLoopThread { loop in
            let source = EvLibevSource()
            loop.add(source, forMode: .default)
            var stalled = false
            let prepare = LibraryWatcher(.prepare) {
                guard !stalled else { return }
                stalled = true
                #expect(reported.wait(timeout: 30), "the stall was never reported")
                loop.stop()
            }
            #expect(monitorStarted.wait())
            source.withEventLoop { prepare.start($0) }
            _ = loop.run(mode: .default, timeout: .seconds(30), returnAfterSourceHandled: true)
            source.withEventLoop { prepare.stop($0) }
            source.invalidate()
        }
        let report = try firstStallReport(of: loop, monitoring: monitorStarted, finished: finished, reported: reported)
        #expect(report.callout == .libevSource)
        #expect(report.phase == .beforeWaiting)
    }
}

/// The run loop's own epoll set (the one watching its wake-up eventfd) and the libraries' loop's
/// (the one watching that set), found in `/proc/self`.
private func epollSets(of loop: EvRunLoop) -> [Int32] {
    let wake = loop.libevWaiter!.takeUnretainedValue().wake.descriptor
    let open = ((try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []).compactMap { Int32($0) }
    guard let own = open.first(where: { ThreadProbe.epollTargets(of: $0).contains(wake) }) else { return [] }
    guard let library = open.first(where: { ThreadProbe.epollTargets(of: $0).contains(own) }) else { return [own] }
    return [own, library]
}
