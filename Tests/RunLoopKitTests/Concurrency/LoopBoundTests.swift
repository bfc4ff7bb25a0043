import Foundation
import RunLoopKit
import Testing
import TestSupport

/// Per-connection state as a port has it: a class, not `Sendable`.
private final class Peer {
    var bytesSeen = 0
    var log: [String] = []
}

private func message(_ result: ExitTest.Result?) -> String {
    String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
}

/// Loop-confined state without locks: `isCurrent`, `EvLoopBound`, `EvLoopBoundBox` and the
/// handler forms made on the loop's own thread.
@Suite struct LoopBoundTests {
    @Test func isCurrentIsTrueOnlyOnTheLoopsOwnThread() {
        let (loop, finished) = startLoopThread { loop in
            loop.add(keepAliveTimer(), forMode: .default)
            loop.add(once(.entry) { precondition(loop.isCurrent) }, forMode: .default)
            loop.run(mode: .default, timeout: .seconds(30))
        }
        #expect(!loop.isCurrent)
        #expect(onLoopThread { _ in loop.isCurrent } == false)
        #expect(onLoopThread { $0.isCurrent })
        // A stop sent before the run starts is dropped (C52, R28): stop the run once it waits.
        #expect(spinUntil { loop.isWaiting })
        loop.stop()
        #expect(finished.wait())
    }

