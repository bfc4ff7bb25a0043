@testable import RunLoopKit
import Testing

/// What a blocks step costs (R54, W19): the queue entries it examines, counted by the queue
/// itself — never a timing. CF walks every pending block in every step (W19); RunLoopKit's step
/// visits only the blocks that may run in the running mode.
@Suite struct BlockStepCostTests {
    private static let other = EvRunLoop.Mode("block-cost.other")
    private static let third = EvRunLoop.Mode("block-cost.third")

    /// Entries the loop's blocks steps examined so far.
    private static func visited(_ loop: EvRunLoop) -> UInt64 {
        loop.pendingBlocks.withLock { $0.entriesVisited }
    }

    @Test func R54_W19_aStepIsNotSlowedByBlocksPendingForAnotherMode() {
        let (cost, ran, stillPending) = onLoopThread { loop -> (UInt64, [Int], Bool) in
            let log = EventLog<Int>()
            for _ in 0..<10_000 { loop.perform(inModes: [Self.other]) { log.append(-1) } }
            loop.perform(inModes: [Self.other, Self.third]) { log.append(-2) }
            loop.perform(inModes: [.default]) { log.append(1) }
            loop.perform(inModes: [.common]) { log.append(2) }
            let before = Self.visited(loop)
            for _ in 0..<3 { loop.run(mode: .default, timeout: .zero) }
            let cost = Self.visited(loop) - before
            let pending = loop.pendingBlocks.withLock { $0.hasBlocks(for: Self.other, isCommon: false) }
            return (cost, log.all, pending)
        }
        #expect(ran == [1, 2])
        #expect(stillPending)
        // Three runs of up to three blocks steps each: only the two runnable blocks are visited.
        #expect(cost <= 2, "blocks steps of .default visited \(cost) entries behind 10,001 blocks for other modes")
    }

    @Test func R54_W19_blocksForSeveralModesAreVisitedOnceWhereTheyRunAndDroppedElsewhere() {
        let (ran, cost) = onLoopThread { loop -> ([String], UInt64) in
            let log = EventLog<String>()
            loop.add(keepAliveTimer(), forMode: Self.other)
            for i in 0..<1000 { loop.perform(inModes: [Self.other, .default]) { log.append("both \(i)") } }
            loop.run(mode: .default, timeout: .zero)
            let before = Self.visited(loop)
            for _ in 0..<3 { loop.run(mode: Self.other, timeout: .zero) }
            return (log.all, Self.visited(loop) - before)
        }
        #expect(ran == (0..<1000).map { "both \($0)" })
        // The copies left in the other mode's queue are dropped without being walked per step.
        #expect(cost <= 1000, "runs of the other mode visited \(cost) entries for 1000 blocks that already ran")
    }
}

/// What a run nested in a block sees of the pending blocks, with a queue per mode (R54, R58, C99).
@Suite struct NestedBlockStepTests {
    private static let other = EvRunLoop.Mode("block-nested.other")

    /// C99: the nested run of the same mode sees only blocks scheduled after the outer step began.
    /// A nested run of another mode runs that mode's pending blocks (R54; CF would not, see
    /// DifferencesFromCF, "A run nested in a block sees the pending blocks"), but not a block for
    /// both modes that the outer step already took.
    @Test func R54_C99_aRunNestedInABlockSeesItsModesBlocksButNotThoseTheOuterStepTook() {
        let log = onLoopThread { loop -> [String] in
            let log = EventLog<String>()
            loop.add(keepAliveTimer(), forMode: .default)
            loop.add(keepAliveTimer(), forMode: Self.other)
            loop.perform(inModes: [.default]) {
                log.append("b1 start")
                loop.perform(inModes: [.default]) { log.append("b4") }
                loop.run(mode: Self.other, timeout: .zero)
                loop.run(mode: .default, timeout: .zero)
                log.append("b1 end")
            }
            loop.perform(inModes: [Self.other]) { log.append("b2") }
            loop.perform(inModes: [.default]) { log.append("b3") }
            loop.perform(inModes: [Self.other, .default]) { log.append("b5") }
            loop.run(mode: .default, timeout: .zero)
            loop.run(mode: Self.other, timeout: .zero)
            return log.all
        }
        #expect(log == ["b1 start", "b2", "b4", "b1 end", "b3", "b5"])
    }
}
