import Foundation
import RunLoopKit
import Testing
import TestSupport

@Suite struct MessagePortTests {
    @Test func twoSendersTenThousandEachArriveInOrderWithoutLossOrDuplicates() {
        let perSender = 10_000
        let received = EventLog<(sender: Int, index: Int)>()
        let port = EvMessagePort<(sender: Int, index: Int)> { received.append($0) }
        let done = Latch()
        let result = onLoopThread(timeout: 120) { loop -> EvRunLoop.RunResult in
            let stopper = EvMessagePort<Void> { loop.stop() }
            loop.add(port, forMode: .default)
            loop.add(stopper, forMode: .default)
            let senders = (0..<2).map { sender in
                Thread {
                    for index in 0..<perSender { try! port.send((sender, index)) }
                    done.open()
                }
            }
            senders.forEach { $0.start() }
            let finisher = Thread {
                done.wait(); done.wait()
                while port.pendingCount > 0 { sched_yield() }
                try! stopper.send(())
            }
            finisher.start()
            return loop.run(mode: .default)
        }
        #expect(result == .stopped)
        let all = received.all
        #expect(all.count == 2 * perSender)
        for sender in 0..<2 {
            #expect(all.filter { $0.sender == sender }.map(\.index) == Array(0..<perSender))
        }
    }

    @Test func R38_messagesWaitForTheirModeAndArriveOnePerIteration() {
        let received = EventLog<Int>()
        let port = EvMessagePort<Int> { received.append($0) }
        let counts = onLoopThread { loop -> [Int] in
            let tracking = EvRunLoop.Mode("tracking")
            try! port.send(1)  // before the port is in any loop: it waits
            loop.add(port, forMode: .default)
            loop.add(keepAliveTimer(), forMode: tracking)
            try! port.send(2)
            _ = loop.run(mode: tracking, timeout: .zero)
            let whileTracking = received.count
            _ = loop.run(mode: .default, timeout: .seconds(30), returnAfterSourceHandled: true)
            let afterOne = received.count
            _ = loop.run(mode: .default, timeout: .seconds(30), returnAfterSourceHandled: true)
            return [whileTracking, afterOne, received.count]
        }
        #expect(counts == [0, 1, 2])  // one message per iteration (R38)
        #expect(received.all == [1, 2])
    }

    /// R22, R37: a message for a port none of whose modes runs waits, and does not end the
    /// running mode's sleep (CF waits on the running mode's ports only). Before, every send
    /// woke the loop for a pass with nothing to do: here the run woke twice, not once.
    @Test func R37_aMessageForAPortOfAnotherModeDoesNotWakeTheLoop() {
        let received = EventLog<Int>()
        let port = EvMessagePort<Int> { received.append($0) }
        let (wakeUps, handledInItsMode) = onLoopThread { loop -> (Int, [Int]) in
            let tracking = EvRunLoop.Mode("tracking")
            loop.add(port, forMode: .default)
            loop.add(keepAliveTimer(), forMode: tracking)
            let afterWaiting = EventLog<EvRunLoop.Activity>()
            loop.add(activityRecorder(afterWaiting, activities: .afterWaiting), forMode: tracking)
            let sender = spawnThread {
                if spinUntil({ loop.isWaiting }) { try? port.send(1) }
            }
            _ = loop.run(mode: tracking, timeout: .milliseconds(200))  // its deadline ends the one sleep
            pthread_join(sender, nil)
            _ = loop.run(mode: .default, timeout: .zero)
            return (afterWaiting.count, received.all)
        }
        #expect(wakeUps == 1)
        #expect(handledInItsMode == [1])
    }

