import Foundation
import RunLoopKit
import Testing
import TestSupport

/// C70, R38: where the loop has an AfterWaiting observer, an iteration holds the version-1 source
/// its wait found ready before the observers run. What they do to that source meanwhile still
/// counts: one taken out of the running mode, or invalidated, is not handled there.
@Suite struct HeldReadinessTests {
    private static let other = EvRunLoop.Mode("other")

    /// The observer takes the port out of the running mode: no handler runs in that mode, and the
    /// message waits for a run of the port's other mode (R37), which handles it.
    @Test func aSourceAnAfterWaitingObserverTakesOutOfTheRunningModeWaitsForItsOtherMode() {
        let received = EventLog<Int>()
        let port = EvMessagePort<Int> { received.append($0) }
        let (first, handledInDefault, second) = onLoopThread { loop in
            loop.add(port, forMode: .default)
            loop.add(port, forMode: Self.other)
            loop.add(keepAliveTimer(), forMode: .default)
            loop.add(EvObserver(activities: .afterWaiting, repeats: false) { _, _ in
                loop.remove(port, forMode: .default)
                loop.stop()
            }, forMode: .default)
            try! port.send(1)
            let first = loop.run(mode: .default, timeout: .seconds(30), returnAfterSourceHandled: true)
            let handledInDefault = received.count
            let second = loop.run(mode: Self.other, timeout: .seconds(30), returnAfterSourceHandled: true)
            return (first, handledInDefault, second)
        }
        #expect(first == .stopped)
        #expect(handledInDefault == 0)
        #expect(second == .handledSource)
        #expect(received.all == [1])
    }

    /// The observer invalidates the port: its handler never runs, and the run goes on.
    @Test func aSourceAnAfterWaitingObserverInvalidatesIsNotHandled() {
        let received = EventLog<Int>()
        let port = EvMessagePort<Int> { received.append($0) }
        let result = onLoopThread { loop -> EvRunLoop.RunResult in
            loop.add(port, forMode: .default)
            loop.add(keepAliveTimer(), forMode: .default)
            loop.add(EvObserver(activities: .afterWaiting, repeats: false) { _, _ in
                port.invalidate()
                loop.stop()
            }, forMode: .default)
            try! port.send(1)
            return loop.run(mode: .default, timeout: .seconds(30), returnAfterSourceHandled: true)
        }
        #expect(result == .stopped)
        #expect(received.all.isEmpty)
    }
}

/// C70 with a descriptor source: the held readiness is the descriptor's resting entry, which
/// nothing re-arms while the iteration holds it.
@Suite struct HeldDescriptorReadinessTests {
    private static let other = EvRunLoop.Mode("other")

    /// A source for `pipe`'s read end, made non-blocking, whose handler reads one byte and logs
    /// whether there was one.
    private func byteReadingSource(_ pipe: DescriptorPipe, _ log: EventLog<String>, named name: String = "") throws -> EvFileDescriptorSource {
        _ = fcntl(pipe.readEnd, F_SETFL, fcntl(pipe.readEnd, F_GETFL) | O_NONBLOCK)
        return try EvFileDescriptorSource(fileDescriptor: pipe.readEnd, events: .readable) { readiness in
            var byte: UInt8 = 0
            let got = read(pipe.readEnd, &byte, 1)
            log.append(name + (readiness.contains(.readable) ? (got == 1 ? "read" : "readable, nothing to read") : "other"))
        }
    }

    /// Writes a byte to `pipe` and runs the default mode, holding `sources`, until a source is
    /// handled; an AfterWaiting observer runs the default mode nested, until a source is handled
    /// or 100 ms pass; then a poll. Returns the outer, nested and polling runs' results.
    private func runWithARunNestedInAfterWaiting(
        _ sources: [EvFileDescriptorSource], _ pipe: DescriptorPipe, _ log: EventLog<String>
    ) -> (outer: EvRunLoop.RunResult, nested: EvRunLoop.RunResult?, after: EvRunLoop.RunResult) {
        onLoopThread { loop in
            for source in sources { loop.add(source, forMode: .default) }
            loop.add(keepAliveTimer(), forMode: .default)
            let nested = TestLocked<EvRunLoop.RunResult?>(nil)
            loop.add(EvObserver(activities: .afterWaiting, repeats: false) { _, _ in
                log.append("nested begins")
                nested.withLock { $0 = loop.run(mode: .default, timeout: .milliseconds(100), returnAfterSourceHandled: true) }
                log.append("nested ends")
            }, forMode: .default)
            pipe.write()
            let outer = loop.run(mode: .default, timeout: .seconds(30), returnAfterSourceHandled: true)
            let after = loop.run(mode: .default, timeout: .zero, returnAfterSourceHandled: true)
            return (outer, nested.withLock { $0 }, after)
        }
    }

    /// A run nested in the AfterWaiting observer, in the same mode, sleeps: the held descriptor
    /// is not handled there (it times out), and the outer iteration handles it once.
    @Test func aRunNestedInAfterWaitingInTheSameModeLeavesTheHeldDescriptorAlone() throws {
        let pipe = DescriptorPipe()
        defer { pipe.close() }
        let log = EventLog<String>()
        let source = try byteReadingSource(pipe, log)
        let (outer, nested, after) = runWithARunNestedInAfterWaiting([source], pipe, log)
        #expect(nested == .timedOut)
        #expect(outer == .handledSource)
        #expect(after == .timedOut)
        #expect(log.all == ["nested begins", "nested ends", "read"])
        source.invalidate()
    }

