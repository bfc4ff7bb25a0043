import CEpoll
import Foundation
import RunLoopKit
import Testing
import TestSupport

/// A watched descriptor closed, and its number reused for another file: the old source is told
/// `.error` once and leaves; it never reads the new file.
@Suite struct DescriptorReuseTests {
    @Test func descriptorClosedWhileWatchedIsReportedOnceAsAnErrorAndTheSourceLeaves() throws {
        let pipe = DescriptorPipe(readEndAt: reservedDescriptorNumber(0))
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
        let pipe = DescriptorPipe(readEndAt: reservedDescriptorNumber(1))
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
        let first = DescriptorPipe(readEndAt: number)
        defer { close(first.writeEnd) }
        let events = EventLog<String>()
        let old = try EvFileDescriptorSource(fileDescriptor: number, events: .readable) { events.append("old \($0)") }
        let second = Box<DescriptorPipe?>(nil)
        let newSource = Box<EvFileDescriptorSource?>(nil)
        let results = onLoopThread { loop -> [EvRunLoop.RunResult] in
            loop.add(old, forMode: .default)
            _ = loop.run(mode: .default, timeout: .zero)  // `number` is now watched for `old`
            close(number)
            let pipe = DescriptorPipe(readEndAt: number)
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
        let first = DescriptorPipe(readEndAt: number)
        defer { close(first.writeEnd) }
        let events = EventLog<EvFileDescriptorSource.Readiness>()
        let stolen = EventLog<UInt8>()
        let old = try EvFileDescriptorSource(fileDescriptor: number, events: .readable, handler: carelessReader(of: number, events, stolen))
        let second = Box<DescriptorPipe?>(nil)
        let results = onLoopThread { loop -> [EvRunLoop.RunResult] in
            let other = EvRunLoop.Mode("other")
            loop.add(old, forMode: .default)
            loop.add(keepAliveTimer(), forMode: other)
            _ = loop.run(mode: .default, timeout: .zero)  // `number` is now watched for `old`
            _ = loop.run(mode: other, timeout: .zero)  // ... and no longer
            close(number)
            let pipe = DescriptorPipe(readEndAt: number)  // the next connection, say
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
        let first = DescriptorPipe(readEndAt: number)
        let keeper = dup(first.readEnd)
        defer { close(keeper); close(first.writeEnd) }
        let events = EventLog<EvFileDescriptorSource.Readiness>()
        let stolen = EventLog<UInt8>()
        let old = try EvFileDescriptorSource(fileDescriptor: number, events: .readable, handler: carelessReader(of: number, events, stolen))
        let second = Box<DescriptorPipe?>(nil)
        let results = onLoopThread { loop -> [EvRunLoop.RunResult] in
            loop.add(old, forMode: .default)
            _ = loop.run(mode: .default, timeout: .zero)  // `number` is now watched for `old`
            close(number)
            let pipe = DescriptorPipe(readEndAt: number)
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
                _ = regularFile(at: number)
                return -1
            }
            let pipe = DescriptorPipe(readEndAt: number)
            pipe.write()
            return pipe.writeEnd
        }
        let byHandler = scenario.hasSuffix("by a handler")
        let newFiles = EventLog<Int32>()
        /// Closes `number` and puts a new pipe with a byte in it there (the next connection, say).
        @Sendable func reuse(_ number: Int32) {
            let pipe = DescriptorPipe()
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

    /// A source made for a pipe Y at a number whose earlier file X stays open elsewhere: Y is
    /// closed and X put back under the number ("save, redirect, restore"). The source is Y's:
    /// X's readiness reaches it as `.error`, never as readiness.
    @Test func aFilePutBackUnderItsNumberIsNotTheFileMadeForInBetween() throws {
        let number = reservedDescriptorNumber(10)
        let x = DescriptorPipe(readEndAt: number)
        _ = try EvFileDescriptorSource(fileDescriptor: number, events: .readable) { _ in }  // enters X
        let keptX = dup(number)
        let y = DescriptorPipe(readEndAt: number)
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
}