    /// R3: asking whether a loop is current costs the asking thread nothing — no loop, no
    /// descriptor — where `EvRunLoop.current === loop` made a loop on it.
    @Test func isCurrentMakesNoLoopOnTheAskingThread() async {
        await #expect(processExitsWith: .success) {
            let (loop, _) = startLoopThread { _ in Latch().wait() }
            DescriptorSnapshot.settleLibdispatch()
            let before = DescriptorSnapshot.take()
            let opened = Box<[Int32: String]?>(nil)
            let asker = JoinableTestThread {
                precondition(!loop.isCurrent)
                opened.set(DescriptorSnapshot.take().opened(since: before))
            }
            #expect(asker.join())
            #expect(opened.get == [:], "isCurrent opened descriptors: \(opened.get ?? [:])")
        }
    }

    @Test func preconditionIsCurrentStopsOffTheLoopsThread() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let (loop, _) = startLoopThread { _ in Latch().wait() }
            loop.preconditionIsCurrent()
        }
        #expect(message(result).contains("EvRunLoop.preconditionIsCurrent(): called off the loop's thread"))
    }

    /// The first compile of a port: a plain `var` and a non-`Sendable` class captured by handlers
    /// made on the loop's thread — no Mutex, no `@Sendable`.
    @Test func handlersMadeOnTheLoopsThreadCaptureAVarAndANonSendableClass() {
        let outcome = onLoopThread { loop -> [String] in
            var ticks = 0
            let connection = Peer()
            let source = loop.addSource {
                connection.log.append("source after \(ticks) ticks")
                loop.stop()
            }
            loop.addObserver(activities: .entry) { _, _ in connection.log.append("entry") }
            loop.addTimer(after: .milliseconds(1), interval: .milliseconds(1)) { timer in
                ticks += 1
                connection.bytesSeen += 100
                guard ticks == 3 else { return }
                timer.invalidate()
                source.signal()
            }
            let result = loop.run(mode: .default, timeout: .seconds(30))
            source.invalidate()
            return connection.log + ["\(ticks) ticks, \(connection.bytesSeen) bytes, \(result)"]
        }
        #expect(outcome == ["entry", "source after 3 ticks", "3 ticks, 300 bytes, stopped"])
    }

    @Test func aLoopBoundTimerAddedToAnotherLoopStopsWhenItFiresThere() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let timer = onLoopThread { loop in loop.addTimer(after: .zero) { _ in } }
            onLoopThread { other in
                other.add(timer, forMode: .default)
                other.run(mode: .default, timeout: .seconds(10))
            }
        }
        #expect(message(result).contains("EvRunLoop.addTimer(after:interval:tolerance:forMode:_:): its handler is bound to the loop it was added on"))
    }

    @Test func addingALoopBoundItemOffTheLoopsThreadStops() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let (loop, _) = startLoopThread { _ in Latch().wait() }
            var count = 0
            loop.addTimer(after: .seconds(1)) { _ in count += 1 }
        }
        #expect(message(result).contains("EvRunLoop.addTimer(after:interval:tolerance:forMode:_:): a timer with a loop-bound handler can be added only on the loop's own thread"))
    }

    /// A connection's state in a plain class, read and changed by its descriptor source's handler
    /// made on the loop's thread: no box, no lock, no `@Sendable`.
    @Test func aDescriptorSourceMadeOnTheLoopsThreadKeepsItsConnectionsStateInPlainVariables() throws {
        var ends: [Int32] = [0, 0]
        try #require(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &ends) == 0)
        let (near, far) = (ends[0], ends[1])
        defer { close(near); close(far) }
        let outcome = onLoopThread { loop -> Result<[String], EvSourceError> in
            Result { () throws(EvSourceError) -> [String] in
                let connection = Peer()
                var reads = 0
                let source = try loop.addFileDescriptorSource(fileDescriptor: near, events: .readable) { readiness in
                    reads += 1
                    var buffer = [UInt8](repeating: 0, count: 16)
                    let count = read(near, &buffer, 16)
                    connection.bytesSeen += max(count, 0)
                    connection.log.append("\(readiness == .readable ? "readable" : "\(readiness)") \(count)")
                    if connection.bytesSeen >= 5 { loop.stop() }
                    // The peer answers the first read with two more bytes.
                    var more: [UInt8] = [4, 5]
                    if reads == 1 { _ = write(far, &more, 2) }
                }
                let added = loop.contains(source, forMode: .default)
                loop.addTimer(after: .milliseconds(1)) { _ in
                    var bytes: [UInt8] = [1, 2, 3]
                    _ = write(far, &bytes, 3)
                }
                let result = loop.run(mode: .default, timeout: .seconds(30))
                source.invalidate()
                return connection.log + ["added \(added), \(reads) reads, \(connection.bytesSeen) bytes, \(result)"]
            }
        }
        #expect(try outcome.get() == ["readable 3", "readable 2", "added true, 2 reads, 5 bytes, stopped"])
    }

    @Test func aLoopBoundDescriptorSourceOnABadDescriptorThrows() {
        let outcome = onLoopThread { loop -> EvSourceError? in
            do throws(EvSourceError) {
                try loop.addFileDescriptorSource(fileDescriptor: -1, events: .readable) { _ in }
                return nil
            } catch {
                return error
            }
        }
        #expect(outcome == .badFileDescriptor(-1))
    }

    @Test func addingALoopBoundDescriptorSourceOffTheLoopsThreadStops() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let (loop, _) = startLoopThread { _ in Latch().wait() }
            var ends: [Int32] = [0, 0]
            precondition(pipe(&ends) == 0)
            var count = 0
            _ = try? loop.addFileDescriptorSource(fileDescriptor: ends[0], events: .readable) { _ in count += 1 }
        }
        #expect(message(result).contains(
            "EvRunLoop.addFileDescriptorSource(fileDescriptor:events:forMode:_:): a source with a loop-bound handler can be added only on the loop's own thread"))
    }

    /// The box is `Sendable` with a non-`Sendable` value: it travels to another thread in a
    /// `@Sendable` closure, and work that thread sends back to the loop opens it.
    @Test func aBoxTravelsAcrossThreadsAndOpensOnTheLoopsThread() throws {
        let (loop, finished) = startLoopThread { loop in
            loop.add(keepAliveTimer(), forMode: .default)
            loop.run(mode: .default, timeout: .seconds(30))
        }
        let made = Latch()
        let box = Box<EvLoopBoundBox<Peer>?>(nil)
        try loop.execute {
            box.set(EvLoopBoundBox(Peer(), loop: loop))
            made.open()
        }
        #expect(made.wait())
        let connection = try #require(box.get)
        let counted = Latch()
        let sender = Thread {
            try? loop.execute {
                connection.value.bytesSeen += 7
                connection.withValue { $0.log.append("on loop: \(loop.isCurrent)") }
                counted.open()
            }
        }
        sender.start()
        #expect(counted.wait())
        let seen = try loop.performAndWait { [connection] in "\(connection.value.bytesSeen) \(connection.value.log)" }
        #expect(seen == #"7 ["on loop: true"]"#)
        loop.stop()
        #expect(finished.wait())
    }

    @Test func boxesMadeOffTheLoopsThreadStartEmptyOrTakeASentValue() throws {
        let (loop, finished) = startLoopThread { loop in
            loop.add(keepAliveTimer(), forMode: .default)
            loop.run(mode: .default, timeout: .seconds(30))
        }
        let empty = EvLoopBoundBox<Peer?>.makeEmptyBox(valueType: Peer.self, loop: loop)
        let sent = EvLoopBoundBox.makeBoxSendingValue(Peer(), loop: loop)
        let seen = try loop.performAndWait {
            empty.value = Peer()
            empty.value?.bytesSeen = 1
            sent.value.bytesSeen = 2
            return (empty.value?.bytesSeen ?? 0) + sent.value.bytesSeen
        }
        #expect(seen == 3)
        loop.stop()
        #expect(finished.wait())
    }

    @Test func aBoxReadOffItsLoopsThreadStops() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let (loop, _) = startLoopThread { _ in Latch().wait() }
            let box = EvLoopBoundBox<Int?>.makeEmptyBox(valueType: Int.self, loop: loop)
            _ = box.value
        }
        #expect(message(result).contains("EvLoopBoundBox.value: the value is read only on the loop's own thread"))
    }

    @Test func aLoopBoundValueIsAValueOnItsLoopsThread() {
        let values = onLoopThread { loop -> [Int] in
            var first = EvLoopBound([1], loop: loop)
            var second = first
            first.value.append(2)
            second.value.append(3)
            return first.value + second.value
        }
        #expect(values == [1, 2, 1, 3])
    }

    @Test func aLoopBoundValueWrittenOffItsLoopsThreadStops() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let bound = onLoopThread { loop in EvLoopBound(0, loop: loop) }
            var copy = bound
            copy.value += 1
        }
        #expect(message(result).contains("EvLoopBound.value: the value is read only on the loop's own thread")
            || message(result).contains("EvLoopBound.value: the value is written only on the loop's own thread"))
    }

    /// R4: a source's cancel callout at its loop's teardown runs on the exiting thread, where the
    /// loop is still current: loop-bound state is reachable there, and `EvRunLoop.current` is that
    /// (dead) loop, not a new one. Before, the thread's loop slot was cleared first: `isCurrent`
    /// was false, a box's value stopped the program, and `current` made a loop on the way out.
    @Test func aCancelCalloutAtTheLoopsTeardownFindsItCurrent() {
        let seen = Box<(isCurrent: Bool, sameLoop: Bool, count: Int)?>(nil)
        let thread = spawnThread {
            let loop = EvRunLoop.current
            let connections = EvLoopBoundBox(0, loop: loop)
            connections.value += 1
            loop.add(EvSource(cancel: { loop, _ in
                guard loop.isCurrent else { return seen.set((false, false, -1)) }
                connections.value -= 1
                seen.set((true, EvRunLoop.current === loop, connections.value))
            }) {}, forMode: .default)
        }
        pthread_join(thread, nil)
        #expect(seen.get?.isCurrent == true, "the loop was not current in its cancel callout at teardown")
        #expect(seen.get?.sameLoop == true, "EvRunLoop.current was another loop")
        #expect(seen.get?.count == 0)
    }
}
