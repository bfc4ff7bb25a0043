@testable import RunLoopKit
import Synchronization

/// An actor pinned to a loop that counts its calls, notices two of its jobs running at once,
/// and says where its last call ran.
actor LoopCounter {
    let executor: EvRunLoopExecutor
    private(set) var count = 0
    private nonisolated let running = Atomic<Int>(0)
    nonisolated let overlaps = Atomic<Int>(0)

    init(_ loop: EvRunLoop) { executor = EvRunLoopExecutor(loop) }
    nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }

    /// Counts the call; returns whether it ran on the loop's thread (else on the stand-in queue).
    @discardableResult
    func bump() -> Bool {
        if running.add(1, ordering: .acquiringAndReleasing).newValue != 1 { overlaps.add(1, ordering: .relaxed) }
        executor.checkIsolated()  // the loop's thread, or the stand-in queue once it has exited
        count += 1
        running.subtract(1, ordering: .acquiringAndReleasing)
        return executor.loop.isCurrent
    }

    /// Bumps itself, `other` (a hop to the other loop and back), then itself again.
    func bumpAround(_ other: LoopCounter) async {
        bump()
        await other.bump()
        bump()
    }
}
