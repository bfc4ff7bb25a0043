import Foundation
@testable import RunLoopKit
import Synchronization
import Testing
import TestSupport

/// Polls `outer` once, running `inner` nested in a callout of it (a timer due at once), and
/// `body` in a callout of `inner` (another timer): after `inner`'s watchers are in step, so with
/// `outer`'s sources parked. The nested run lasts until a source is handled or `innerTimeout`
/// passes; returns its result.
private func nestedRun(
    _ loop: EvRunLoop, outer: EvRunLoop.Mode, inner: EvRunLoop.Mode, innerTimeout: Duration = .seconds(30),
    _ body: @escaping @Sendable (EvRunLoop) -> Void
) -> EvRunLoop.RunResult {
    let result = Box<EvRunLoop.RunResult?>(nil)
    loop.add(EvTimer(after: .zero) { _ in body(loop) }, forMode: inner)
    loop.add(EvTimer(after: .zero) { _ in
        result.set(loop.run(mode: inner, timeout: innerTimeout, returnAfterSourceHandled: true))
    }, forMode: outer)
    _ = loop.run(mode: outer, timeout: .zero)
    return result.get ?? .finished
}

/// A watched pipe whose number is closed and reused for a new pipe, watched by a new source: what
/// each source is told and reads.
private final class ReusedNumber: Sendable {
    let number: Int32
    let old: DescriptorPipe
    let oldSource: EvFileDescriptorSource
    let oldEvents = EventLog<EvFileDescriptorSource.Readiness>(), stolen = EventLog<UInt8>()
    let newEvents = EventLog<EvFileDescriptorSource.Readiness>(), newRead = EventLog<UInt8>()
    private let newSource = Box<EvFileDescriptorSource?>(nil)
    private let newWriteEnd = Box<Int32>(-1)

    init(at number: Int32) throws {
        self.number = number
        old = DescriptorPipe(readEndAt: number)
        oldSource = try EvFileDescriptorSource(fileDescriptor: number, events: .readable, handler: carelessReader(of: number, oldEvents, stolen))
    }

    /// Closes the number, puts a new pipe with one byte (2) under it and watches it in `mode`.
    func reuse(in loop: EvRunLoop, mode: EvRunLoop.Mode) {
        close(number)
        let fresh = DescriptorPipe(readEndAt: number)
        newWriteEnd.set(fresh.writeEnd)
        let source = try! EvFileDescriptorSource(fileDescriptor: number, events: .readable, handler: carelessReader(of: number, newEvents, newRead))
        newSource.set(source)
        loop.add(source, forMode: mode)
        fresh.write(2)
    }

    /// Ends the new source and closes every end.
    func closeAll() {
        newSource.get?.invalidate()
        Foundation.close(number)
        Foundation.close(newWriteEnd.get)
        Foundation.close(old.writeEnd)
    }
}

/// Descriptor watches parked by nested runs of other modes, attacked: numbers closed and reused,
/// sources invalidated from other threads, hang-ups, many watchers on one descriptor, always-ready
/// files, loops ending. The parked source never reads another file, readiness is not lost, and the
/// other mode neither wakes for a parked watch nor spins.
@Suite struct ParkedDescriptorAdversarialTests {
    /// A parked source's number closed and reused, within a nested run, for a file a new source
    /// of the running mode watches: the new one is told, the old one only `.error`, even when the
    /// old file lives on elsewhere and becomes ready.
    @Test(arguments: [false, true]) func parkedNumberReusedForANewSourceOfTheNestedMode(keepOldFileOpen: Bool) throws {
        let pipes = try ReusedNumber(at: reservedDescriptorNumber(keepOldFileOpen ? 42 : 40))  // the cases run at once
        let keeper = keepOldFileOpen ? dup(pipes.old.readEnd) : -1
        defer { if keeper >= 0 { close(keeper) } }
        let a = EvRunLoop.Mode("a"), b = EvRunLoop.Mode("b")
        let results = onLoopThread { loop -> [EvRunLoop.RunResult] in
            loop.add(pipes.oldSource, forMode: a)
            _ = loop.run(mode: a, timeout: .zero)  // watched
            let nested = nestedRun(loop, outer: a, inner: b) { loop in
                pipes.old.write(1)  // readiness of the parked source
                pipes.reuse(in: loop, mode: b)
                if keepOldFileOpen { pipes.old.write(3) }  // the old file, open elsewhere, readable again
            }
            // The old source was told its error as the nested run returned, and left `a`.
            return [nested, loop.run(mode: a, timeout: .zero)]
        }
        pipes.closeAll()
        #expect(results == [.handledSource, .finished])
        #expect(pipes.newEvents.all == [.readable])
        #expect(pipes.newRead.all == [2])
        #expect(pipes.oldEvents.all == [.error])
        #expect(pipes.stolen.all.isEmpty)
        #expect(!pipes.oldSource.isValid)
    }

