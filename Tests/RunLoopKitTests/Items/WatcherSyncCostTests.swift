import Foundation
@testable import RunLoopKit
import Testing

/// What bringing the watchers in step costs when descriptor sources join and leave the running
/// mode (R37, W19): the sources a sync looks at, counted by the watch set itself — never a
/// timing. A server adds a source per connection and invalidates it when the connection ends;
/// with many connections open, each set-up and tear-down costs what it touches, not what the loop
/// watches.
@Suite struct WatcherSyncCostTests {
    /// Sources the loop's syncs looked at so far.
    private static func visited(_ loop: EvRunLoop) -> UInt64 {
        loop.state.withLock { $0.watches.sourcesVisited }
    }

    /// A connected pair of non-blocking stream sockets.
    private static func socketPair() -> (Int32, Int32) {
        var ends: [Int32] = [0, 0]
        precondition(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &ends) == 0)
        for fd in ends { _ = fcntl(fd, F_SETFL, O_NONBLOCK) }
        return (ends[0], ends[1])
    }

    @Test func W19_aConnectionsSourceComingAndGoingCostsTheSameBesideAThousandWatched() throws {
        let (idle, idlePeer) = Self.socketPair()
        let (busy, busyPeer) = Self.socketPair()
        defer { for fd in [idle, idlePeer, busy, busyPeer] { close(fd) } }
        let idleHandled = EventLog<Int>()
        let neighbours = try (0..<1000).map { index in
            try EvFileDescriptorSource(fileDescriptor: idle, events: .readable) { _ in idleHandled.append(index) }
        }
        let connections = 20
        let (cost, handled, neighbourResult) = onLoopThread { loop -> (UInt64, [Int], EvRunLoop.RunResult) in
            for source in neighbours { loop.add(source, forMode: .default) }
            _ = loop.run(mode: .default, timeout: .zero)  // all watched now
            let handled = EventLog<Int>()
            let before = Self.visited(loop)
            for connection in 0..<connections {
                let source = try! EvFileDescriptorSource(fileDescriptor: busy, events: .readable) { _ in
                    var byte: UInt8 = 0
                    if read(busy, &byte, 1) == 1 { handled.append(connection) }
                }
                loop.add(source, forMode: .default)
                var byte: UInt8 = 1
                precondition(write(busyPeer, &byte, 1) == 1)
                _ = loop.run(mode: .default, timeout: .seconds(30), returnAfterSourceHandled: true)
                source.invalidate()
                _ = loop.run(mode: .default, timeout: .zero)
            }
            let cost = Self.visited(loop) - before
            // The neighbours were left watched throughout.
            var byte: UInt8 = 2
            precondition(write(idlePeer, &byte, 1) == 1)
            let neighbourResult = loop.run(mode: .default, timeout: .seconds(30), returnAfterSourceHandled: true)
            for source in neighbours { source.invalidate() }
            return (cost, handled.all, neighbourResult)
        }
        #expect(handled == Array(0..<connections))
        #expect(neighbourResult == .handledSource)
        #expect(idleHandled.count == 1)
        // Each connection's source joins once and leaves once: a sync looks at it, not at 1,000.
        #expect(cost <= UInt64(4 * connections), "syncs looked at \(cost) sources for \(connections) connections beside 1,000")
    }
}
