import CEpoll
import Foundation
import RunLoopKit
import Testing
import TestSupport

/// A descriptor number no other test is handed while a test here has it closed behind a
/// source's back. The kernel hands out the lowest free number, and the suite never holds
/// anywhere near this many at once, so a number just under the limit (at most 4,096) stays
/// free unless taken on purpose with `dup2`. Each test uses its own `index`.
private func reservedDescriptorNumber(_ index: Int32) -> Int32 {
    var limit = rlimit()
    getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit)
    return Int32(min(limit.rlim_cur, 4_096)) - 1 - index
}

@Suite struct FileDescriptorSourceTests {
    /// A pipe whose ends are closed when the test is done.
    private struct Pipe: Sendable {
        let readEnd: Int32
        let writeEnd: Int32
        init() {
            var fds: [Int32] = [0, 0]
            precondition(pipe(&fds) == 0)
            (readEnd, writeEnd) = (fds[0], fds[1])
        }
        /// A pipe whose read end is descriptor `number` (see ``reservedDescriptorNumber(_:)``).
        init(readEndAt number: Int32) {
            let pipe = Pipe()
            precondition(dup2(pipe.readEnd, number) == number)
            Foundation.close(pipe.readEnd)
            (readEnd, writeEnd) = (number, pipe.writeEnd)
        }
        func write(_ byte: UInt8 = 1) { var byte = byte; precondition(Foundation.write(writeEnd, &byte, 1) == 1) }
        func drain() { var buffer = [UInt8](repeating: 0, count: 64); _ = read(readEnd, &buffer, 64) }
        func close() { Foundation.close(readEnd); Foundation.close(writeEnd) }
    }

