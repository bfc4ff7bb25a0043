import Foundation
import RunLoopKit
import Testing
import TestSupport

/// How a ready descriptor reaches its source's handler when sources leave, rejoin, fail or are
/// made while readiness waits: none is lost, none is handed to another source or file.
@Suite struct ReadinessHandoverAdversarialTests {
    /// Readiness reported while its source was out of the loop (another thread removed it during
    /// the wait) is ignored; the source rejoins before the loop syncs its watchers, so it keeps
    /// its watcher, whose entry must report again: else it rests as if a handler would take it,
    /// and a loop that only polls never sees the descriptor.
    @Test func readinessReportedWhileItsSourceWasOutOfTheLoopIsSeenOnceItRejoins() throws {
        let pipe = DescriptorPipe()
        defer { pipe.close() }
        let handled = EventLog<EvFileDescriptorSource.Readiness>()
        let source = try EvFileDescriptorSource(fileDescriptor: pipe.readEnd, events: .readable) { readiness in
            handled.append(readiness)
            pipe.drain()
        }
        let (woke, polls) = onLoopThread { loop -> (EvRunLoop.RunResult, Int) in
            loop.add(source, forMode: .default)
            loop.add(keepAliveTimer(), forMode: .default)
            _ = loop.run(mode: .default, timeout: .zero)  // watched now
            // Out of the loop while it sleeps watching it, then readable: the wake-up finds it out.
            let helper = spawnThread {
                guard spinUntil({ loop.isWaiting }) else { return }
                loop.remove(source, forMode: .default)
                pipe.write()
            }
            loop.add(once(.afterWaiting) {
                loop.add(source, forMode: .default)  // back before the next sync: same watcher
                loop.stop()
            }, forMode: .default)
            let woke = loop.run(mode: .default, timeout: .seconds(30))
            pthread_join(helper, nil)
            var polls = 0
            while handled.count == 0 && polls < 50 {
                polls += 1
                _ = loop.run(mode: .default, timeout: .zero)
            }
            source.invalidate()
            return (woke, polls)
        }
        #expect(woke == .stopped)
        #expect(handled.all == [.readable])
        #expect(polls <= 2)
    }

    /// A failure (the number closed while its file stays open elsewhere) waits its turn behind
    /// another source; while that one's handler runs, another thread takes the failing source
    /// out of its mode and back in: the failure went with it, and the watcher it stopped must
    /// start again and report it, or the source stays in its mode watching nothing, never told.
    @Test func aFailureDroppedWithASourceThatLeftItsModeAndRejoinedIsReportedAgain() throws {
        let first = DescriptorPipe()
        let pipe = DescriptorPipe(readEndAt: reservedDescriptorNumber(20))
        let keeper = dup(pipe.readEnd)
        defer { first.close(); close(keeper); close(pipe.writeEnd) }
        let events = EventLog<EvFileDescriptorSource.Readiness>()
        let failing = try EvFileDescriptorSource(fileDescriptor: pipe.readEnd, events: .readable) { events.append($0) }
        let early = try EvFileDescriptorSource(fileDescriptor: first.readEnd, events: .readable) { _ in
            first.drain()
            let loop = EvRunLoop.current
            pthread_join(spawnThread {
                loop.remove(failing, forMode: .default)
                loop.add(failing, forMode: .default)
            }, nil)
        }
        let (polls, stillValid) = onLoopThread { loop -> (Int, Bool) in
            loop.add(early, forMode: .default)
            loop.add(failing, forMode: .default)
            loop.add(keepAliveTimer(), forMode: .default)
            _ = loop.run(mode: .default, timeout: .zero)  // both watched
            first.write()
            close(pipe.readEnd)
            pipe.write()  // reported by the file's entry after `first`: a failure, as the number is closed
            _ = loop.run(mode: .default, timeout: .zero, returnAfterSourceHandled: true)  // `early`
            var polls = 0
            while events.count == 0 && polls < 50 {
                polls += 1
                _ = loop.run(mode: .default, timeout: .zero)
            }
            let stillValid = failing.isValid
            early.invalidate()
            failing.invalidate()
            return (polls, stillValid)
        }
        #expect(events.all == [.error])
        #expect(!stillValid)
        #expect(polls <= 2)
    }

