import CEpoll
import Foundation
import RunLoopKit
import Testing
import TestSupport

/// What a descriptor source is told, and when it is watched (R37).
@Suite struct FileDescriptorSourceTests {
    @Test func R37_readinessWaitsUntilTheSourcesModeRuns() throws {
        let pipe = DescriptorPipe()
        defer { pipe.close() }
        let events = EventLog<String>()
        let source = try EvFileDescriptorSource(fileDescriptor: pipe.readEnd, events: .readable) { readiness in
            events.append(readiness.contains(.readable) ? "readable" : "other")
            pipe.drain()
        }
        let results = onLoopThread { loop -> [EvRunLoop.RunResult] in
            let tracking = EvRunLoop.Mode("tracking")
            loop.add(source, forMode: .default)
            loop.add(keepAliveTimer(), forMode: tracking)
            pipe.write()
            // The fd is ready, but its mode is not running: nothing is handled (R37).
            let inTracking = loop.run(mode: tracking, timeout: .zero)
            let countInTracking = events.count
            let inDefault = loop.run(mode: .default, timeout: .seconds(30), returnAfterSourceHandled: true)
            return [inTracking, countInTracking == 0 ? .finished : .stopped, inDefault]
        }
        #expect(results == [.timedOut, .finished, .handledSource])
        #expect(events.all == ["readable"])
    }

    @Test func R37_removedSourceIsNotWatched() throws {
        let pipe = DescriptorPipe()
        defer { pipe.close() }
        let events = EventLog<Int>()
        let source = try EvFileDescriptorSource(fileDescriptor: pipe.readEnd, events: .readable) { _ in events.append(1) }
        let result = onLoopThread { loop -> EvRunLoop.RunResult in
            loop.add(source, forMode: .default)
            loop.add(keepAliveTimer(), forMode: .default)
            loop.remove(source, forMode: .default)
            pipe.write()
            return loop.run(mode: .default, timeout: .zero)
        }
        #expect(result == .timedOut)
        #expect(events.count == 0)
    }

    @Test func endOfFileIsReadableAndInvalidationStopsWatchingAtOnce() throws {
        var pipeEnds: [Int32] = [0, 0]
        #expect(pipe(&pipeEnds) == 0)
        let fds = pipeEnds
        let events = EventLog<EvFileDescriptorSource.Readiness>()
        let source = try EvFileDescriptorSource(fileDescriptor: fds[0], events: .readable) { events.append($0) }
        let result = onLoopThread { loop -> EvRunLoop.RunResult in
            loop.add(source, forMode: .default)
            // The write end closing makes the read end readable (EOF): handled once. Invalidated,
            // the source leaves its mode at once, so the mode is empty and nothing more is called.
            close(fds[1])
            _ = loop.run(mode: .default, timeout: .seconds(30), returnAfterSourceHandled: true)
            source.invalidate()
            close(fds[0])
            return loop.run(mode: .default, timeout: .zero)
        }
        #expect(result == .finished)
        #expect(events.count == 1)
        #expect(!source.isValid)
    }

    @Test func badDescriptorsThrow() {
        #expect(throws: EvSourceError.badFileDescriptor(-1)) {
            try EvFileDescriptorSource(fileDescriptor: -1, events: .readable) { _ in }
        }
        #expect(throws: EvSourceError.badFileDescriptor(9_999)) {
            try EvFileDescriptorSource(fileDescriptor: 9_999, events: .readable) { _ in }
        }
    }
}
