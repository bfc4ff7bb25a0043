import Foundation
import RunLoopKit
import Testing
import TestSupport

/// A request's target that notes, as it is freed, the state its request shows at that moment.
private final class Witness: Sendable {
    let request = Box<EvDelayedPerform?>(nil)
    let statesSeenAtRelease: EventLog<EvDelayedPerform.State?>

    init(_ log: EventLog<EvDelayedPerform.State?>) { statesSeenAtRelease = log }

    deinit { statesSeenAtRelease.append(request.get?.state) }
}

/// A delayed perform shows that it ended (performed, cancelled, or its loop's thread exited) only
/// once its block and target have been released: whoever sees the end and then checks that what
/// the request held is gone finds it gone.
@Suite struct DelayedPerformReleaseTests {
    @Test func aRequestEndedByItsLoopsExitShowsLoopExitedOnlyOnceItsTargetIsFreed() {
        let seen = EventLog<EvDelayedPerform.State?>()
        let request = onLoopThread { loop -> EvDelayedPerform? in
            let witness = Witness(seen)
            let request = try? loop.perform(after: .seconds(3600), target: witness) {}
            witness.request.set(request)
            return request  // pending as the thread exits: its exit hook ends it (R4)
        }
        #expect(seen.all == [.pending])
        #expect(request?.state == .loopExited)
    }

    @Test func aRequestCancelledFromAnotherThreadShowsCancelledOnlyOnceItsTargetIsFreed() {
        let seen = EventLog<EvDelayedPerform.State?>()
        let (loop, exit, thread) = loopThreadUntilOpened()
        let request: EvDelayedPerform? = {
            let witness = Witness(seen)
            let request = try? loop.perform(after: .seconds(3600), inModes: [.default], target: witness) {}
            witness.request.set(request)
            return request
        }()
        #expect(request?.cancel() == true)
        #expect(seen.all == [.pending])
        #expect(request?.state == .cancelled)
        exit.open()
        try? loop.execute(inModes: [.default]) { loop.stop() }
        pthread_join(thread, nil)
    }

    @Test func aRequestThatRanShowsPerformedOnlyOnceItsBlockAndTargetAreFreed() {
        let seen = EventLog<EvDelayedPerform.State?>()
        let request = onLoopThread { loop -> EvDelayedPerform? in
            let request: EvDelayedPerform? = {
                let target = Witness(seen), captured = Witness(seen)
                let request = try? loop.perform(after: .zero, target: target) { withExtendedLifetime(captured) {} }
                target.request.set(request)
                captured.request.set(request)
                return request
            }()
            // The request is the mode's only content: the run ends once it ran (R16, R43).
            loop.run(mode: .default, timeout: .seconds(20))
            return request
        }
        #expect(seen.all == [.running, .running])
        #expect(request?.state == .performed)
    }

    /// A thread whose loop runs its default mode (kept alive by a port) until `exit` opens.
    private func loopThreadUntilOpened() -> (loop: EvRunLoop, exit: Latch, thread: pthread_t) {
        let loop = Box<EvRunLoop?>(nil)
        let ready = Latch()
        let exit = Latch()
        let thread = spawnThread(named: "release-test") {
            let own = EvRunLoop.current
            own.add(EvMessagePort<Int> { _ in }, forMode: .default)
            loop.set(own)
            ready.open()
            while !exit.wait(timeout: 0) { own.run(mode: .default, timeout: .seconds(30)) }
        }
        precondition(ready.wait(), "loop thread did not start")
        return (loop.get!, exit, thread)
    }
}
