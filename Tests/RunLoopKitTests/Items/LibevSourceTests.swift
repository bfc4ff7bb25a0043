import CLibev
import Foundation
@testable import RunLoopKit
import Testing
import TestSupport

/// ``EvLibevSource``: libev watchers started on its loop, as a libev library starts them, have
/// their callbacks run on the loop's thread in the version-1 step, only while a mode holding the
/// source runs. (The hiredis proof is the nested package Examples/HiredisOnRunLoop.)
@Suite struct LibevSourceTests {
    /// R20.11, R38: the callback runs after AfterWaiting, on the loop's thread, as the source's
    /// callout (named so to a stall monitor and counted in the metrics), and the run returns
    /// handledSource.
    @Test func R38_aLibraryCallbackRunsInTheVersion1StepAsTheSourcesCallout() {
        let pipe = DescriptorPipe()
        defer { pipe.close() }
        pipe.write()
        let log = EventLog<String>()
        let (result, metrics) = onLoopThread { loop -> (EvRunLoop.RunResult, EvRunLoop.Metrics) in
            let source = EvLibevSource()
            loop.add(source, forMode: .default)
            loop.add(EvObserver(activities: [.beforeWaiting, .afterWaiting]) { _, activity in log.append("\(activity)") }, forMode: .default)
            let watcher = LibraryWatcher(.readable(pipe.readEnd)) {
                pipe.readByte()
                log.append("callback on loop thread: \(loop.isCurrent), callout: \(loop.currentCallout.map { "\($0)" } ?? "none")")
            }
            source.withEventLoop { watcher.start($0) }
            let result = loop.run(mode: .default, timeout: .seconds(10), returnAfterSourceHandled: true)
            source.withEventLoop { watcher.stop($0) }
            source.invalidate()
            return (result, loop.metrics)
        }
        #expect(result == .handledSource)
        #expect(log.all == ["beforeWaiting", "afterWaiting", "callback on loop thread: true, callout: libev source"])
        #expect(metrics.callouts.libevSources == 1)
        #expect(metrics.callouts.version1Sources == 0)
    }

    /// R37: while a mode without the source runs, a ready library descriptor is not watched: its
    /// callback waits, and the loop sleeps (a handful of iterations, not a spin). It runs as soon
    /// as a mode with the source runs.
    @Test func R37_aLibraryCallbackWaitsWhileAModeWithoutTheSourceRunsAndTheLoopDoesNotSpin() {
        let pipe = DescriptorPipe()
        defer { pipe.close() }
        let calls = Box(0)
        let outcome = onLoopThread { loop -> (tracking: EvRunLoop.RunResult, iterations: UInt64, callsThen: Int, after: EvRunLoop.RunResult) in
            let tracking = EvRunLoop.Mode("tracking")
            let source = EvLibevSource()
            loop.add(source, forMode: .default)
            loop.add(keepAliveTimer(), forMode: tracking)
            let watcher = LibraryWatcher(.readable(pipe.readEnd)) {
                pipe.readByte()
                calls.set(calls.get + 1)
            }
            source.withEventLoop { watcher.start($0) }
            // Registered with the kernel by a poll of the default mode first: not watched later anyway.
            _ = loop.run(mode: .default, timeout: .zero)
            pipe.write()
            let before = loop.metrics.iterations
            let trackingResult = loop.run(mode: tracking, timeout: .milliseconds(100))
            let iterations = loop.metrics.iterations - before
            let callsThen = calls.get
            let after = loop.run(mode: .default, timeout: .seconds(10), returnAfterSourceHandled: true)
            source.withEventLoop { watcher.stop($0) }
            source.invalidate()
            return (trackingResult, iterations, callsThen, after)
        }
        #expect(outcome.tracking == .timedOut)
        #expect(outcome.callsThen == 0)
        #expect(outcome.iterations <= 3)
        #expect(outcome.after == .handledSource)
        #expect(calls.get == 1)
    }

