import CEpoll
import Foundation
import RunLoopKit
import Testing
import TestSupport

/// Descriptors ready together take turns, one per iteration (R38), and what each source is told
/// meanwhile.
@Suite struct DescriptorReadinessTurnTests {
    /// Sources on `count` pipes, each ready with one byte, each handler reading one byte.
    private static func readyPipes(_ count: Int, _ handled: EventLog<Int>) -> ([DescriptorPipe], [EvFileDescriptorSource]) {
        let pipes = (0..<count).map { _ in DescriptorPipe() }
        let sources = pipes.enumerated().map { index, pipe in
            pipe.write()
            return try! EvFileDescriptorSource(fileDescriptor: pipe.readEnd, events: .readable) { _ in
                var byte: UInt8 = 0
                if read(pipe.readEnd, &byte, 1) == 1 { handled.append(index) }
            }
        }
        return (pipes, sources)
    }

    /// R38: descriptors ready together are handled one per iteration, and one handled while the
    /// others wait their turn is watched again at once: new data on it is reported, even by a
    /// loop that only polls and never sleeps.
    @Test func aDescriptorHandledWhileOthersWaitIsWatchedAgainByALoopThatOnlyPolls() {
        let handled = EventLog<Int>()
        let (pipes, sources) = Self.readyPipes(3, handled)
        defer { pipes.forEach { $0.close() } }
        let polls = onLoopThread { loop -> Int in
            for source in sources { loop.add(source, forMode: .default) }
            var polls = 0
            while handled.count < 4 && polls < 50 {
                polls += 1
                if loop.run(mode: .default, timeout: .zero, returnAfterSourceHandled: true) == .handledSource, handled.count == 1 {
                    pipes[handled.all[0]].write()  // the first handled is ready again
                }
            }
            for source in sources { source.invalidate() }
            return polls
        }
        #expect(handled.count == 4)
        #expect(Set(handled.all) == [0, 1, 2])
        #expect(polls <= 8)
    }

    /// A source whose readiness waited its turn leaves its mode and joins it again: that
    /// readiness was dropped with it, and it is reported again, even to a loop that only polls.
    @Test func readinessDroppedWithASourceThatLeftItsModeIsReportedAgain() {
        let handled = EventLog<Int>()
        let (pipes, sources) = Self.readyPipes(2, handled)
        defer { pipes.forEach { $0.close() } }
        let polls = onLoopThread { loop -> Int in
            for source in sources { loop.add(source, forMode: .default) }
            _ = loop.run(mode: .default, timeout: .zero, returnAfterSourceHandled: true)  // one of two
            let waiting = sources[1 - (handled.all.first ?? 0)]
            loop.remove(waiting, forMode: .default)
            loop.add(waiting, forMode: .default)
            var polls = 0
            while handled.count < 2 && polls < 50 {
                polls += 1
                _ = loop.run(mode: .default, timeout: .zero, returnAfterSourceHandled: true)
            }
            for source in sources { source.invalidate() }
            return polls
        }
        #expect(Set(handled.all) == [0, 1])
        #expect(polls <= 4)
    }

