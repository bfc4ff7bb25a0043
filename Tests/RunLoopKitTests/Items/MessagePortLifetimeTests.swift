import Foundation
import RunLoopKit
import Synchronization
import Testing
import TestSupport

/// A port keeps the messages it accepted until they are handled — in its next loop if its loop's
/// thread exits first (R4) — or it is invalidated; and it pushes back on a sender that outruns
/// the loop (`EvSourceError.portFull`).
@Suite struct MessagePortLifetimeTests {
    @Test func messagesAcceptedWhileTheLoopsThreadExitsAreHandledInThePortsNextLoop() {
        let total = 1_000
        let received = EventLog<Int>()
        let port = EvMessagePort<Int> { received.append($0) }
        let exit = Latch()
        // `finished` opens when the thread's body returns, before the thread's exit tears the loop
        // down (R4); the port is free for another loop only after that, which this source's
        // cancel callout (made once every item has left the dying loop) tells.
        let tornDown = Latch()
        let (_, finished) = startLoopThread { loop in
            loop.add(EvSource(cancel: { _, _ in tornDown.open() }) {}, forMode: .default)
            loop.add(port, forMode: .default)
            while !exit.wait(timeout: 0) { loop.run(mode: .default, timeout: .microseconds(100)) }
        }
        var refused: [EvSourceError] = []
        for message in 0..<total {
            if message == total / 10 { exit.open() }  // the rest races the thread's exit
            do { try port.send(message) } catch { refused.append(error) }
        }
        #expect(finished.wait())
        #expect(tornDown.wait())
        #expect(refused.isEmpty, "send refused \(refused.count) messages: \(refused.first.map { "\($0)" } ?? "")")
        #expect(port.isValid)

        // The port's next loop handles every message the first one did not, in order.
        let accepted = total - refused.count
        onLoopThread { loop in
            loop.add(port, forMode: .default)
            while received.count < accepted {
                guard loop.run(mode: .default, timeout: .seconds(10), returnAfterSourceHandled: true) == .handledSource else { break }
            }
        }
        let all = received.all
        #expect(all.elementsEqual(0..<total), "\(all.count) of \(total) messages handled, or out of order, across the loop's exit")
    }

    @Test func aPortWhoseLoopsThreadExitedStaysValidAndAcceptsMessagesForItsNextLoop() throws {
        let received = EventLog<Int>()
        let port = EvMessagePort<Int> { received.append($0) }
        onLoopThread { loop in
            loop.add(port, forMode: .default)
            try? port.send(1)  // never handled here: the loop does not run
        }
        #expect(port.isValid)
        #expect(port.pendingCount == 1)
        try port.send(2)
        let result = onLoopThread { loop -> EvRunLoop.RunResult in
            loop.add(port, forMode: .default)
            loop.run(mode: .default, timeout: .seconds(10), returnAfterSourceHandled: true)
            return loop.run(mode: .default, timeout: .seconds(10), returnAfterSourceHandled: true)
        }
        #expect(result == .handledSource)
        #expect(received.all == [1, 2])
        port.invalidate()
        #expect(!port.isValid)
        #expect(throws: EvSourceError.portInvalidated) { try port.send(3) }
    }

    @Test func aFullPortRefusesMessagesUntilTheLoopHandlesOne() throws {
        let received = EventLog<Int>()
        let port = EvMessagePort<Int>(capacity: 3) { received.append($0) }
        #expect(port.capacity == 3)
        for message in 0..<3 { try port.send(message) }
        #expect(throws: EvSourceError.portFull(capacity: 3)) { try port.send(3) }
        #expect(port.pendingCount == 3)
        let afterOne = onLoopThread { loop -> Int in
            loop.add(port, forMode: .default)
            loop.run(mode: .default, timeout: .seconds(10), returnAfterSourceHandled: true)  // R38: one message
            return port.pendingCount
        }
        #expect(afterOne == 2)
        try port.send(3)
        #expect(received.all == [0])
        #expect(port.pendingCount == 3)
        #expect(EvMessagePort<Int> { _ in }.capacity == EvMessagePort<Int>.defaultCapacity)
    }
}