    /// No library event waits for ever: a library's `ev_timer` ends the sleep at its date (the
    /// loop sleeps in the library loop's `ev_run`, which counts its timers).
    @Test func aLibraryTimerEndsTheSleepAtItsDate() {
        let (result, elapsed, fired) = onLoopThread { loop -> (EvRunLoop.RunResult, Duration, Bool) in
            let source = EvLibevSource()
            loop.add(source, forMode: .default)
            var fired = false
            let timer = LibraryWatcher(.timer(seconds: 0.02)) { fired = true }
            let start = ContinuousClock.now
            source.withEventLoop { timer.start($0) }
            let result = loop.run(mode: .default, timeout: .seconds(10), returnAfterSourceHandled: true)
            let elapsed = ContinuousClock.now - start
            source.invalidate()
            return (result, elapsed, fired)
        }
        #expect(result == .handledSource)
        #expect(fired)
        #expect(elapsed >= .milliseconds(20))
        #expect(elapsed < .seconds(5))
    }

    /// R16, R18: a mode holding only an EvLibevSource is not empty (its run times out); once the
    /// source is invalidated it is.
    @Test func R16_aModeHoldingAnEvLibevSourceIsNotEmpty() {
        let results = onLoopThread { loop -> [EvRunLoop.RunResult] in
            let source = EvLibevSource()
            loop.add(source, forMode: .default)
            let held = loop.run(mode: .default, timeout: .milliseconds(20))
            source.invalidate()
            return [held, loop.run(mode: .default, timeout: .milliseconds(20))]
        }
        #expect(results == [.timedOut, .finished])
    }

    /// R22 while the loop sleeps in the library loop: a RunLoopKit timer fires, an fd source of
    /// the same mode is handled, and a stop from another thread ends the sleep (the library loop
    /// embeds the loop's own, whose descriptors carry all three).
    @Test func R22_whatWakesALoopStillWakesItWhileItSleepsInTheLibraryLoop() throws {
        let pipe = DescriptorPipe()
        defer { pipe.close() }
        let log = EventLog<String>()
        let asleep = Latch()
        let tid = Box<Int32>(-1)
        let (loop, finished) = startLoopThread { loop in
            tid.set(ThreadProbe.currentThreadID())
            let source = EvLibevSource()
            loop.add(source, forMode: .default)
            loop.add(EvTimer(after: .milliseconds(30)) { _ in
                log.append("timer")
                loop.stop()
            }, forMode: .default)
            log.append("\(loop.run(mode: .default))")
            let fdSource = try! EvFileDescriptorSource(fileDescriptor: pipe.readEnd, events: .readable) { _ in
                pipe.readByte()
                log.append("fd source")
                loop.stop()
            }
            loop.add(fdSource, forMode: .default)
            loop.add(once(.beforeWaiting) { asleep.open() }, forMode: .default)
            log.append("\(loop.run(mode: .default))")
            loop.add(once(.beforeWaiting) { asleep.open() }, forMode: .default)
            log.append("\(loop.run(mode: .default))")
            fdSource.invalidate()
            source.invalidate()
        }
        let backend = loop.waiter as! EvBackend
        #expect(asleep.wait())
        #expect(isInLibevPoll(loop, thread: tid.get))
        #expect(backend.watchedLibrary != nil)
        pipe.write()
        #expect(asleep.wait())
        #expect(isInLibevPoll(loop, thread: tid.get))
        loop.stop()
        #expect(finished.wait())
        #expect(log.all == ["timer", "stopped", "fd source", "stopped", "stopped"])
    }