    /// A connected socket whose send buffer is full, and a non-blocking one.
    private static func socketWithFullSendBuffer() -> (socket: Int32, peer: Int32) {
        var pair: [Int32] = [0, 0]
        precondition(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &pair) == 0)
        for fd in pair { _ = fcntl(fd, F_SETFL, O_NONBLOCK) }
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while write(pair[0], &buffer, buffer.count) > 0 {}
        return (pair[0], pair[1])
    }

    /// Drains what `fd` holds.
    private static func drain(_ fd: Int32) {
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while read(fd, &buffer, buffer.count) > 0 {}
    }

    /// A reading and a writing source on one socket. The socket turns writable while the
    /// reading one's handler runs, and that handler polls the same mode, as a nested run: the
    /// writing source is told, though the reading one's readiness has not finished handling.
    @Test func aSecondSourceOnADescriptorIsToldWhileTheFirstsHandlerRuns() throws {
        let (socket, peer) = Self.socketWithFullSendBuffer()
        defer { close(socket); close(peer) }
        let writable = EventLog<EvFileDescriptorSource.Readiness>()
        let writing = try EvFileDescriptorSource(fileDescriptor: socket, events: .writable) { writable.append($0) }
        let nestedPolls = Box(0)
        let reading = try EvFileDescriptorSource(fileDescriptor: socket, events: .readable) { _ in
            Self.drain(socket)
            Self.drain(peer)  // room in the socket's send buffer: it is writable now
            let loop = EvRunLoop.current
            while writable.count == 0 && nestedPolls.get < 50 {
                nestedPolls.set(nestedPolls.get + 1)
                _ = loop.run(mode: .default, timeout: .zero)
            }
        }
        var ping: UInt8 = 1
        precondition(write(peer, &ping, 1) == 1)
        let result = onLoopThread { loop -> EvRunLoop.RunResult in
            loop.add(writing, forMode: .default)
            loop.add(reading, forMode: .default)
            let result = loop.run(mode: .default, timeout: .seconds(30), returnAfterSourceHandled: true)
            writing.invalidate()
            reading.invalidate()
            return result
        }
        #expect(result == .handledSource)
        #expect(writable.all.first == .writable)
        #expect(nestedPolls.get <= 2)
    }

    /// Readiness of a reading source waits for its turn in mode `a` when the loop switches to
    /// mode `b`, where only the writing source on the same socket is: in `b` the socket turns
    /// writable and the writing source is told, even by a loop that only polls.
    @Test func aSourceIsToldInAnotherModeWhileTheReadinessOfItsNeighbourWaits() throws {
        let (socket, peer) = Self.socketWithFullSendBuffer()
        defer { close(socket); close(peer) }
        let first = DescriptorPipe()
        defer { first.close() }
        let log = EventLog<String>()
        let early = try EvFileDescriptorSource(fileDescriptor: first.readEnd, events: .readable) { _ in
            log.append("early")
            first.drain()
        }
        let reading = try EvFileDescriptorSource(fileDescriptor: socket, events: .readable) { _ in log.append("reading") }
        let writing = try EvFileDescriptorSource(fileDescriptor: socket, events: .writable) { _ in log.append("writing") }
        let polls = onLoopThread { loop -> Int in
            let a = EvRunLoop.Mode("a"), b = EvRunLoop.Mode("b")
            for source in [early, reading, writing] { loop.add(source, forMode: a) }
            loop.add(writing, forMode: b)
            _ = loop.run(mode: a, timeout: .zero)  // watched now
            first.write()
            var ping: UInt8 = 1
            precondition(write(peer, &ping, 1) == 1)
            _ = loop.run(mode: a, timeout: .zero, returnAfterSourceHandled: true)  // `early`; `reading` waits
            Self.drain(peer)  // the socket is writable now
            var polls = 0
            while !log.all.contains("writing") && polls < 50 {
                polls += 1
                _ = loop.run(mode: b, timeout: .zero)
            }
            for source in [early, reading, writing] { source.invalidate() }
            return polls
        }
        #expect(log.all.prefix(1) == ["early"])
        #expect(log.all.contains("writing"))
        #expect(polls <= 2)
    }

    /// Two sources on one descriptor, one for reading and one for writing: each sees only what it
    /// watches, and removing one leaves the other watched.
    @Test func twoSourcesOnOneDescriptorEachSeeWhatTheyWatch() throws {
        var ends: [Int32] = [0, 0]
        try #require(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &ends) == 0)
        let (near, far) = (ends[0], ends[1])
        defer { close(near); close(far) }
        let events = EventLog<String>()
        let reader = try EvFileDescriptorSource(fileDescriptor: near, events: .readable) { _ in
            events.append("reader")
            var buffer = [UInt8](repeating: 0, count: 16)
            _ = read(near, &buffer, 16)
        }
        let writer = try EvFileDescriptorSource(fileDescriptor: near, events: .writable) { readiness in
            events.append(readiness == .writable ? "writer" : "writer saw \(readiness)")
        }
        let results = onLoopThread { loop -> [EvRunLoop.RunResult] in
            loop.add(reader, forMode: .default)
            loop.add(writer, forMode: .default)
            // A connected socket with nothing to read: writable only.
            let first = loop.run(mode: .default, timeout: .seconds(30), returnAfterSourceHandled: true)
            loop.remove(writer, forMode: .default)
            let idle = loop.run(mode: .default, timeout: .zero)
            var byte: UInt8 = 7
            _ = write(far, &byte, 1)
            let second = loop.run(mode: .default, timeout: .seconds(30), returnAfterSourceHandled: true)
            reader.invalidate()
            return [first, idle, second]
        }
        #expect(results == [.handledSource, .timedOut, .handledSource])
        #expect(events.all == ["writer", "reader"])
    }
}