    /// A source of `a` ready when a timer of `a` runs `b` nested: back in `a`, in the same pass,
    /// it is handled while its watch is still parked. Its number was closed and reused in `b`
    /// (the handler is told `.error` alone and reads nothing) or not (it is told, and its
    /// watch resumes: more data is told at the next run).
    @Test(arguments: [true, false]) func aSourceHandledWhileItsWatchIsParkedIsCheckedFirst(reuse: Bool) throws {
        let number = reservedDescriptorNumber(reuse ? 43 : 49)  // the cases run at once
        let old = DescriptorPipe(readEndAt: number)
        defer { close(old.writeEnd) }
        let a = EvRunLoop.Mode("a"), b = EvRunLoop.Mode("b")
        let events = EventLog<EvFileDescriptorSource.Readiness>(), read = EventLog<UInt8>()
        let source = try EvFileDescriptorSource(fileDescriptor: number, events: .readable, handler: carelessReader(of: number, events, read))
        let freshWriteEnd = Box<Int32>(-1)
        let results = onLoopThread { loop -> [EvRunLoop.RunResult] in
            loop.add(source, forMode: a)
            loop.add(keepAliveTimer(), forMode: a)
            loop.add(keepAliveTimer(), forMode: b)
            old.write(1)
            loop.add(EvTimer(after: .zero) { _ in
                old.write(3)  // more readiness, which comes while the watch is parked
                if reuse {
                    close(number)
                    let fresh = DescriptorPipe(readEndAt: number)
                    freshWriteEnd.set(fresh.writeEnd)
                    fresh.write(2)
                }
            }, forMode: b)
            loop.add(EvTimer(after: .zero) { _ in _ = loop.run(mode: b, timeout: .milliseconds(5)) }, forMode: a)
            var results = [loop.run(mode: a, timeout: .zero)]  // the timer, then the source
            results.append(loop.run(mode: a, timeout: .zero))
            return results
        }
        source.invalidate()
        if freshWriteEnd.get >= 0 { close(freshWriteEnd.get) }
        close(number)
        #expect(results == [.timedOut, .timedOut])
        #expect(events.all == (reuse ? [.error] : [.readable, .readable]))
        #expect(read.all == (reuse ? [] : [1, 3]))
    }

    /// A parked source invalidated from another thread during a nested run, its number then
    /// closed and reused there for a new source of the running mode: the old handler never runs,
    /// the new one is told.
    @Test func parkedSourceInvalidatedAndItsNumberReusedFromAnotherThread() throws {
        let pipes = try ReusedNumber(at: reservedDescriptorNumber(41))
        let a = EvRunLoop.Mode("a"), b = EvRunLoop.Mode("b")
        let results = onLoopThread { loop -> [EvRunLoop.RunResult] in
            loop.add(pipes.oldSource, forMode: a)
            _ = loop.run(mode: a, timeout: .zero)  // watched
            let nested = nestedRun(loop, outer: a, inner: b) { loop in
                let done = Latch()
                let thread = spawnThread {
                    pipes.oldSource.invalidate()
                    pipes.reuse(in: loop, mode: b)
                    done.open()
                }
                done.wait()
                pthread_join(thread, nil)
            }
            let back = loop.run(mode: a, timeout: .zero)
            return [nested, back]
        }
        pipes.closeAll()
        #expect(results == [.handledSource, .finished])
        #expect(pipes.newEvents.all == [.readable])
        #expect(pipes.newRead.all == [2])
        #expect(pipes.oldEvents.all.isEmpty)
        #expect(pipes.stolen.all.isEmpty)
    }

