import Foundation
import RunLoopKit
import Synchronization
import Testing

/// Reads the count through an `isolated` parameter: the call hops to the actor's loop.
private func count(of counter: isolated LoopCounter) -> Int {
    counter.executor.checkIsolated()
    return counter.count
}

/// Many tasks hopping between actors pinned to two loops: every call runs once, on its actor's
/// loop, never two of one actor's at once.
@Suite struct ActorHopTests {
    @Test func manyTasksHopBetweenTwoLoopsActorsAndEveryCallRunsOnceSerially() async throws {
        let group = try EvLoopGroup(numberOfThreads: 2, name: "hop")
        let first = LoopCounter(group.loops[0])
        let second = LoopCounter(group.loops[1])
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