    /// R37: a descriptor source added from another thread to a mode that is not running is
    /// watched when that mode runs; adding it does not end the running mode's sleep. Before,
    /// every such add woke the loop for a pass with nothing to do (a server handing connections
    /// to a loop's private mode): here the run woke twice, not once.
    @Test func R37_aDescriptorSourceAddedFromAnotherThreadToAModeNotRunningDoesNotWakeTheLoop() throws {
        let (pipe, source, handled) = try readableDescriptorSource()
        defer { pipe.close() }
        let (wakeUps, inItsMode) = onLoopThread { loop -> (Int, EvRunLoop.RunResult) in
            let tracking = EvRunLoop.Mode("tracking")
            loop.add(keepAliveTimer(), forMode: tracking)
            let afterWaiting = EventLog<EvRunLoop.Activity>()
            loop.add(activityRecorder(afterWaiting, activities: .afterWaiting), forMode: tracking)
            let adder = spawnThread {
                if spinUntil({ loop.isWaiting }) { loop.add(source, forMode: .default) }
            }
            _ = loop.run(mode: tracking, timeout: .milliseconds(200))  // its deadline ends the one sleep
            pthread_join(adder, nil)
            let inItsMode = loop.run(mode: .default, timeout: .seconds(30), returnAfterSourceHandled: true)
            source.invalidate()
            return (afterWaiting.count, inItsMode)
        }
        #expect(wakeUps == 1)
        #expect(inItsMode == .handledSource)
        #expect(handled.all == [.readable])
    }

    /// R37, as above for a mode made common from another thread: the common descriptor source
    /// joins that mode, which is not running, and the running mode sleeps on; the source is served
    /// once its new mode runs. Before, making the mode common woke the loop for nothing.
    @Test func R37_aModeMadeCommonFromAnotherThreadWhileAnotherRunsDoesNotWakeTheLoop() throws {
        let (pipe, source, handled) = try readableDescriptorSource()
        defer { pipe.close() }
        let other = EvRunLoop.Mode("other")
        let (wakeUps, inItsMode) = onLoopThread { loop -> (Int, EvRunLoop.RunResult) in
            let tracking = EvRunLoop.Mode("tracking")
            loop.add(source, forMode: .common)
            loop.add(keepAliveTimer(), forMode: tracking)
            let afterWaiting = EventLog<EvRunLoop.Activity>()
            loop.add(activityRecorder(afterWaiting, activities: .afterWaiting), forMode: tracking)
            let maker = spawnThread {
                if spinUntil({ loop.isWaiting }) { loop.addCommonMode(other) }
            }
            _ = loop.run(mode: tracking, timeout: .milliseconds(200))  // its deadline ends the one sleep
            pthread_join(maker, nil)
            loop.remove(source, forMode: .default)  // served in the new common mode, not before it
            let inItsMode = loop.run(mode: other, timeout: .seconds(30), returnAfterSourceHandled: true)
            source.invalidate()
            return (afterWaiting.count, inItsMode)
        }
        #expect(wakeUps == 1)
        #expect(inItsMode == .handledSource)
        #expect(handled.all == [.readable])
    }

    @Test func R38_aSourceReadyBeforeItJoinsAModeTakesItsTurnThere() {
        let received = EventLog<String>()
        let early = EvMessagePort<Int> { _ in received.append("early") }
        let late = EvMessagePort<Int> { _ in received.append("late") }
        let both = EvMessagePort<Int> { _ in received.append("both") }
        let common = EvMessagePort<Int> { _ in received.append("common") }
        let handled = onLoopThread { loop -> [Bool] in
            let tracking = EvRunLoop.Mode("tracking")
            loop.add(early, forMode: tracking)
            loop.add(keepAliveTimer(), forMode: tracking)
            try! early.send(1)  // ready first, in a mode that does not run
            loop.add(late, forMode: .default)
            try! late.send(1)
            loop.add(early, forMode: .default)  // joins while ready: it was ready longest
            loop.add(both, forMode: .default)
            loop.add(both, forMode: tracking)
            try! both.send(1)
            loop.add(common, forMode: .common)
            loop.remove(common, forMode: .default)  // common, in no mode
            try! common.send(1)
            loop.addCommonMode(tracking)  // it joins tracking, ready since before `both`' turn ends
            var handled: [Bool] = []
            for _ in 0..<2 { handled.append(loop.run(mode: .default, timeout: .zero, returnAfterSourceHandled: true) == .handledSource) }
            handled.append(loop.run(mode: tracking, timeout: .zero, returnAfterSourceHandled: true) == .handledSource)
            handled.append(loop.run(mode: tracking, timeout: .zero, returnAfterSourceHandled: true) == .handledSource)
            // `both` was handled in tracking: its readiness is gone from the default mode too.
            handled.append(loop.run(mode: .default, timeout: .zero, returnAfterSourceHandled: true) == .handledSource)
            return handled
        }
        #expect(received.all == ["early", "late", "both", "common"])
        #expect(handled == [true, true, true, true, false])
    }