    /// A socket source of `a` watching reading and writing (ready all along) is parked while
    /// `b` runs, and its peer goes then (a hang-up): `b` sleeps to its timeout, once, neither
    /// woken nor spun by the parked watch; the hang-up is told once `a` runs.
    @Test func aHangUpOfAParkedSocketNeitherWakesNorSpinsAnotherMode() throws {
        var fds: [Int32] = [0, 0]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0)
        let pair = fds
        defer { close(pair[0]) }
        let a = EvRunLoop.Mode("a"), b = EvRunLoop.Mode("b")
        let told = EventLog<String>()
        let reader = try EvFileDescriptorSource(fileDescriptor: pair[0], events: [.readable, .writable]) {
            told.append("\(EvRunLoop.current.currentMode == a ? "a" : "not a") \($0.rawValue)")
        }
        let wakeUps = Atomic(0)
        let observer = EvObserver(activities: .afterWaiting) { _, _ in wakeUps.add(1, ordering: .relaxed) }
        let busy = Box(Duration.zero)
        let results = onLoopThread { loop -> [EvRunLoop.RunResult] in
            loop.add(reader, forMode: a)
            loop.add(keepAliveTimer(), forMode: b)
            loop.add(observer, forMode: b)
            _ = loop.run(mode: a, timeout: .seconds(30), returnAfterSourceHandled: true)  // writable
            let nested = nestedRun(loop, outer: a, inner: b, innerTimeout: .milliseconds(50)) { _ in
                close(pair[1])
                wakeUps.store(0, ordering: .relaxed)  // from here on: the sleep to the timeout alone
                busy.set(threadCPUTime())
            }
            busy.set(threadCPUTime() - busy.get)
            let back = loop.run(mode: a, timeout: .seconds(30), returnAfterSourceHandled: true)
            return [nested, back]
        }
        reader.invalidate()
        #expect(results == [.timedOut, .handledSource])
        #expect(wakeUps.load(ordering: .relaxed) == 1)
        #expect(busy.get < .milliseconds(25))
        // Writable before; the stale writable that waited through the nested run; then the hang-up.
        #expect(told.all == ["a 2", "a 2", "a 3"])
    }

    /// Many switches between two modes, readiness of `a`'s source pending all along: `b`'s
    /// runs sleep once each, for their timeout; `a`'s runs take the bytes one by one, none lost.
    @Test func manyModeSwitchesWithReadinessPendingLoseNothingAndDoNotSpin() throws {
        let pipe = DescriptorPipe()
        defer { pipe.close() }
        let a = EvRunLoop.Mode("a"), b = EvRunLoop.Mode("b")
        let bytes = EventLog<UInt8>()
        let source = try EvFileDescriptorSource(fileDescriptor: pipe.readEnd, events: .readable) { _ in
            var byte: UInt8 = 0
            if read(pipe.readEnd, &byte, 1) == 1 { bytes.append(byte) }
        }
        let wakeUps = Atomic(0)
        let observer = EvObserver(activities: .afterWaiting) { _, _ in wakeUps.add(1, ordering: .relaxed) }
        let results = onLoopThread { loop -> [EvRunLoop.RunResult] in
            loop.add(source, forMode: a)
            loop.add(keepAliveTimer(), forMode: b)
            loop.add(observer, forMode: b)
            for byte in UInt8(1)...30 { pipe.write(byte) }
            var results: [EvRunLoop.RunResult] = []
            for round in 0..<20 {
                if round % 3 == 0 { results.append(loop.run(mode: a, timeout: .zero)) }
                results.append(loop.run(mode: b, timeout: .milliseconds(2)))
                results.append(loop.run(mode: a, timeout: .seconds(30), returnAfterSourceHandled: true))
            }
            return results
        }
        source.invalidate()
        // One byte per handling run and per poll of `a` (seven of them), in order.
        #expect(bytes.all == Array(UInt8(1)...27))
        #expect(wakeUps.load(ordering: .relaxed) == 20)
        #expect(results.filter { $0 == .handledSource }.count == 20)
    }

    /// Forty sources on one pipe in `a` (eight past what a descriptor's watch can park): a byte
    /// written while `b` runs does not end `b`'s sleep; back in `a` every source is told, once
    /// each in forty handling runs.
    @Test func moreThanThirtyTwoSourcesOnOneDescriptorParkAndReturn() throws {
        let pipe = DescriptorPipe()
        defer { pipe.close() }
        let a = EvRunLoop.Mode("a"), b = EvRunLoop.Mode("b")
        let told = EventLog<Int>()
        let sources = try (0..<40).map { index in
            try EvFileDescriptorSource(fileDescriptor: pipe.readEnd, events: .readable) { _ in told.append(index) }
        }
        let wakeUps = Atomic(0)
        let observer = EvObserver(activities: .afterWaiting) { _, _ in wakeUps.add(1, ordering: .relaxed) }
        let busy = Box(Duration.zero)
        let results = onLoopThread { loop -> ([EvRunLoop.RunResult], [Int]) in
            for source in sources { loop.add(source, forMode: a) }
            loop.add(keepAliveTimer(), forMode: b)
            loop.add(observer, forMode: b)
            _ = loop.run(mode: a, timeout: .zero)
            let nested = nestedRun(loop, outer: a, inner: b, innerTimeout: .milliseconds(50)) { _ in
                pipe.write()
                wakeUps.store(0, ordering: .relaxed)
                busy.set(threadCPUTime())
            }
            busy.set(threadCPUTime() - busy.get)
            var results = [nested]
            for _ in 0..<40 { results.append(loop.run(mode: a, timeout: .seconds(30), returnAfterSourceHandled: true)) }
            return (results, told.all)
        }
        for source in sources { source.invalidate() }
        #expect(results.0 == [.timedOut] + Array(repeating: .handledSource, count: 40))
        #expect(wakeUps.load(ordering: .relaxed) == 1)
        #expect(busy.get < .milliseconds(25))
        #expect(results.1.sorted() == Array(0..<40))
    }

    /// Threads whose loops end with parked watches leave no epoll set watching the descriptor
    /// behind (the process's file register aside). Counted by the descriptor watched, not by
    /// open descriptors: the other suites open and close theirs meanwhile.
    @Test func loopsEndingWithParkedWatchesLeaveNoWatchBehind() throws {
        let pipe = DescriptorPipe()
        defer { pipe.close() }
        pipe.write()
        @Sendable func setsWatching() -> Int {
            let register = FileRegister.descriptor
            return ((try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []).compactMap(Int32.init).filter {
                $0 != register && ThreadProbe.epollTargets(of: $0).contains(pipe.readEnd)
            }.count
        }
        for _ in 0..<10 {
            let source = try EvFileDescriptorSource(fileDescriptor: pipe.readEnd, events: .readable) { _ in }
            let other = try EvFileDescriptorSource(fileDescriptor: pipe.readEnd, events: [.readable, .writable]) { _ in }
            let watching = onLoopThread { loop -> Int in
                let a = EvRunLoop.Mode("a"), b = EvRunLoop.Mode("b")
                loop.add(source, forMode: a)
                loop.add(other, forMode: b)
                _ = loop.run(mode: a, timeout: .zero)
                _ = loop.run(mode: b, timeout: .zero)  // `source` parked, `other` watched
                loop.add(keepAliveTimer(), forMode: .default)
                _ = loop.run(mode: .default, timeout: .zero)  // both parked
                return setsWatching()
            }
            #expect(watching == 1)
            #expect(setsWatching() == 0)
        }
    }

    /// A regular file's source (always ready) parked while another mode runs: that mode sleeps
    /// to its timeout, once, instead of spinning on the file; back in its own mode the source is
    /// told again.
    @Test func aParkedRegularFileDoesNotSpinAnotherMode() throws {
        let number = reservedDescriptorNumber(44)
        _ = regularFile(at: number)
        defer { close(number) }
        let a = EvRunLoop.Mode("a"), b = EvRunLoop.Mode("b")
        let told = EventLog<EvRunLoop.Mode>()
        let source = try EvFileDescriptorSource(fileDescriptor: number, events: .readable) { _ in told.append(EvRunLoop.current.currentMode ?? .default) }
        let wakeUps = Atomic(0)
        let observer = EvObserver(activities: .afterWaiting) { _, _ in wakeUps.add(1, ordering: .relaxed) }
        let busy = Box(Duration.zero)
        let results = onLoopThread { loop -> [EvRunLoop.RunResult] in
            loop.add(source, forMode: a)
            loop.add(keepAliveTimer(), forMode: b)
            loop.add(observer, forMode: b)
            let first = loop.run(mode: a, timeout: .seconds(30), returnAfterSourceHandled: true)
            let start = threadCPUTime()
            let nested = loop.run(mode: b, timeout: .milliseconds(50))
            busy.set(threadCPUTime() - start)
            let back = loop.run(mode: a, timeout: .seconds(30), returnAfterSourceHandled: true)
            return [first, nested, back]
        }
        source.invalidate()
        #expect(results == [.handledSource, .timedOut, .handledSource])
        #expect(wakeUps.load(ordering: .relaxed) == 1)
        #expect(busy.get < .milliseconds(25))
        #expect(told.all == [a, a])
    }
}