    @Test func R37_readinessWaitsUntilTheSourcesModeRuns() throws {
        let pipe = Pipe()
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
        let pipe = Pipe()
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

    @Test func descriptorClosedWhileWatchedIsReportedOnceAsAnErrorAndTheSourceLeaves() throws {
        let pipe = Pipe(readEndAt: reservedDescriptorNumber(0))
        defer { close(pipe.writeEnd) }
        let events = EventLog<EvFileDescriptorSource.Readiness>()
        let source = try EvFileDescriptorSource(fileDescriptor: pipe.readEnd, events: .readable) { events.append($0) }
        let results = onLoopThread { loop -> [EvRunLoop.RunResult] in
            let other = EvRunLoop.Mode("other")
            loop.add(source, forMode: .default)
            loop.add(keepAliveTimer(), forMode: other)
            _ = loop.run(mode: .default, timeout: .zero)  // the descriptor is now watched
            close(pipe.readEnd)  // closed behind the watcher's back
            _ = loop.run(mode: other, timeout: .zero)  // the watcher stops ...
            // ... and restarts on a dead descriptor: the handler sees an error once, the source
            // invalidates itself and the mode, now empty, finishes.
            let first = loop.run(mode: .default, timeout: .seconds(30), returnAfterSourceHandled: true)
            let second = loop.run(mode: .default, timeout: .zero)
            return [first, second]
        }
        #expect(results == [.handledSource, .finished])
        #expect(events.all == [.error])
        #expect(!source.isValid)
    }

    /// Closed while watched, with its file kept open by a duplicate: the kernel keeps watching
    /// the file, and its readiness comes once, as the error of the number now closed (the number
    /// no longer names the file, so no readiness is handed on) — not at every iteration for ever.
    @Test func descriptorClosedWhileItsFileStaysOpenElsewhereIsReportedOnceNotForever() throws {
        let pipe = Pipe(readEndAt: reservedDescriptorNumber(1))
        let keeper = dup(pipe.readEnd)
        defer { close(keeper); close(pipe.writeEnd) }
        let events = EventLog<EvFileDescriptorSource.Readiness>()
        let source = try EvFileDescriptorSource(fileDescriptor: pipe.readEnd, events: .readable) { events.append($0) }
        let results = onLoopThread { loop -> [EvRunLoop.RunResult] in
            loop.add(source, forMode: .default)
            _ = loop.run(mode: .default, timeout: .zero)  // the descriptor is now watched
            close(pipe.readEnd)
            pipe.write()  // the file, still open through `keeper`, becomes readable
            let first = loop.run(mode: .default, timeout: .seconds(30), returnAfterSourceHandled: true)
            let second = loop.run(mode: .default, timeout: .zero)
            return [first, second]
        }
        #expect(results == [.handledSource, .finished])
        #expect(events.all == [.error])
        #expect(!source.isValid)
    }

    /// A descriptor number closed behind one source and reused for a new file watched by another
    /// source in the same loop: the first source learns its file is gone, the second watches
    /// the new file.
    @Test func numberReusedForANewFileFailsTheOldSourceAndServesTheNewOne() throws {
        let number = reservedDescriptorNumber(2)
        let first = Pipe(readEndAt: number)
        defer { close(first.writeEnd) }
        let events = EventLog<String>()
        let old = try EvFileDescriptorSource(fileDescriptor: number, events: .readable) { events.append("old \($0)") }
        let second = Box<Pipe?>(nil)
        let newSource = Box<EvFileDescriptorSource?>(nil)
        let results = onLoopThread { loop -> [EvRunLoop.RunResult] in
            loop.add(old, forMode: .default)
            _ = loop.run(mode: .default, timeout: .zero)  // `number` is now watched for `old`
            close(number)
            let pipe = Pipe(readEndAt: number)
            second.set(pipe)
            let new = try! EvFileDescriptorSource(fileDescriptor: number, events: .readable) { readiness in
                events.append("new \(readiness)")
                pipe.drain()
            }
            newSource.set(new)
            loop.add(new, forMode: .default)
            pipe.write()
            let handled = (0..<2).map { _ in loop.run(mode: .default, timeout: .seconds(30), returnAfterSourceHandled: true) }
            new.invalidate()
            return handled + [loop.run(mode: .default, timeout: .zero)]
        }
        defer { second.get?.close() }
        #expect(results == [.handledSource, .handledSource, .finished])
        let readable = EvFileDescriptorSource.Readiness.readable, error = EvFileDescriptorSource.Readiness.error
        #expect(Set(events.all) == ["old \(error)", "new \(readable)"])
        #expect(!old.isValid)
    }

    /// A number closed while its source was not watched (another mode ran) and reused for a new
    /// file: when the source's mode runs again, the source knows the number names another file,
    /// reports `.error` once and invalidates itself; its handler never reads the new file.
    @Test func numberReusedWhileTheSourceWasNotWatchedIsAnErrorNotTheNewFilesData() throws {
        let number = reservedDescriptorNumber(3)
        let first = Pipe(readEndAt: number)
        defer { close(first.writeEnd) }
        let events = EventLog<EvFileDescriptorSource.Readiness>()
        let stolen = EventLog<UInt8>()
        let old = try EvFileDescriptorSource(fileDescriptor: number, events: .readable) { readiness in
            events.append(readiness)
            // What a careless handler does: read whatever the number names now.
            guard readiness.contains(.readable) else { return }
            var byte: UInt8 = 0
            if read(number, &byte, 1) == 1 { stolen.append(byte) }
        }
        let second = Box<Pipe?>(nil)
        let results = onLoopThread { loop -> [EvRunLoop.RunResult] in
            let other = EvRunLoop.Mode("other")
            loop.add(old, forMode: .default)
            loop.add(keepAliveTimer(), forMode: other)
            _ = loop.run(mode: .default, timeout: .zero)  // `number` is now watched for `old`
            _ = loop.run(mode: other, timeout: .zero)  // ... and no longer
            close(number)
            let pipe = Pipe(readEndAt: number)  // the next connection, say
            second.set(pipe)
            pipe.write(42)
            let first = loop.run(mode: .default, timeout: .seconds(30), returnAfterSourceHandled: true)
            return [first, loop.run(mode: .default, timeout: .zero)]
        }
        defer { second.get?.close() }
        #expect(results == [.handledSource, .finished])
        #expect(events.all == [.error])
        #expect(stolen.all.isEmpty, "the old source's handler read the new file")
        #expect(!old.isValid)
    }

    /// A number closed while watched, its file kept open by a duplicate, and reused for a new file:
    /// when the old file becomes ready, the number names another file, so the source gets
    /// `.error` alone, not readiness its handler would act on by reading the new file.
    @Test func numberReusedWhileTheOldFileLivesOnReportsTheOldFilesReadinessAsAnError() throws {
        let number = reservedDescriptorNumber(4)
        let first = Pipe(readEndAt: number)
        let keeper = dup(first.readEnd)
        defer { close(keeper); close(first.writeEnd) }
        let events = EventLog<EvFileDescriptorSource.Readiness>()
        let stolen = EventLog<UInt8>()
        let old = try EvFileDescriptorSource(fileDescriptor: number, events: .readable) { readiness in
            events.append(readiness)
            guard readiness.contains(.readable) else { return }
            var byte: UInt8 = 0
            if read(number, &byte, 1) == 1 { stolen.append(byte) }
        }
        let second = Box<Pipe?>(nil)
        let results = onLoopThread { loop -> [EvRunLoop.RunResult] in
            loop.add(old, forMode: .default)
            _ = loop.run(mode: .default, timeout: .zero)  // `number` is now watched for `old`
            close(number)
            let pipe = Pipe(readEndAt: number)
            second.set(pipe)
            pipe.write(42)
            first.write()  // the old file, still open through `keeper`, becomes readable
            let first = loop.run(mode: .default, timeout: .seconds(30), returnAfterSourceHandled: true)
            return [first, loop.run(mode: .default, timeout: .zero)]
        }
        defer { second.get?.close() }
        #expect(results == [.handledSource, .finished])
        #expect(events.all == [.error])
        #expect(stolen.all.isEmpty, "the old source's handler read the new file")
        #expect(!old.isValid)
    }

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

    /// A regular file at `number`, holding one byte.
    private static func regularFile(at number: Int32) -> Int32 {
        var template = Array("/tmp/runloopkit-regular-XXXXXX".utf8CString)
        let fd = mkstemp(&template)
        precondition(fd >= 0)
        unlink(template)
        var byte: UInt8 = 7
        precondition(write(fd, &byte, 1) == 1 && lseek(fd, 0, SEEK_SET) == 0)
        precondition(dup2(fd, number) == number)
        close(fd)
        return number
    }

    /// A handler that reads whatever the number names when told it is readable, as a careless
    /// one does, and logs what it was told and what it read.
    private static func carelessReader(
        of number: Int32, _ events: EventLog<EvFileDescriptorSource.Readiness>, _ stolen: EventLog<UInt8>
    ) -> @Sendable (EvFileDescriptorSource.Readiness) -> Void {
        { readiness in
            events.append(readiness)
            guard readiness.contains(.readable) else { return }
            var byte: UInt8 = 0
            if read(number, &byte, 1) == 1 { stolen.append(byte) }
        }
    }

    /// An always-ready descriptor (a regular file) closed while watched is reported once as an
    /// error and leaves: the loop does not spin on it, reporting it readable for ever.
    @Test func regularFileClosedWhileWatchedIsReportedOnceAsAnError() throws {
        let number = Self.regularFile(at: reservedDescriptorNumber(5))
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
        let number = Self.regularFile(at: reservedDescriptorNumber(6))
        let events = EventLog<EvFileDescriptorSource.Readiness>()
        let stolen = EventLog<UInt8>()
        let old = try EvFileDescriptorSource(fileDescriptor: number, events: .readable, handler: Self.carelessReader(of: number, events, stolen))
        let second = Box<Pipe?>(nil)
        let results = onLoopThread { loop -> [EvRunLoop.RunResult] in
            loop.add(old, forMode: .default)
            let watched = loop.run(mode: .default, timeout: .seconds(30), returnAfterSourceHandled: true)
            close(number)
            let pipe = Pipe(readEndAt: number)
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
        let number = Self.regularFile(at: reservedDescriptorNumber(7))
        let oldEvents = EventLog<EvFileDescriptorSource.Readiness>()
        let old = try EvFileDescriptorSource(fileDescriptor: number, events: .readable) { oldEvents.append($0) }
        let newEvents = EventLog<EvFileDescriptorSource.Readiness>()
        let second = Box<Pipe?>(nil)
        let results = onLoopThread { loop -> [EvRunLoop.RunResult] in
            loop.add(old, forMode: .default)
            let watched = loop.run(mode: .default, timeout: .seconds(30), returnAfterSourceHandled: true)
            close(number)
            let pipe = Pipe(readEndAt: number)
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
        let first = Pipe(readEndAt: number)
        defer { close(first.writeEnd) }
        let oldEvents = EventLog<EvFileDescriptorSource.Readiness>()
        let old = try EvFileDescriptorSource(fileDescriptor: number, events: .readable) { oldEvents.append($0) }
        let newEvents = EventLog<EvFileDescriptorSource.Readiness>()
        let (results, newIsValid) = onLoopThread { loop -> ([EvRunLoop.RunResult], Bool) in
            loop.add(old, forMode: .default)
            _ = loop.run(mode: .default, timeout: .zero)  // `number` is now watched for `old`
            close(number)
            _ = Self.regularFile(at: number)
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

    /// Every eventfd shares one inode, so device and inode cannot tell two apart: an eventfd
    /// closed while its source was not watched, its number reused by another eventfd with a
    /// count, is still told from it. The old source gets `.error` alone and does not read it.
    @Test func anEventfdReusingAnotherEventfdsNumberIsToldApart() throws {
        let number = reservedDescriptorNumber(9)
        try #require(dup2(eventfd(0, Int32(EFD_NONBLOCK)), number) == number)
        let events = EventLog<EvFileDescriptorSource.Readiness>()
        let taken = EventLog<UInt64>()
        let old = try EvFileDescriptorSource(fileDescriptor: number, events: .readable) { readiness in
            events.append(readiness)
            guard readiness.contains(.readable) else { return }
            var count: UInt64 = 0
            if read(number, &count, 8) == 8 { taken.append(count) }
        }
        let results = onLoopThread { loop -> [EvRunLoop.RunResult] in
            let other = EvRunLoop.Mode("other")
            loop.add(old, forMode: other)  // watched only while `other` runs
            close(number)
            let second = eventfd(0, Int32(EFD_NONBLOCK))
            precondition(dup2(second, number) == number)
            close(second)
            var one: UInt64 = 42
            precondition(write(number, &one, 8) == 8)
            let first = loop.run(mode: other, timeout: .seconds(30), returnAfterSourceHandled: true)
            defer { close(number) }
            return [first, loop.run(mode: other, timeout: .zero)]
        }
        #expect(results == [.handledSource, .finished])
        #expect(events.all == [.error])
        #expect(taken.all.isEmpty, "the old source's handler read the other eventfd")
        #expect(!old.isValid)
    }

    /// Two sources ready together, handled one per iteration (R38): the first one's handler, or
    /// code between two runs, closes the second's number and opens a new file under it before
    /// the second's turn. The readiness that waited was the old file's: the second source gets
    /// `.error` alone, and its careless handler never reads the new file. Regular files (always
    /// ready) and pipes alike.
    @Test(.serialized, arguments: ["pipes, by a handler", "pipes, between runs", "regular files, by a handler"])
    func aNumberReusedWhileItsReadinessWaitsItsTurnIsAnErrorNotTheNewFilesData(_ scenario: String) throws {
        let numbers = [reservedDescriptorNumber(11), reservedDescriptorNumber(12)]
        let writeEnds = numbers.map { number -> Int32 in
            if scenario.hasPrefix("regular") {
                _ = Self.regularFile(at: number)
                return -1
            }
            let pipe = Pipe(readEndAt: number)
            pipe.write()
            return pipe.writeEnd
        }
        let byHandler = scenario.hasSuffix("by a handler")
        let newFiles = EventLog<Int32>()
        /// Closes `number` and puts a new pipe with a byte in it there (the next connection, say).
        @Sendable func reuse(_ number: Int32) {
            let pipe = Pipe()
            precondition(dup2(pipe.readEnd, number) == number)
            close(pipe.readEnd)
            var byte: UInt8 = 42
            precondition(write(pipe.writeEnd, &byte, 1) == 1)
            newFiles.append(pipe.writeEnd)
        }
        let events = EventLog<(Int, EvFileDescriptorSource.Readiness)>()
        let stolen = EventLog<UInt8>()
        let sources = try (0..<2).map { index in
            try EvFileDescriptorSource(fileDescriptor: numbers[index], events: .readable) { readiness in
                let first = events.count == 0
                events.append((index, readiness))
                guard readiness.contains(.readable) else { return }
                var byte: UInt8 = 0
                if read(numbers[index], &byte, 1) == 1, byte == 42 { stolen.append(byte) }
                if first && byHandler { reuse(numbers[1 - index]) }
            }
        }
        let results = onLoopThread { loop -> [EvRunLoop.RunResult] in
            for source in sources { loop.add(source, forMode: .default) }
            loop.add(keepAliveTimer(), forMode: .default)
            // Both are reported by the first wait; one is handled.
            let first = loop.run(mode: .default, timeout: .seconds(30), returnAfterSourceHandled: true)
            if !byHandler, let handled = events.all.first?.0 { reuse(numbers[1 - handled]) }
            let second = loop.run(mode: .default, timeout: .seconds(30), returnAfterSourceHandled: true)
            for source in sources { source.invalidate() }
            return [first, second]
        }
        defer {
            for number in numbers { close(number) }
            for fd in writeEnds + newFiles.all where fd >= 0 { close(fd) }
        }
        #expect(results == [.handledSource, .handledSource])
        let handled = events.all
        try #require(handled.count == 2)
        #expect(handled[0].1 == .readable)
        #expect(handled[1].0 != handled[0].0)
        #expect(handled[1].1 == .error)
        #expect(stolen.all.isEmpty, "the second source's handler read the new file")
        #expect(!sources[handled[1].0].isValid)
    }

    /// Sources on `count` pipes, each ready with one byte, each handler reading one byte.
    private static func readyPipes(_ count: Int, _ handled: EventLog<Int>) -> ([Pipe], [EvFileDescriptorSource]) {
        let pipes = (0..<count).map { _ in Pipe() }
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

    /// A source made for a pipe Y at a number whose earlier file X stays open elsewhere: Y is
    /// closed and X put back under the number ("save, redirect, restore"). The source is Y's:
    /// X's readiness reaches it as `.error`, never as readiness.
    @Test func aFilePutBackUnderItsNumberIsNotTheFileMadeForInBetween() throws {
        let number = reservedDescriptorNumber(10)
        let x = Pipe(readEndAt: number)
        _ = try EvFileDescriptorSource(fileDescriptor: number, events: .readable) { _ in }  // enters X
        let keptX = dup(number)
        let y = Pipe(readEndAt: number)
        let events = EventLog<EvFileDescriptorSource.Readiness>()
        let madeForY = try EvFileDescriptorSource(fileDescriptor: number, events: .readable) { events.append($0) }
        close(number)
        close(y.writeEnd)
        precondition(dup2(keptX, number) == number)
        close(keptX)
        defer { x.close() }
        x.write()
        let result = onLoopThread { loop -> EvRunLoop.RunResult in
            loop.add(madeForY, forMode: .default)
            return loop.run(mode: .default, timeout: .seconds(30), returnAfterSourceHandled: true)
        }
        #expect(result == .handledSource)
        #expect(events.all == [.error])
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
        let first = Pipe()
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

    @Test func badDescriptorsThrow() {
        #expect(throws: EvSourceError.badFileDescriptor(-1)) {
            try EvFileDescriptorSource(fileDescriptor: -1, events: .readable) { _ in }
        }
        #expect(throws: EvSourceError.badFileDescriptor(9_999)) {
            try EvFileDescriptorSource(fileDescriptor: 9_999, events: .readable) { _ in }
        }
    }
}