    /// A source in modes `a` and `b` whose number was closed (its file open elsewhere) is told
    /// `.error` in `a`, and its handler runs `b` nested before returning: the watcher that failed
    /// is not started again there to fail again, and the error is told once.
    @Test func anErrorHandlerThatRunsAnotherModeOfItsSourceIsToldOnce() throws {
        let a = EvRunLoop.Mode("a"), b = EvRunLoop.Mode("b")
        let pipe = DescriptorPipe(readEndAt: reservedDescriptorNumber(24))
        let keeper = dup(pipe.readEnd)
        defer { close(keeper); close(pipe.writeEnd) }
        let events = EventLog<EvFileDescriptorSource.Readiness>()
        let source = try EvFileDescriptorSource(fileDescriptor: pipe.readEnd, events: .readable) { readiness in
            events.append(readiness)
            for _ in 0..<3 { _ = EvRunLoop.current.run(mode: b, timeout: .zero) }
        }
        let stillValid = onLoopThread { loop -> Bool in
            loop.add(source, forMode: a)
            loop.add(source, forMode: b)
            loop.add(keepAliveTimer(), forMode: a)
            loop.add(keepAliveTimer(), forMode: b)
            _ = loop.run(mode: a, timeout: .zero)  // watched
            close(pipe.readEnd)
            pipe.write()  // the file, open through `keeper`, reports: a failure, as the number is closed
            for _ in 0..<3 { _ = loop.run(mode: a, timeout: .zero) }
            return source.isValid
        }
        #expect(events.all == [.error])
        #expect(!stillValid)
    }

    /// Save, redirect, restore while readiness waits its turn: file X was watched at a number
    /// that was then closed with X kept open elsewhere (the kernel keeps the set's entry for X
    /// under the number), pipe Y put there and watched, and Y's readiness waits behind another
    /// source's when X is put back. The number no longer names Y: its source is told `.error`
    /// alone and never reads X, though a re-arm of the number finds the kernel's entry for X.
    @Test func aFileOnceWatchedPutBackUnderItsNumberWhileAnotherWaitsItsTurnIsNotHandedOn() throws {
        let number = reservedDescriptorNumber(23)
        let x = DescriptorPipe(readEndAt: number)
        let keptX = dup(number)
        let first = DescriptorPipe()
        defer { close(number); close(keptX); close(x.writeEnd); first.close() }
        let watchingX = try EvFileDescriptorSource(fileDescriptor: number, events: .readable) { _ in }
        let events = EventLog<EvFileDescriptorSource.Readiness>()
        let stolen = EventLog<UInt8>()
        let early = try EvFileDescriptorSource(fileDescriptor: first.readEnd, events: .readable) { _ in first.drain() }
        let (results, yWriteEnd) = onLoopThread { loop -> ([EvRunLoop.RunResult], Int32) in
            loop.add(watchingX, forMode: .default)
            loop.add(keepAliveTimer(), forMode: .default)
            _ = loop.run(mode: .default, timeout: .zero)  // X watched at `number`
            let y = DescriptorPipe(readEndAt: number)  // X lives on through `keptX`
            watchingX.invalidate()
            let watchingY = try! EvFileDescriptorSource(fileDescriptor: number, events: .readable, handler: carelessReader(of: number, events, stolen))
            loop.add(early, forMode: .default)
            loop.add(watchingY, forMode: .default)
            _ = loop.run(mode: .default, timeout: .zero)  // Y watched
            first.write()
            y.write(7)
            let firstResult = loop.run(mode: .default, timeout: .zero, returnAfterSourceHandled: true)  // `early`; Y waits
            precondition(dup2(keptX, number) == number)  // X back under the number; Y closed for good
            x.write(42)
            let secondResult = loop.run(mode: .default, timeout: .zero, returnAfterSourceHandled: true)
            for _ in 0..<3 { _ = loop.run(mode: .default, timeout: .zero) }
            early.invalidate()
            watchingY.invalidate()
            return ([firstResult, secondResult], y.writeEnd)
        }
        close(yWriteEnd)
        #expect(results == [.handledSource, .handledSource])
        #expect(events.all == [.error])
        #expect(stolen.all.isEmpty, "the source made for Y read X")
    }