/// A world of random steps: files (pipes, sockets, regular files) replaced under four watched
/// numbers, sources made, moved, invalidated, peers gone, inside nested runs of three modes and
/// between runs. Each file writes its own id, so a handler that reads another file's byte shows.
/// Used on the loop's thread alone (a step on another thread is joined before the next).
private final class ParkWorld: @unchecked Sendable {
    struct Slot { var fileID: UInt8; var writeEnd: Int32; var isRegular: Bool }
    struct Watch {
        let source: EvFileDescriptorSource
        let number: Int32
        let fileID: UInt8
        var errors = 0
        var readable = 0
    }
    var slots: [Int32: Slot] = [:]
    var watches: [Watch] = []
    var violations: [String] = []
    var nextFileID: UInt8 = 1
    var toClose: [Int32] = []
    var reading = true
    var random: SplitMix64
    let modes = [EvRunLoop.Mode("a"), EvRunLoop.Mode("b"), EvRunLoop.Mode("c")]

    init(seed: UInt64) { random = SplitMix64(seed: seed) }

    func openFile(at number: Int32) {
        var fds: [Int32] = [0, 0]
        var isRegular = false
        switch Int.random(in: 0..<10, using: &random) {
        case 0..<5: precondition(pipe(&fds) == 0)
        case 5..<9: precondition(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0)
        default:
            var template = Array("/tmp/runloopkit-park-XXXXXX".utf8CString)
            fds[0] = mkstemp(&template)
            unlink(template)
            var byte = nextFileID
            precondition(write(fds[0], &byte, 1) == 1)
            fds[1] = dup(fds[0])
            isRegular = true
        }
        precondition(dup2(fds[0], number) == number)
        close(fds[0])
        _ = fcntl(number, F_SETFL, fcntl(number, F_GETFL) | O_NONBLOCK)
        _ = fcntl(fds[1], F_SETFL, fcntl(fds[1], F_GETFL) | O_NONBLOCK)
        slots[number] = Slot(fileID: nextFileID, writeEnd: fds[1], isRegular: isRegular)
        toClose.append(fds[1])
        nextFileID = nextFileID == 250 ? 1 : nextFileID + 1
    }

