import Foundation
import RunLoopKit
import Synchronization
import Testing

/// An actor pinned to a loop that counts its calls and notices two of its jobs running at once.
private actor HopCounter {
    let executor: EvRunLoopExecutor
    private(set) var count = 0
    /// How many of this actor's methods run now, and how often more than one did.
    private nonisolated let running = Atomic<Int>(0)
    nonisolated let overlaps = Atomic<Int>(0)

    init(_ loop: EvRunLoop) { executor = EvRunLoopExecutor(loop) }
    nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }

    func bump() {
        if running.add(1, ordering: .acquiringAndReleasing).newValue != 1 { overlaps.add(1, ordering: .relaxed) }
        executor.checkIsolated()  // on the loop's thread
        count += 1
        running.subtract(1, ordering: .acquiringAndReleasing)
    }

    /// Bumps itself, `other` (a hop to the other loop and back), then itself again.
    func bumpAround(_ other: HopCounter) async {
        bump()
        await other.bump()
        bump()
    }
}

/// Reads the count through an `isolated` parameter: the call hops to the actor's loop.
private func count(of counter: isolated HopCounter) -> Int {
    counter.executor.checkIsolated()
    return counter.count
}

/// Many tasks hopping between actors pinned to two loops: every call runs once, on its actor's
/// loop, never two of one actor's at once.
@Suite struct ActorHopTests {
    @Test func manyTasksHopBetweenTwoLoopsActorsAndEveryCallRunsOnceSerially() async throws {
        let group = try EvLoopGroup(numberOfThreads: 2, name: "hop")
        let first = HopCounter(group.loops[0])
        let second = HopCounter(group.loops[1])
        let tasks = 64
        let rounds = 50
        await withTaskGroup(of: Void.self) { hops in
            for index in 0..<tasks {
                hops.addTask {
                    let (mine, other) = index.isMultiple(of: 2) ? (first, second) : (second, first)
                    for _ in 0..<rounds { await mine.bumpAround(other) }
                }
            }
        }
        // Each actor: two calls per round from its own half of the tasks, one from the other half.
        let expected = tasks / 2 * rounds * 3
        #expect(await count(of: first) == expected)
        #expect(await count(of: second) == expected)
        #expect(first.overlaps.load(ordering: .relaxed) == 0)
        #expect(second.overlaps.load(ordering: .relaxed) == 0)
        await group.stop()
    }
}
