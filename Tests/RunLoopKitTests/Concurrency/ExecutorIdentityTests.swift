import Foundation
@testable import RunLoopKit
import Testing

/// An actor pinned to a loop through an executor of its own.
private actor IdentityPinned {
    let executor: EvRunLoopExecutor
    private(set) var count = 0
    init(loop: EvRunLoop) { executor = EvRunLoopExecutor(loop) }
    nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }

    func bump() -> Int {
        count += 1
        return count
    }

    /// Calls `other`, pinned to the same loop through another executor.
    func bump(_ other: IdentityPinned) async -> Int {
        await other.bump() + bump()
    }

    /// What the actor's serial executor, reached the standard way, answers inside its job.
    func isolatingAnswer() -> Bool? {
        withSerialExecutor { $0.isIsolatingCurrentContext() }
    }
}

/// Every executor of a loop gives its actors the loop's one serial executor, compared by
/// identity: the runtime's standard ways of reaching it work, and actors of one loop call each
/// other without a hop.
@Suite struct ExecutorIdentityTests {
    /// Before, the serial executor was one with complex equality, which
    /// `Actor.withSerialExecutor(_:)` turned into a bad reference: the process crashed.
    @Test func withSerialExecutorReachesThePinnedActorsExecutor() async {
        await #expect(processExitsWith: .success) {
            let worker = EvWorkerThread(name: "with-serial")
            let pinned = IdentityPinned(loop: try! worker.start())
            let inAJob = await pinned.isolatingAnswer()
            let offTheLoop = pinned.withSerialExecutor { $0.isIsolatingCurrentContext() }
            await worker.stop()
            exit(inAJob == true && offTheLoop == nil ? 0 : 1)
        }
    }

    @Test func actorsPinnedThroughTwoExecutorsOfALoopCallEachOtherWithoutAHop() async throws {
        let worker = EvWorkerThread(name: "same-loop")
        let loop = try worker.start()
        let first = IdentityPinned(loop: loop)
        let second = IdentityPinned(loop: loop)
        #expect(first.executor !== second.executor)
        let start = loop.pendingBlocks.withLock { $0.nextSequence }
        #expect(await first.bump(second) == 2)
        #expect(loop.pendingBlocks.withLock { $0.nextSequence } - start == 1)  // the first call's job only
        await worker.stop()
    }
}
