import Foundation
import RunLoopKit
import Testing

/// What a descriptor source on a TCP socket reports, with a real peer on 127.0.0.1. Readiness is
/// what the loop saw when it looked, as `poll` reports it: when the peer goes, end of file and
/// a reset are the readiness watched for, never ``EvFileDescriptorSource/Readiness/error``
/// (which means the descriptor itself can no longer be watched), and the socket stays ready
/// until its source leaves or the descriptor is closed; what was readable may have been read by
/// the time a handler runs.
@Suite struct SocketReadinessTests {
    /// What the handler saw and what its read or write then returned.
    private struct Seen: Sendable, Equatable {
        let readiness: EvFileDescriptorSource.Readiness
        let result: Int
        let error: Int32
    }

    @Test func aPeersHalfCloseIsEndOfFileReportedReadableUntilTheSourceLeaves() throws {
        let connection = LoopbackConnection()
        defer { close(connection.server); close(connection.client) }
        let seen = EventLog<Seen>()
        let source = try EvFileDescriptorSource(fileDescriptor: connection.server, events: .readable) { readiness in
            var byte: UInt8 = 0
            let count = read(connection.server, &byte, 1)
            seen.append(Seen(readiness: readiness, result: count, error: count < 0 ? errno : 0))
        }
        let results = onLoopThread { loop -> [EvRunLoop.RunResult] in
            loop.add(source, forMode: .default)
            shutdown(connection.client, Int32(SHUT_WR))
            // Still readable at the next iteration: a handler that meets end of file removes its source.
            let handled = (0..<2).map { _ in loop.run(mode: .default, timeout: .seconds(30), returnAfterSourceHandled: true) }
            source.invalidate()
            return handled
        }
        #expect(results == [.handledSource, .handledSource])
        #expect(seen.all == Array(repeating: Seen(readiness: .readable, result: 0, error: 0), count: 2))
    }

    @Test func aPeersResetIsReportedAsTheReadinessWatchedForNotAsAnError() throws {
        let connection = LoopbackConnection()
        defer { close(connection.server) }
        let reading = EventLog<Seen>()
        let writing = EventLog<Seen>()
        let reader = try EvFileDescriptorSource(fileDescriptor: connection.server, events: .readable) { readiness in
            var byte: UInt8 = 0
            let count = read(connection.server, &byte, 1)
            reading.append(Seen(readiness: readiness, result: count, error: count < 0 ? errno : 0))
        }
        let writer = try EvFileDescriptorSource(fileDescriptor: connection.server, events: .writable) { readiness in
            var byte: UInt8 = 1
            let count = send(connection.server, &byte, 1, Int32(MSG_NOSIGNAL))
            writing.append(Seen(readiness: readiness, result: count, error: count < 0 ? errno : 0))
        }
        let valid = onLoopThread { loop -> [Bool] in
            loop.add(reader, forMode: .default)
            _ = loop.run(mode: .default, timeout: .zero)  // watched, nothing to read
            connection.resetClient()
            _ = loop.run(mode: .default, timeout: .seconds(30), returnAfterSourceHandled: true)
            loop.remove(reader, forMode: .default)
            loop.add(writer, forMode: .default)
            _ = loop.run(mode: .default, timeout: .seconds(30), returnAfterSourceHandled: true)
            let valid = [reader.isValid, writer.isValid]
            reader.invalidate()
            writer.invalidate()
            return valid
        }
        #expect(reading.all == [Seen(readiness: .readable, result: -1, error: ECONNRESET)])
        // The reset was taken by the read: the socket is now shut both ways, still writable to poll.
        #expect(writing.all == [Seen(readiness: .writable, result: -1, error: EPIPE)])
        #expect(valid == [true, true])
    }

    /// Two sources reading one socket are told of one byte together; the handler that runs
    /// second finds it read already: a read that would have blocked the loop on a blocking socket.
    @Test func readinessIsWhatTheLoopSawAndAnotherHandlerMayHaveReadItSince() throws {
        let connection = LoopbackConnection()
        defer { close(connection.server); close(connection.client) }
        let reads = EventLog<Seen>()
        let readers = try (0..<2).map { _ in
            try EvFileDescriptorSource(fileDescriptor: connection.server, events: .readable) { readiness in
                var byte: UInt8 = 0
                let count = read(connection.server, &byte, 1)
                reads.append(Seen(readiness: readiness, result: count, error: count < 0 ? errno : 0))
            }
        }
        let results = onLoopThread { loop -> [EvRunLoop.RunResult] in
            for reader in readers { loop.add(reader, forMode: .default) }
            _ = loop.run(mode: .default, timeout: .zero)  // watched, nothing to read
            var byte: UInt8 = 7
            precondition(write(connection.client, &byte, 1) == 1)
            let handled = (0..<2).map { _ in loop.run(mode: .default, timeout: .seconds(30), returnAfterSourceHandled: true) }
            for reader in readers { reader.invalidate() }
            return handled
        }
        #expect(results == [.handledSource, .handledSource])
        #expect(reads.all == [
            Seen(readiness: .readable, result: 1, error: 0), Seen(readiness: .readable, result: -1, error: EAGAIN),
        ])
    }
}