    @Test func R16_anEmptyPortKeepsItsModeAlive() {
        let port = EvMessagePort<Int> { _ in }
        let result = onLoopThread { loop in
            loop.add(port, forMode: .default)
            return loop.run(mode: .default, timeout: .zero)
        }
        #expect(result == .timedOut)
    }

    @Test func sendingAfterInvalidateThrows() {
        let invalidated = EvMessagePort<Int> { _ in }
        invalidated.invalidate()
        #expect(!invalidated.isValid)
        #expect(throws: EvSourceError.portInvalidated) { try invalidated.send(1) }
    }
}

@Suite struct SignalSourceTests {
    @Test func sigusr1IsDeliveredOnTheLoopsThread() throws {
        let deliveredOn = Box<pthread_t?>(nil)
        let (loopThread, result) = onLoopThread { loop -> (pthread_t, EvRunLoop.RunResult) in
            let source = try! EvSignalSource(signal: SIGUSR1) {
                deliveredOn.set(pthread_self())
                EvRunLoop.current.stop()
            }
            loop.add(source, forMode: .default)
            // Sent from inside the run, once the signal source is watched.
            let trigger = EvSource { kill(getpid(), SIGUSR1) }
            loop.add(trigger, forMode: .default)
            trigger.signal()
            let result = loop.run(mode: .default, timeout: .seconds(30))
            source.invalidate()
            return (pthread_self(), result)
        }
        #expect(result == .stopped)
        #expect(deliveredOn.get.map { pthread_equal($0, loopThread) != 0 } == true)
    }

    @Test func outOfRangeSignalsThrow() {
        for bad: Int32 in [0, -1, 65, SIGKILL, SIGSTOP] {
            #expect(throws: EvSourceError.invalidSignal(bad)) { try EvSignalSource(signal: bad) {} }
        }
    }

    /// A handler that returns from a fault runs the faulting instruction again, for ever: a
    /// source for these would turn a crash into a hang.
    @Test func theSignalsAFaultRaisesAreRefused() {
        for fault: Int32 in [SIGILL, SIGFPE, SIGSEGV, SIGBUS] {
            #expect(throws: EvSourceError.invalidSignal(fault)) { try EvSignalSource(signal: fault) {} }
        }
    }
}

@Suite struct Version1CommonModeTests {
    /// R12, as for the other kinds: adding a common version-1 source to `.common` again makes it
    /// rejoin the common modes it was removed from.
    @Test func R12_addingACommonPortToCommonAgainRejoinsTheModesItLeft() {
        let port = EvMessagePort<Int> { _ in }
        let membership = onLoopThread { loop -> [Bool] in
            loop.add(port, forMode: .common)
            loop.remove(port, forMode: .default)
            let afterRemove = loop.contains(port, forMode: .default)
            loop.add(port, forMode: .common)
            let afterReAdd = loop.contains(port, forMode: .default)
            port.invalidate()
            return [afterRemove, afterReAdd]
        }
        #expect(membership == [false, true])
    }

    /// R13 for version-1 sources: a mode made common later gets the common ones, as timers,
    /// observers and version-0 sources (found by the conformance suite).
    @Test func R13_aModeMadeCommonLaterGetsTheCommonVersion1Sources() {
        let port = EvMessagePort<Int> { _ in }
        let membership = onLoopThread { loop -> [Bool] in
            let tracking = EvRunLoop.Mode("tracking")
            loop.add(port, forMode: .common)
            let before = loop.contains(port, forMode: tracking)
            loop.addCommonMode(tracking)
            let after = loop.contains(port, forMode: tracking)
            port.invalidate()
            return [before, after]
        }
        #expect(membership == [false, true])
    }