    /// ``EvLibevSource/onDetach(_:)``: the handlers run once at invalidation, on the loop's
    /// thread, with the libev loop they attached to; the library stops its watcher there.
    @Test func detachHandlersRunAtInvalidationWithTheLibevLoop() {
        let log = onLoopThread { loop -> [String] in
            var log: [String] = []
            let source = EvLibevSource()
            loop.add(source, forMode: .default)
            let pipe = DescriptorPipe()
            defer { pipe.close() }
            let watcher = LibraryWatcher(.readable(pipe.readEnd)) {}
            let attached = source.withEventLoop { evLoop in
                watcher.start(evLoop)
                return evLoop
            }
            source.onDetach { evLoop in
                watcher.stop(evLoop)
                log.append("first: same loop \(evLoop == attached), on its thread \(loop.isCurrent)")
            }
            source.onDetach { _ in log.append("second") }
            source.invalidate()
            source.invalidate()
            log.append("valid: \(source.isValid), watcher active: \(watcher.isActive)")
            return log
        }
        #expect(log == ["first: same loop true, on its thread true", "second", "valid: false, watcher active: false"])
    }

    /// R4: a loop whose thread exits with a library watcher started runs the detach handler
    /// first, while the libev loop exists, and leaves the source invalid.
    @Test func R4_aThreadThatExitsRunsTheDetachHandlersBeforeTheLibevLoopGoes() {
        let detached = Box<String?>(nil)
        let source = EvLibevSource()
        let pipe = DescriptorPipe()
        defer { pipe.close() }
        pipe.write()
        onLoopThread { loop in
            loop.add(source, forMode: .common)
            let watcher = LibraryWatcher(.readable(pipe.readEnd)) {}
            source.withEventLoop { watcher.start($0) }
            source.onDetach { evLoop in
                let wasActive = watcher.isActive
                watcher.stop(evLoop)
                detached.set("active before: \(wasActive), after: \(watcher.isActive)")
            }
        }
        #expect(detached.get == "active before: true, after: false")
        #expect(!source.isValid)
    }

    /// A loop that never makes an EvLibevSource has no library loop; the first source's use
    /// makes one.
    @Test func aLoopWithoutTheSourceHasNoLibraryLoop() {
        let (before, after) = onLoopThread { loop -> (Bool, Bool) in
            loop.add(keepAliveTimer(), forMode: .default)
            loop.run(mode: .default, timeout: .milliseconds(1))
            let backend = loop.waiter as! EvBackend
            let before = backend.watcherTables?.library != nil
            let source = EvLibevSource()
            loop.add(source, forMode: .default)
            loop.run(mode: .default, timeout: .milliseconds(1))
            let after = backend.watcherTables?.library != nil
            source.invalidate()
            return (before, after)
        }
        #expect(!before)
        #expect(after)
    }

    /// R58 and `ev_break`: a library callback may run the loop again (the nested run handles the
    /// next library event), and `ev_break` from a callback changes nothing.
    @Test func R58_aLibraryCallbackMayRunTheLoopAgainAndEvBreakChangesNothing() {
        let pipe = DescriptorPipe()
        defer { pipe.close() }
        let second = DescriptorPipe()
        defer { second.close() }
        let log = onLoopThread { loop -> [String] in
            var log: [String] = []
            let source = EvLibevSource()
            loop.add(source, forMode: .default)
            let inner = LibraryWatcher(.readable(second.readEnd)) {
                second.readByte()
                log.append("inner")
            }
            let outer = LibraryWatcher(.readable(pipe.readEnd)) {
                pipe.readByte()
                source.withEventLoop { ev_break($0, Int32(EVBREAK_ALL)) }
                second.write()
                log.append("nested: \(loop.run(mode: .default, timeout: .seconds(10), returnAfterSourceHandled: true))")
            }
            source.withEventLoop { evLoop in
                outer.start(evLoop)
                inner.start(evLoop)
            }
            pipe.write()
            log.append("outer: \(loop.run(mode: .default, timeout: .seconds(10), returnAfterSourceHandled: true))")
            pipe.write()
            log.append("again: \(loop.run(mode: .default, timeout: .seconds(10), returnAfterSourceHandled: true))")
            source.invalidate()
            return log
        }
        #expect(log == ["inner", "nested: handledSource", "outer: handledSource", "inner", "nested: handledSource", "again: handledSource"])
    }
}
