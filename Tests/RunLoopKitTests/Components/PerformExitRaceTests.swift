import Foundation
import RunLoopKit
import Synchronization
import Testing
import TestSupport

/// Perform requests racing the exit of the loop's thread (R4): a request is
/// never accepted and then silently dropped — it runs, or the caller gets
/// ``EvPerformError/loopExited``, or (a delayed request) its state says the loop exited.
@Suite struct PerformExitRaceTests {
    /// A thread whose loop runs (kept alive by a port) until `exit` opens, then exits.
    private func loopThreadExitingOnSignal() -> (loop: EvRunLoop, exit: Latch, thread: pthread_t) {
        let loop = Box<EvRunLoop?>(nil)
        let ready = Latch()
        let exit = Latch()
        let thread = spawnThread(named: "exit-race") {
            let own = EvRunLoop.current
            own.add(EvMessagePort<Int> { _ in }, forMode: .default)
            loop.set(own)
            ready.open()
            while !exit.wait(timeout: 0) { own.run(mode: .default, timeout: .microseconds(200)) }
        }
        precondition(ready.wait(), "loop thread did not start")
        return (loop.get!, exit, thread)
    }

    @Test func delayedPerformsRacingTheThreadExitRunOrSayTheLoopExited() {
        var stranded = 0
        var accepted = 0
        for _ in 0..<200 {
            let (loop, exit, thread) = loopThreadExitingOnSignal()
            var requests: [EvDelayedPerform] = []
            exit.open()
            // Keep asking until the loop refuses: the requests made meanwhile race the exit.
            while let request = try? loop.perform(after: .zero, inModes: [.default], {}) { requests.append(request) }
            pthread_join(thread, nil)
            accepted += requests.count
            stranded += requests.count { $0.state != .performed && $0.state != .loopExited }
        }
        #expect(stranded == 0, "\(stranded) of \(accepted) accepted delayed performs neither ran nor reported the loop's exit")
    }

    @Test func aPendingDelayedPerformSaysTheLoopExitedAndReleasesItsBlock() {
        final class Captured: Sendable {}
        weak var captured: Captured?
        let (loop, exit, thread) = loopThreadExitingOnSignal()
        let request: EvDelayedPerform? = {
            let object = Captured()
            captured = object
            return try? loop.perform(after: .seconds(3600), inModes: [.default]) { withExtendedLifetime(object) {} }
        }()
        #expect(request?.state == .pending)
        exit.open()
        pthread_join(thread, nil)
        #expect(request?.state == .loopExited)
        #expect(captured == nil, "the block of a request dropped with its loop is still held")
        #expect(request?.cancel() == false)
        #expect(throws: EvPerformError.loopExited) { try loop.perform(after: .zero) {} }
    }

    @Test func fireAndForgetPerformsRacingTheThreadExitAreRefusedOnceTheLoopExited() throws {
        for _ in 0..<200 {
            let (loop, exit, thread) = loopThreadExitingOnSignal()
            exit.open()
            var refused = false
            while !refused {
                do { try loop.perform(inModes: [.default], waitUntilDone: false) {} } catch { refused = true }
            }
            pthread_join(thread, nil)
            #expect(throws: EvPerformError.loopExited) { try loop.perform(inModes: [.default], waitUntilDone: false) {} }
        }
    }
}
