import Foundation
import RunLoopKit
import Synchronization
import Testing
import TestSupport

/// While a mode without a descriptor's source runs, the source's watch is parked: its kernel
/// entry stays, but what the descriptor reports waits for one of the source's modes (R37).
@Suite struct ParkedDescriptorWatchTests {
    /// Readiness of a parked descriptor neither ends the running mode's sleep nor makes it spin:
    /// the other mode's run wakes once, for its own timeout, and the source is handled, once,
    /// when its mode runs again.
    @Test func readinessOfAParkedDescriptorNeitherEndsNorSpinsAnotherModesSleep() throws {
        let pipe = DescriptorPipe()
        defer { pipe.close() }
        let events = EventLog<EvFileDescriptorSource.Readiness>()
        let source = try EvFileDescriptorSource(fileDescriptor: pipe.readEnd, events: .readable) { readiness in
            events.append(readiness)
            var byte: UInt8 = 0
            _ = read(pipe.readEnd, &byte, 1)
        }
        let wakeUps = Atomic(0)
        let other = EvRunLoop.Mode("other")
        let observer = EvObserver(activities: .afterWaiting, repeats: true) { _, _ in wakeUps.add(1, ordering: .relaxed) }
        let busy = Box(Duration.zero)
        let results = onLoopThread { loop -> [EvRunLoop.RunResult] in
            loop.add(source, forMode: .default)
            loop.add(keepAliveTimer(), forMode: other)
            loop.add(observer, forMode: other)
            _ = loop.run(mode: .default, timeout: .zero)  // the descriptor is watched
            pipe.write(1)
            let start = threadCPUTime()
            let nested = loop.run(mode: other, timeout: .milliseconds(50))
            busy.set(threadCPUTime() - start)
            let handled = loop.run(mode: .default, timeout: .seconds(30), returnAfterSourceHandled: true)
            return [nested, handled, loop.run(mode: .default, timeout: .zero)]
        }
        source.invalidate()
        #expect(results == [.timedOut, .handledSource, .timedOut])
        #expect(wakeUps.load(ordering: .relaxed) == 1)
        // A spin inside the wait, which no observer sees, would use the whole sleep.
        #expect(busy.get < .milliseconds(25))
        #expect(events.all == [.readable])
    }

    /// One descriptor, two sources in two modes: a socket read in one mode and written in the
    /// other. Each source is told its readiness only while its own mode runs, though the socket
    /// is both readable and writable all along.
    @Test func aDescriptorWatchedInTwoModesTellsEachSourceOnlyInItsOwnMode() throws {
        var pair: [Int32] = [0, 0]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &pair) == 0)
        defer { pair.forEach { close($0) } }
        let socket = pair[0]
        var byte: UInt8 = 7
        #expect(write(pair[1], &byte, 1) == 1)  // readable from now on: no one reads it
        let other = EvRunLoop.Mode("other")
        let told = EventLog<String>()
        let reader = try EvFileDescriptorSource(fileDescriptor: socket, events: .readable) { told.append($0 == .readable ? "readable" : "reader told \($0.rawValue)") }
        let writer = try EvFileDescriptorSource(fileDescriptor: socket, events: .writable) { told.append($0 == .writable ? "writable" : "writer told \($0.rawValue)") }
        let results = onLoopThread { loop -> [EvRunLoop.RunResult] in
            loop.add(reader, forMode: .default)
            loop.add(writer, forMode: other)
            let first = loop.run(mode: .default, timeout: .seconds(30), returnAfterSourceHandled: true)
            told.append("|")
            let second = loop.run(mode: other, timeout: .seconds(30), returnAfterSourceHandled: true)
            let third = loop.run(mode: other, timeout: .seconds(30), returnAfterSourceHandled: true)
            told.append("|")
            let fourth = loop.run(mode: .default, timeout: .seconds(30), returnAfterSourceHandled: true)
            return [first, second, third, fourth]
        }
        reader.invalidate()
        writer.invalidate()
        #expect(results == Array(repeating: .handledSource, count: 4))
        #expect(told.all == ["readable", "|", "writable", "writable", "|", "readable"])
    }
}