    func told(_ index: Int, _ readiness: EvFileDescriptorSource.Readiness) {
        let watch = watches[index]
        if !watch.source.isValid { violations.append("source \(index) told \(readiness.rawValue) once invalid") }
        if readiness.contains(.error) {
            watches[index].errors += 1
            if watches[index].errors > 1 { violations.append("source \(index) told .error twice") }
            if readiness != .error { violations.append("source \(index) told \(readiness.rawValue) with .error") }
            return
        }
        watches[index].readable += 1
        if slots[watch.number]?.fileID != watch.fileID {
            violations.append("source \(index) for file \(watch.fileID) told \(readiness.rawValue) while \(watch.number) names file \(slots[watch.number]?.fileID ?? 0)")
        }
        guard reading, readiness.contains(.readable) else { return }
        var byte: UInt8 = 0
        let count = slots[watch.number]?.isRegular == true ? pread(watch.number, &byte, 1, 0) : read(watch.number, &byte, 1)
        if count == 1 && byte != watch.fileID {
            violations.append("source \(index) for file \(watch.fileID) read a byte of file \(byte)")
        }
    }

    func makeSource(_ loop: EvRunLoop, at number: Int32) {
        guard let slot = slots[number] else { return }
        let index = watches.count
        let events: EvFileDescriptorSource.Readiness = [.readable, .readable, .writable, [.readable, .writable]].randomElement(using: &random)!
        let source = try! EvFileDescriptorSource(fileDescriptor: number, events: events) { [unowned self] in told(index, $0) }
        watches.append(Watch(source: source, number: number, fileID: slot.fileID))
        loop.add(source, forMode: modes.randomElement(using: &random)!)
    }