    /// Save, redirect, restore after many readinesses: file X, watched at a number, lives on
    /// elsewhere when pipe Y takes the number, and Y is watched and read 40 times before X is put
    /// back. The kernel still keeps the set's entry for X under the number, so Y's re-arms stay
    /// checked however many there were: once X is back, the re-arm after a run of another mode
    /// tells Y's source `.error`, and it never reads X.
    @Test func aFileKeptOpenElsewhereStaysToldApartAfterTheNextFilesManyReadinesses() throws {
        let number = reservedDescriptorNumber(25)
        let x = DescriptorPipe(readEndAt: number)
        let keptX = dup(number)
        defer { close(number); close(keptX); close(x.writeEnd) }
        let watchingX = try EvFileDescriptorSource(fileDescriptor: number, events: .readable) { _ in }
        let events = EventLog<EvFileDescriptorSource.Readiness>()
        let read = EventLog<UInt8>()
        let turns = 40
        let yWriteEnd = onLoopThread { loop -> Int32 in
            loop.add(watchingX, forMode: .default)
            loop.add(keepAliveTimer(), forMode: .default)
            _ = loop.run(mode: .default, timeout: .zero)  // X watched at `number`
            let y = DescriptorPipe(readEndAt: number)  // X lives on through `keptX`
            watchingX.invalidate()
            let watchingY = try! EvFileDescriptorSource(fileDescriptor: number, events: .readable) { readiness in
                events.append(readiness)
                var byte: UInt8 = 0
                if readiness.contains(.readable), Foundation.read(number, &byte, 1) == 1 { read.append(byte) }
            }
            loop.add(watchingY, forMode: .default)
            for _ in 0..<turns {
                y.write(7)
                _ = loop.run(mode: .default, timeout: .seconds(10), returnAfterSourceHandled: true)
            }
            precondition(dup2(keptX, number) == number)  // X back under the number; Y closed for good
            x.write(42)
            // A run of another mode parks Y's watch; the default mode's next run re-arms it.
            let other = EvRunLoop.Mode("handover.other")
            loop.add(keepAliveTimer(), forMode: other)
            _ = loop.run(mode: other, timeout: .zero)
            for _ in 0..<3 { _ = loop.run(mode: .default, timeout: .zero) }
            watchingY.invalidate()
            return y.writeEnd
        }
        close(yWriteEnd)
        #expect(events.all == Array(repeating: .readable, count: turns) + [.error])
        #expect(read.all == Array(repeating: 7, count: turns), "the source made for Y read X")
    }