    /// R13 from another thread while the loop sleeps in the mode being made common: the loop wakes
    /// and watches the common descriptor source from its next wait on.
    @Test func R13_aModeMadeCommonFromAnotherThreadWatchesTheCommonDescriptorsAtOnce() throws {
        var ends: [Int32] = [0, 0]
        #expect(pipe(&ends) == 0)
        let (readEnd, writeEnd) = (ends[0], ends[1])
        defer { close(readEnd); close(writeEnd) }
        let source = try EvFileDescriptorSource(fileDescriptor: readEnd, events: .readable) { _ in
            var buffer = [UInt8](repeating: 0, count: 8)
            _ = read(readEnd, &buffer, 8)
        }
        let helper = Box<pthread_t?>(nil)
        let result = onLoopThread { loop -> EvRunLoop.RunResult in
            let tracking = EvRunLoop.Mode("tracking")
            loop.add(source, forMode: .common)
            loop.add(keepAliveTimer(), forMode: tracking)
            loop.add(once(.beforeWaiting) {
                helper.set(spawnThread {
                    loop.addCommonMode(tracking)
                    var byte: UInt8 = 1
                    _ = write(writeEnd, &byte, 1)
                })
            }, forMode: tracking)
            // Ten seconds are a safety net: without the wake-up the loop would sleep them out.
            let result = loop.run(mode: tracking, timeout: .seconds(10), returnAfterSourceHandled: true)
            source.invalidate()
            return result
        }
        if let thread = helper.get { pthread_join(thread, nil) }
        #expect(result == .handledSource)
    }
}

/// A port's messages and the loop's references to it.
@Suite struct MessagePortNestingTests {
    /// A run nested in a port's handler takes the port's next message, as CF's port, which stays
    /// in its port set, is received by a nested run (HowOneRunGoes: a nested run skips only a
    /// running timer and a running observer). It waited until the handler returned.
    @Test func aRunNestedInAPortsHandlerTakesItsNextMessage() {
        let log = EventLog<String>()
        let nested = Box<EvRunLoop.RunResult?>(nil)
        let port = EvMessagePort<Int> { message in
            log.append("\(message) begins")
            if message == 1 { nested.set(EvRunLoop.current.run(mode: .default, timeout: .seconds(30), returnAfterSourceHandled: true)) }
            log.append("\(message) ends")
        }
        try! port.send(1)
        try! port.send(2)
        _ = onLoopThread { loop -> EvRunLoop.RunResult in
            loop.add(port, forMode: .default)
            return loop.run(mode: .default, timeout: .seconds(30), returnAfterSourceHandled: true)
        }
        #expect(nested.get == .handledSource)
        #expect(log.all == ["1 begins", "2 begins", "2 ends", "1 ends"])
    }

    /// A source ready in two modes and handled in one leaves an out-of-date entry in the
    /// other's ready queue; once it is invalidated and dropped, the loop keeps no reference to
    /// it, so its handler's captures go.
    @Test func anInvalidatedPortReadyInTwoModesIsNotKeptByTheLoop() {
        final class Captured: Sendable {}
        let released = onLoopThread { loop -> Bool in
            let tracking = EvRunLoop.Mode("tracking")
            weak var captured: Captured?
            do {
                let object = Captured()
                captured = object
                let port = EvMessagePort<Int> { _ in _ = object }
                loop.add(port, forMode: .default)
                loop.add(port, forMode: tracking)
                try! port.send(1)
                _ = loop.run(mode: .default, timeout: .seconds(30), returnAfterSourceHandled: true)
                port.invalidate()
            }
            return captured == nil
        }
        #expect(released)
    }
}

/// A pipe with a byte to read, and a source for its read end that logs what it is told.
private func readableDescriptorSource() throws -> (DescriptorPipe, EvFileDescriptorSource, EventLog<EvFileDescriptorSource.Readiness>) {
    let pipe = DescriptorPipe()
    pipe.write()
    let handled = EventLog<EvFileDescriptorSource.Readiness>()
    let source = try EvFileDescriptorSource(fileDescriptor: pipe.readEnd, events: .readable) { handled.append($0) }
    return (pipe, source, handled)
}