    /// One random step; `depth` limits nested runs.
    func step(_ loop: EvRunLoop, numbers: [Int32], depth: Int) {
        let number = numbers.randomElement(using: &random)!
        switch Int.random(in: 0..<14, using: &random) {
        case 0, 1:
            guard let slot = slots[number], !slot.isRegular else { return }
            var byte = slot.fileID
            _ = write(slot.writeEnd, &byte, 1)
        case 2:
            if Bool.random(using: &random) { toClose.append(dup(number)) }  // the old file lives on
            openFile(at: number)
        case 3, 4:
            makeSource(loop, at: number)
        case 5:
            watches.randomElement(using: &random)?.source.invalidate()
        case 6:
            guard let watch = watches.randomElement(using: &random) else { return }
            let thread = spawnThread { watch.source.invalidate() }
            pthread_join(thread, nil)
        case 7:
            if let watch = watches.randomElement(using: &random) { loop.remove(watch.source, forMode: modes.randomElement(using: &random)!) }
        case 8:
            if let watch = watches.randomElement(using: &random) { loop.add(watch.source, forMode: modes.randomElement(using: &random)!) }
        case 9:
            // The peer goes: a hang-up (end of file), for good.
            guard let slot = slots[number], !slot.isRegular, Int.random(in: 0..<4, using: &random) == 0 else { return }
            _ = shutdown(slot.writeEnd, Int32(SHUT_RDWR))
            let null = open("/dev/null", O_RDONLY)
            _ = dup2(null, slot.writeEnd)
            close(null)
        case 10, 11:
            _ = loop.run(mode: modes.randomElement(using: &random)!, timeout: .zero)
        case 12 where Int.random(in: 0..<20, using: &random) == 0:
            _ = loop.run(mode: modes.randomElement(using: &random)!, timeout: .microseconds(200))
        default:
            guard depth < 3 else { return }
            let mode = modes.randomElement(using: &random)!
            let steps = Int.random(in: 1...6, using: &random)
            loop.add(EvTimer(after: .zero) { [unowned self] _ in
                for _ in 0..<steps { step(loop, numbers: numbers, depth: depth + 1) }
            }, forMode: mode)
            _ = loop.run(mode: mode, timeout: .zero)
        }
    }
}

extension ParkedDescriptorAdversarialTests {
    /// Random steps, then every mode run: no source is told readiness while its number names
    /// another file, or `.error` twice or with readiness; every source of a replaced file still
    /// in a mode was told its error; every source watching its file in a mode is told its data.
    /// Serialized: the cases share the four numbers.
    @Test(.serialized, arguments: 1...3) func randomReplacementsMovesAndNestedRunsTellNoSourceAnotherFilesReadiness(seed: Int) {
        let world = ParkWorld(seed: UInt64(seed))
        let numbers = (45...48).map { reservedDescriptorNumber(Int32($0)) }
        onLoopThread { loop in
            for mode in world.modes { loop.add(keepAliveTimer(), forMode: mode) }
            for number in numbers { world.openFile(at: number) }
            for number in numbers { world.makeSource(loop, at: number) }
            for _ in 0..<300 { world.step(loop, numbers: numbers, depth: 0) }
            // Every mode runs: what waited is told, and every source of a replaced file is told its error.
            world.reading = false
            for _ in 0..<3 { for mode in world.modes { for _ in 0..<(world.watches.count + 2) { _ = loop.run(mode: mode, timeout: .zero) } } }
            for (index, watch) in world.watches.enumerated() where watch.source.isValid && world.slots[watch.number]?.fileID != watch.fileID {
                if world.modes.contains(where: { loop.contains(watch.source, forMode: $0) }) {
                    world.violations.append("source \(index) of a replaced file still valid, in a mode, errors \(watch.errors)")
                }
            }
            // Each source watching its file, in a mode, is told once the file has data.
            for number in numbers {
                var byte = world.slots[number]!.fileID
                _ = write(world.slots[number]!.writeEnd, &byte, 1)
            }
            let before = world.watches.map(\.readable)
            for _ in 0..<2 { for mode in world.modes { for _ in 0..<(world.watches.count + 2) { _ = loop.run(mode: mode, timeout: .zero) } } }
            for (index, watch) in world.watches.enumerated() where watch.source.isValid && watch.source.events.contains(.readable) && world.slots[watch.number]?.fileID == watch.fileID {
                if world.modes.contains(where: { loop.contains(watch.source, forMode: $0) }) && watch.readable == before[index] {
                    world.violations.append("source \(index) watching its file in a mode was not told its data")
                }
            }
            for watch in world.watches { watch.source.invalidate() }
        }
        for descriptor in world.toClose { close(descriptor) }
        for number in numbers { close(number) }
        #expect(world.violations == [])
    }
}