    /// Two sources watch one descriptor: the wait finds both ready and the iteration holds one
    /// (which one, R38 leaves open). A run nested in the AfterWaiting observer handles the other
    /// (its readiness is no one's yet) and not the held one, which the outer iteration then
    /// handles once.
    @Test func aRunNestedInAfterWaitingHandlesTheOtherSourceOfTheHeldDescriptor() throws {
        let pipe = DescriptorPipe()
        defer { pipe.close() }
        let log = EventLog<String>()
        let sources = try ["first ", "second "].map { try byteReadingSource(pipe, log, named: $0) }
        let (outer, nested, after) = runWithARunNestedInAfterWaiting(sources, pipe, log)
        #expect(nested == .handledSource)
        #expect(outer == .handledSource)
        #expect(after == .timedOut)
        let handled = log.all
        #expect(handled.count == 4 && handled.first == "nested begins" && handled[2] == "nested ends", "\(handled)")
        if handled.count == 4 {
            let nestedOne = handled[1].split(separator: " ")[0], heldOne = handled[3].split(separator: " ")[0]
            #expect(nestedOne != heldOne, "one source handled twice: \(handled)")
            #expect(handled[1] == "\(nestedOne) read" && handled[3] == "\(heldOne) readable, nothing to read")
        }
        for source in sources { source.invalidate() }
    }

    /// The same with the nested run in a mode without the descriptor: its sleep must not have the
    /// held entry report again, which would hand the outer loop a second readiness for one byte.
    @Test func aRunNestedInAfterWaitingInAnotherModeLeavesOneReadinessForOneByte() throws {
        let pipe = DescriptorPipe()
        defer { pipe.close() }
        let log = EventLog<String>()
        let source = try byteReadingSource(pipe, log)
        let (outer, nested, after) = onLoopThread { loop -> (EvRunLoop.RunResult, EvRunLoop.RunResult?, EvRunLoop.RunResult) in
            loop.add(source, forMode: .default)
            loop.add(keepAliveTimer(), forMode: .default)
            loop.add(keepAliveTimer(), forMode: Self.other)
            let nested = TestLocked<EvRunLoop.RunResult?>(nil)
            loop.add(EvObserver(activities: .afterWaiting, repeats: false) { _, _ in
                nested.withLock { $0 = loop.run(mode: Self.other, timeout: .milliseconds(50)) }
            }, forMode: .default)
            pipe.write()
            let outer = loop.run(mode: .default, timeout: .seconds(30), returnAfterSourceHandled: true)
            let after = loop.run(mode: .default, timeout: .zero, returnAfterSourceHandled: true)
            return (outer, nested.withLock { $0 }, after)
        }
        #expect(nested == .timedOut)
        #expect(outer == .handledSource)
        #expect(after == .timedOut)
        #expect(log.all == ["read"])
        source.invalidate()
    }
}

/// C70 and the descriptor's number reuse, and R38's order with held readiness.
@Suite struct HeldDescriptorReuseAndOrderTests {
    /// The AfterWaiting observer closes the held descriptor and puts a new pipe, with data, under
    /// its number: the handler gets the error alone, never the new file's byte.
    @Test func aHeldDescriptorClosedAndReusedInAfterWaitingIsReportedFailed() throws {
        let number = reservedDescriptorNumber(40)
        let first = DescriptorPipe(readEndAt: number)
        let events = EventLog<EvFileDescriptorSource.Readiness>()
        let stolen = EventLog<UInt8>()
        let source = try EvFileDescriptorSource(fileDescriptor: number, events: .readable, handler: carelessReader(of: number, events, stolen))
        let second = TestLocked<DescriptorPipe?>(nil)
        let result = onLoopThread { loop -> EvRunLoop.RunResult in
            loop.add(source, forMode: .default)
            loop.add(keepAliveTimer(), forMode: .default)
            loop.add(EvObserver(activities: .afterWaiting, repeats: false) { _, _ in
                close(first.readEnd)
                let reused = DescriptorPipe(readEndAt: number)
                reused.write(9)
                second.withLock { $0 = reused }
            }, forMode: .default)
            first.write(1)
            return loop.run(mode: .default, timeout: .seconds(30), returnAfterSourceHandled: true)
        }
        #expect(result == .handledSource)
        #expect(events.all == [.error])
        #expect(stolen.all.isEmpty)
        source.invalidate()
        close(first.writeEnd)
        second.withLock { $0?.close() }
    }

    /// Three descriptors made ready in turn once watched, a repeating AfterWaiting observer: each handled
    /// once, in the order they became ready, one per iteration.
    @Test func severalReadyDescriptorsWithAnAfterWaitingObserverAreHandledOnceInOrder() throws {
        let pipes = (0..<3).map { _ in DescriptorPipe() }
        defer { for pipe in pipes { pipe.close() } }
        let log = EventLog<Int>()
        let sources = try pipes.enumerated().map { index, pipe in
            try EvFileDescriptorSource(fileDescriptor: pipe.readEnd, events: .readable) { _ in
                pipe.readByte()
                log.append(index)
            }
        }
        let results = onLoopThread { loop -> [EvRunLoop.RunResult] in
            for source in sources { loop.add(source, forMode: .default) }
            loop.add(keepAliveTimer(), forMode: .default)
            loop.add(EvObserver(activities: .afterWaiting, repeats: true) { _, _ in }, forMode: .default)
            // A poll puts the watches in the kernel; written then, they become ready in this order.
            var results = [loop.run(mode: .default, timeout: .zero)]
            for pipe in pipes { pipe.write() }
            for _ in 0..<3 { results.append(loop.run(mode: .default, timeout: .seconds(30), returnAfterSourceHandled: true)) }
            results.append(loop.run(mode: .default, timeout: .zero, returnAfterSourceHandled: true))
            return results
        }
        #expect(results == [.timedOut, .handledSource, .handledSource, .handledSource, .timedOut])
        #expect(log.all == [0, 1, 2])
        for source in sources { source.invalidate() }
    }
}