    /// Probe (passes): two numbers ready together; the first one handled invalidates itself and the
    /// other, whose readiness waits its turn, closes both and makes sources for new pipes under
    /// both numbers, which take the freed watcher tokens. The new source whose pipe holds a byte
    /// is told once; the one whose pipe is empty is told nothing until it is written; the old
    /// waiting readiness reaches no one.
    @Test func sourcesMadeByAHandlerOnFreedNumbersAndTokensGetNoneOfTheOldReadiness() throws {
        let numbers = [reservedDescriptorNumber(21), reservedDescriptorNumber(22)]
        let oldPipes = numbers.map { DescriptorPipe(readEndAt: $0) }
        for pipe in oldPipes { pipe.write() }
        let log = EventLog<String>()
        let newPipes = Box<[DescriptorPipe]>([])
        let newSources = Box<[EvFileDescriptorSource]>([])
        let oldSources = Box<[EvFileDescriptorSource]>([])
        /// A new pipe at `number`, with a byte when `filled`, and a source for it in the default mode.
        @Sendable func replace(_ number: Int32, filled: Bool) {
            let pipe = DescriptorPipe(readEndAt: number)  // dup2 closes the old file's number
            if filled { pipe.write() }
            newPipes.update { $0.append(pipe) }
            let source = try! EvFileDescriptorSource(fileDescriptor: number, events: .readable) { readiness in
                log.append("new \(filled ? "filled" : "empty") \(readiness)")
                pipe.drain()
            }
            newSources.update { $0.append(source) }
            EvRunLoop.current.add(source, forMode: .default)
        }
        oldSources.set(try (0..<2).map { index in
            try EvFileDescriptorSource(fileDescriptor: numbers[index], events: .readable) { readiness in
                log.append("old \(readiness)")
                for source in oldSources.get { source.invalidate() }
                close(oldPipes[0].writeEnd)
                close(oldPipes[1].writeEnd)
                replace(numbers[index], filled: true)
                replace(numbers[1 - index], filled: false)
            }
        })
        let (polls, emptyToldEarly) = onLoopThread { loop -> (Int, Bool) in
            for source in oldSources.get { loop.add(source, forMode: .default) }
            loop.add(keepAliveTimer(), forMode: .default)
            var polls = 0
            while log.count < 2 && polls < 50 {
                polls += 1
                _ = loop.run(mode: .default, timeout: .zero, returnAfterSourceHandled: true)
            }
            // Each poll here would hand on a readiness the empty pipe's source wrongly took over.
            for _ in 0..<5 { _ = loop.run(mode: .default, timeout: .zero) }
            let emptyToldEarly = log.all.contains { $0.hasPrefix("new empty") }
            newPipes.get[1].write()
            while log.count < 3 && polls < 100 {
                polls += 1
                _ = loop.run(mode: .default, timeout: .zero)
            }
            for source in newSources.get { source.invalidate() }
            return (polls, emptyToldEarly)
        }
        defer { for pipe in newPipes.get { pipe.close() } }
        oldSources.set([])  // each old source's handler holds the box: let the sources go
        #expect(!emptyToldEarly)
        #expect(log.all == ["old \(EvFileDescriptorSource.Readiness.readable)", "new filled \(EvFileDescriptorSource.Readiness.readable)",
                            "new empty \(EvFileDescriptorSource.Readiness.readable)"])
        #expect(polls <= 6)
    }

    /// Probe (passes): eight descriptors ready at once; while the first one's handler runs,
    /// another thread invalidates three of the waiting sources and adds three new sources on
    /// empty pipes, which take the freed watcher tokens at the next sync. The invalidated ones
    /// are never told; the rest are told once each; the new ones only once written.
    @Test func sourcesSwappedByAnotherThreadWhileReadinessIsQueuedGetNoneOfItsReadiness() throws {
        let count = 8
        let pipes = (0..<count).map { _ in DescriptorPipe() }
        let log = EventLog<Int>()
        let inHandler = Latch(), swapped = Latch()
        let sources = try (0..<count).map { index in
            try EvFileDescriptorSource(fileDescriptor: pipes[index].readEnd, events: .readable) { _ in
                log.append(index)
                pipes[index].drain()
                if log.count == 1 {
                    inHandler.open()
                    swapped.wait()
                }
            }
        }
        let newPipes = (0..<3).map { _ in DescriptorPipe() }
        let newSources = try (0..<3).map { index in
            try EvFileDescriptorSource(fileDescriptor: newPipes[index].readEnd, events: .readable) { _ in
                log.append(100 + index)
                newPipes[index].drain()
            }
        }
        defer { (pipes + newPipes).forEach { $0.close() } }
        let (loop, finished) = startLoopThread { loop in
            for source in sources { loop.add(source, forMode: .default) }
            loop.add(keepAliveTimer(), forMode: .default)
            for pipe in pipes { pipe.write() }
            _ = loop.run(mode: .default, timeout: .seconds(30), returnAfterSourceHandled: true)
            var polls = 0
            while log.count < count - 3 && polls < 50 {
                polls += 1
                _ = loop.run(mode: .default, timeout: .zero, returnAfterSourceHandled: true)
            }
            for _ in 0..<3 { _ = loop.run(mode: .default, timeout: .zero) }  // nothing for the new ones yet
            let quiet = log.count
            for pipe in newPipes { pipe.write() }
            while log.count < quiet + 3 && polls < 100 {
                polls += 1
                _ = loop.run(mode: .default, timeout: .seconds(30), returnAfterSourceHandled: true)
            }
            for source in sources + newSources { source.invalidate() }
        }
        try #require(inHandler.wait())
        let first = log.all[0]
        let victims = Set((1...3).map { (first + $0) % count })
        for victim in victims { sources[victim].invalidate() }
        for source in newSources { loop.add(source, forMode: .default) }
        swapped.open()
        try #require(finished.wait())
        let handled = log.all
        let survivors = Set(0..<count).subtracting(victims)
        #expect(Set(handled.prefix(count - 3)) == survivors)
        #expect(handled.count == count - 3 + 3)
        #expect(Set(handled.suffix(3)) == [100, 101, 102])
        #expect(victims.isDisjoint(with: handled))
    }

    /// Probe (passes): six sources ready in mode `a`, three of them also in mode `b`; the first
    /// one's handler writes a pipe of `b`'s own source and polls `b` until it is told. Resting
    /// entries survive the switch both ways: every source is told exactly once, in whichever
    /// mode, and none twice for its one byte.
    @Test func aNestedRunOfAnotherModeLosesAndRepeatsNoWaitingReadiness() throws {
        let a = EvRunLoop.Mode("a"), b = EvRunLoop.Mode("b")
        let pipes = (0..<7).map { _ in DescriptorPipe() }
        defer { pipes.forEach { $0.close() } }
        let log = EventLog<(Int, EvRunLoop.Mode)>()
        let nestedPolls = Box(0)
        let sources = try (0..<7).map { index in
            try EvFileDescriptorSource(fileDescriptor: pipes[index].readEnd, events: .readable) { _ in
                let loop = EvRunLoop.current
                log.append((index, loop.currentMode ?? .default))
                pipes[index].drain()
                guard log.count == 1 else { return }
                pipes[6].write()
                while !log.all.contains(where: { $0.0 == 6 }) && nestedPolls.get < 50 {
                    nestedPolls.set(nestedPolls.get + 1)
                    _ = loop.run(mode: b, timeout: .zero)
                }
            }
        }
        let polls = onLoopThread { loop -> Int in
            for index in 0..<6 { loop.add(sources[index], forMode: a) }
            for index in 3..<7 { loop.add(sources[index], forMode: b) }
            for index in 0..<6 { pipes[index].write() }
            var polls = 0
            while log.count < 7 && polls < 50 {
                polls += 1
                _ = loop.run(mode: a, timeout: .zero, returnAfterSourceHandled: true)
            }
            for _ in 0..<3 { _ = loop.run(mode: a, timeout: .zero); _ = loop.run(mode: b, timeout: .zero) }
            for source in sources { source.invalidate() }
            return polls
        }
        let handled = log.all.map(\.0)
        #expect(handled.sorted() == Array(0..<7))
        #expect(log.all.allSatisfy { $0.0 >= 3 || $0.1 == a })
        #expect(nestedPolls.get <= 6)
        #expect(polls <= 8)
    }

    /// A source that leaves its loop on the loop's thread stops its watch at once, even from a
    /// libev library's prepare callback, which runs inside the wait. When another source shares
    /// the descriptor and its file is gone, that one's failure is found there: the wait ends for
    /// it instead of polling until an unrelated wake-up.
    @Test func aFailureFoundByAStopInsideTheWaitEndsTheWait() throws {
        let pipe = DescriptorPipe()
        defer { close(pipe.writeEnd) }
        let told = EventLog<String>()
        let leaving = try EvFileDescriptorSource(fileDescriptor: pipe.readEnd, events: .readable) { _ in told.append("leaving") }
        let staying = try EvFileDescriptorSource(fileDescriptor: pipe.readEnd, events: .readable) { readiness in
            told.append(readiness == .error ? "staying error" : "staying other")
            EvRunLoop.current.stop()
        }
        let result = onLoopThread { loop -> EvRunLoop.RunResult in
            loop.add(leaving, forMode: .default)
            loop.add(staying, forMode: .default)
            let library = EvLibevSource()
            loop.add(library, forMode: .default)
            _ = loop.run(mode: .default, timeout: .zero)  // both watched now
            let closed = Box(false)
            let prepare = LibraryWatcher(.prepare) {
                guard !closed.get else { return }
                closed.set(true)
                close(pipe.readEnd)  // the file is gone
                leaving.invalidate()
            }
            library.withEventLoop { prepare.start($0) }
            let result = loop.run(mode: .default, timeout: .seconds(20))
            library.withEventLoop { prepare.stop($0) }
            library.invalidate()
            staying.invalidate()
            return result
        }
        #expect(result == .stopped)
        #expect(told.all == ["staying error"])
    }
}
