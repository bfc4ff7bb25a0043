import CEpoll
import Foundation
import RunLoopKit
import Testing
import TestSupport

/// Regular files, which epoll cannot watch: ready at once, every iteration, as `poll` says.
@Suite struct RegularFileSourceTests {
    /// A descriptor epoll cannot watch (a regular file) is ready at once, at every iteration, as
    /// `poll` says: the loop does not sleep on it.
    @Test func regularFileIsReadyAtOnceEveryIteration() throws {
        var template = Array("/tmp/runloopkit-regular-XXXXXX".utf8CString)
        let fd = mkstemp(&template)
        try #require(fd >= 0)
        unlink(template)
        defer { close(fd) }
        let events = EventLog<EvFileDescriptorSource.Readiness>()
        let source = try EvFileDescriptorSource(fileDescriptor: fd, events: [.readable, .writable]) { events.append($0) }
        let results = onLoopThread { loop -> [EvRunLoop.RunResult] in
            loop.add(source, forMode: .default)
            let handled = (0..<2).map { _ in loop.run(mode: .default, timeout: .seconds(30), returnAfterSourceHandled: true) }
            source.invalidate()
            return handled + [loop.run(mode: .default, timeout: .zero)]
        }
        #expect(results == [.handledSource, .handledSource, .finished])
        #expect(events.all == [[.readable, .writable], [.readable, .writable]])
    }
    /// An always-ready descriptor (a regular file) closed while watched is reported once as an
    /// error and leaves: the loop does not spin on it, reporting it readable for ever.
    @Test func regularFileClosedWhileWatchedIsReportedOnceAsAnError() throws {
        let number = regularFile(at: reservedDescriptorNumber(5))
        let events = EventLog<EvFileDescriptorSource.Readiness>()
        let source = try EvFileDescriptorSource(fileDescriptor: number, events: .readable) { events.append($0) }
        let results = onLoopThread { loop -> [EvRunLoop.RunResult] in
            loop.add(source, forMode: .default)
            let watched = loop.run(mode: .default, timeout: .seconds(30), returnAfterSourceHandled: true)
            close(number)
            let failed = loop.run(mode: .default, timeout: .seconds(30), returnAfterSourceHandled: true)
            return [watched, failed, loop.run(mode: .default, timeout: .zero)]
        }
        #expect(results == [.handledSource, .handledSource, .finished])
        #expect(events.all == [.readable, .error])
        #expect(!source.isValid)
    }

    /// A regular file closed while watched, its number reused by a pipe with data: the old
    /// source gets `.error` alone, never the pipe's readiness (its handler would read the pipe).
    @Test func regularFileNumberReusedByAPipeIsAnErrorNotThePipesData() throws {
        let number = regularFile(at: reservedDescriptorNumber(6))
        let events = EventLog<EvFileDescriptorSource.Readiness>()
        let stolen = EventLog<UInt8>()
        let old = try EvFileDescriptorSource(fileDescriptor: number, events: .readable, handler: carelessReader(of: number, events, stolen))
        let second = Box<DescriptorPipe?>(nil)
        let results = onLoopThread { loop -> [EvRunLoop.RunResult] in
            loop.add(old, forMode: .default)
            let watched = loop.run(mode: .default, timeout: .seconds(30), returnAfterSourceHandled: true)
            close(number)
            let pipe = DescriptorPipe(readEndAt: number)
            second.set(pipe)
            pipe.write(42)
            let failed = loop.run(mode: .default, timeout: .seconds(30), returnAfterSourceHandled: true)
            return [watched, failed, loop.run(mode: .default, timeout: .zero)]
        }
        defer { second.get?.close() }
        #expect(results == [.handledSource, .handledSource, .finished])
        #expect(events.all == [.readable, .error])
        #expect(stolen.all == [7], "the old source's handler read the pipe")
        #expect(!old.isValid)
    }

    /// A regular file closed while watched, its number reused by an empty pipe that a new source
    /// watches: the old source fails, and the new one is not told the pipe is ready until it is.
    @Test func aNewSourceOnANumberAnAlwaysReadyFileLeftWatchesItsOwnFile() throws {
        let number = regularFile(at: reservedDescriptorNumber(7))
        let oldEvents = EventLog<EvFileDescriptorSource.Readiness>()
        let old = try EvFileDescriptorSource(fileDescriptor: number, events: .readable) { oldEvents.append($0) }
        let newEvents = EventLog<EvFileDescriptorSource.Readiness>()
        let second = Box<DescriptorPipe?>(nil)
        let results = onLoopThread { loop -> [EvRunLoop.RunResult] in
            loop.add(old, forMode: .default)
            let watched = loop.run(mode: .default, timeout: .seconds(30), returnAfterSourceHandled: true)
            close(number)
            let pipe = DescriptorPipe(readEndAt: number)
            second.set(pipe)
            let new = try! EvFileDescriptorSource(fileDescriptor: number, events: .readable) { readiness in
                newEvents.append(readiness)
                pipe.drain()
            }
            loop.add(new, forMode: .default)
            let failed = loop.run(mode: .default, timeout: .seconds(30), returnAfterSourceHandled: true)
            let idle = loop.run(mode: .default, timeout: .zero, returnAfterSourceHandled: true)
            pipe.write()
            let served = loop.run(mode: .default, timeout: .seconds(30), returnAfterSourceHandled: true)
            new.invalidate()
            return [watched, failed, idle, served]
        }
        defer { second.get?.close() }
        #expect(results == [.handledSource, .handledSource, .timedOut, .handledSource])
        #expect(oldEvents.all == [.readable, .error])
        #expect(newEvents.all == [.readable])
    }

    /// A watched pipe closed and its number reused by a regular file that a new source watches:
    /// the old source fails alone; the new one is always ready, as a regular file is.
    @Test func aNewSourceOnARegularFileAtAPipesOldNumberIsAlwaysReady() throws {
        let number = reservedDescriptorNumber(8)
        let first = DescriptorPipe(readEndAt: number)
        defer { close(first.writeEnd) }
        let oldEvents = EventLog<EvFileDescriptorSource.Readiness>()
        let old = try EvFileDescriptorSource(fileDescriptor: number, events: .readable) { oldEvents.append($0) }
        let newEvents = EventLog<EvFileDescriptorSource.Readiness>()
        let (results, newIsValid) = onLoopThread { loop -> ([EvRunLoop.RunResult], Bool) in
            loop.add(old, forMode: .default)
            _ = loop.run(mode: .default, timeout: .zero)  // `number` is now watched for `old`
            close(number)
            _ = regularFile(at: number)
            let new = try! EvFileDescriptorSource(fileDescriptor: number, events: .readable) { newEvents.append($0) }
            loop.add(new, forMode: .default)
            let handled = (0..<3).map { _ in loop.run(mode: .default, timeout: .seconds(30), returnAfterSourceHandled: true) }
            defer { new.invalidate(); close(number) }
            return (handled, new.isValid)
        }
        #expect(results == [.handledSource, .handledSource, .handledSource])
        #expect(oldEvents.all == [.error])
        #expect(newEvents.all == [.readable, .readable])
        #expect(newIsValid)
    }
}
