/// Pending perform-blocks of a loop (CF's `_blocks_head` list), guarded by the loop's lock.
///
/// Blocks keep the order they were scheduled in (R55); counts per mode answer "does this mode
/// have a pending block" (R16, R57) without walking the queue.
struct BlockQueue {
    struct Block {
        let modes: [EvRunLoop.Mode]
        let body: @Sendable () -> Void
        /// Its place in scheduling order, set by ``BlockQueue/append(_:)``.
        var sequence: UInt64 = 0
    }

    private var blocks: [Block] = []
    /// Pending blocks per mode; `.common` and `.default`, the usual targets, have counters of
    /// their own so queuing a block for them hashes nothing.
    private var commonCount = 0
    private var defaultCount = 0
    private var counts: [EvRunLoop.Mode: Int] = [:]

    /// Set when the loop's thread exits: blocks sent afterwards are dropped, as CF does.
    private(set) var isClosed = false
    /// The sequence number the next block gets.
    private(set) var nextSequence: UInt64 = 0

    var isEmpty: Bool { blocks.isEmpty }

    /// Whether a block for `.common` is pending.
    var hasCommonBlocks: Bool { commonCount > 0 }

    /// Queues `block`; false (and the block is not kept) once the queue is closed.
    mutating func append(_ block: Block) -> Bool {
        guard !isClosed else { return false }
        var block = block
        block.sequence = nextSequence
        nextSequence += 1
        blocks.append(block)
        count(block, by: 1)
        return true
    }

    /// Refuses further blocks and hands back the pending ones, to be released outside the lock.
    mutating func close() -> [Block] {
        isClosed = true
        defer { blocks = []; commonCount = 0; defaultCount = 0; counts = [:] }
        return blocks
    }

    /// R16/R57: a block for `mode`, or for `.common` while `mode` is common, is pending.
    func hasBlocks(for mode: EvRunLoop.Mode, isCommon: Bool) -> Bool {
        if isCommon && commonCount > 0 { return true }
        return mode == .default ? defaultCount > 0 : counts[mode, default: 0] > 0
    }

    /// R54/R15: takes out, in order, every block scheduled within `sequences` that may run in
    /// `mode` now; the others keep their place. When all may run (the usual case) the queue is
    /// handed over whole.
    mutating func takeRunnable(in mode: EvRunLoop.Mode, isCommon: Bool, sequences: Range<UInt64> = 0..<UInt64.max) -> [Block] {
        func runs(_ block: Block) -> Bool {
            sequences.contains(block.sequence) && block.modes.contains { $0 == mode || (isCommon && $0 == .common) }
        }
        guard let firstKept = blocks.firstIndex(where: { !runs($0) }) else {
            defer { blocks = []; commonCount = 0; defaultCount = 0; counts = [:] }
            return blocks
        }
        var runnable = Array(blocks[..<firstKept])
        var kept: [Block] = [blocks[firstKept]]
        for block in blocks[(firstKept + 1)...] {
            if runs(block) { runnable.append(block) } else { kept.append(block) }
        }
        for block in runnable { count(block, by: -1) }
        blocks = kept
        return runnable
    }

    private mutating func count(_ block: Block, by delta: Int) {
        for mode in block.modes {
            if mode == .common {
                commonCount += delta
            } else if mode == .default {
                defaultCount += delta
            } else {
                counts[mode, default: 0] += delta
            }
        }
    }
}

extension EvRunLoop {
    /// Schedules `block` to run once on the loop's thread, in the first blocks step of a run of
    /// one of `modes` (R54); ``Mode/common`` means whichever common mode is running then (R15).
    /// Blocks run in the order they were scheduled (R55). Does not wake the loop: call
    /// ``wakeUp()`` too (R56, C101), or use ``execute(inModes:_:)``, the cross-thread call that
    /// wakes it. Safe from any thread. A block sent to a loop whose thread has exited is dropped,
    /// as CF does.
    ///
    /// - Parameters:
    ///   - modes: the modes the block may run in.
    ///   - block: runs once, on the loop's thread.
    /// - Precondition: `modes` is not empty.
    public func perform(inModes modes: [Mode] = [.common], _ block: @escaping @Sendable () -> Void) {
        require(!modes.isEmpty, "EvRunLoop.perform(inModes:_:): modes must not be empty")
        enqueueBlock(inModes: modes, block)
    }

    /// Queues `block` as ``perform(inModes:_:)`` does. Returns false when the loop's thread has
    /// exited — decided under the blocks' lock, which teardown closes, so a block is never
    /// accepted by a loop that can no longer run it.
    @discardableResult
    func enqueueBlock(inModes modes: [Mode], _ block: @escaping @Sendable () -> Void) -> Bool {
        var unique = modes
        if modes.count > 1 { unique = modes.reduce(into: []) { if !$0.contains($1) { $0.append($1) } } }
        let block = BlockQueue.Block(modes: unique, body: block)
        if unique.contains(where: { $0 != .common && $0 != .default }) {
            // As CFRunLoopPerformBlock does: the named modes exist from now on, so a mode that has
            // only this block runs it instead of being taken for an unknown mode (R7, R16).
            state.withLock { state in
                guard !state.isDead else { return }
                for mode in unique where mode != .common && mode != .default { _ = state.modeState(mode) }
            }
        }
        return pendingBlocks.withLock { queue in
            let accepted = queue.append(block)
            if !queue.isEmpty { setHint(Hint.blocks) }
            return accepted
        }
    }

    /// R20 steps 3, 5 and 12: runs the blocks pending at the start of the step that may run in
    /// `mode`; blocks scheduled meanwhile wait for the next step (R55).
    func performBlocks(_ run: RunContext) {
        guard hasHint(Hint.blocks) else { return }
        // The default mode is always common (R11); others are looked up when blocks are pending.
        let isCommon = run.mode == .default || state.withLock { $0.commonModes.contains(run.mode) }
        var (runnable, watchCommon, end) = pendingBlocks.withLock { queue -> ([BlockQueue.Block], Bool, UInt64) in
            let runnable = queue.takeRunnable(in: run.mode, isCommon: isCommon)
            if queue.isEmpty { clearHint(Hint.blocks) }
            return (runnable, !isCommon && queue.hasCommonBlocks, queue.nextSequence)
        }
        var index = 0
        while index < runnable.count {
            let block = runnable[index]
            Callout.block(block.body, on: self)
            index += 1
            guard watchCommon, state.withLock({ $0.commonModes.contains(run.mode) }) else { continue }
            // R15: a block made the running mode common. As CF checks membership block by block,
            // the `.common` blocks scheduled after this one and before the step began join it.
            watchCommon = false
            let joined = pendingBlocks.withLock { queue in
                let joined = queue.takeRunnable(in: run.mode, isCommon: true, sequences: block.sequence + 1..<end)
                if queue.isEmpty { clearHint(Hint.blocks) }
                return joined
            }
            runnable = Array(runnable[..<index]) + (runnable[index...] + joined).sorted { $0.sequence < $1.sequence }
        }
    }

    /// R16: no sources, no timers, no pending block for it (observers do not count). Called with
    /// the loop's lock held; takes the blocks' lock, which comes after it.
    /// Takes the common set rather than the whole ``LoopState``: passing that large struct by
    /// value copied it (a `memcpy`) on every iteration's result check.
    func isEmpty(_ mode: ModeState, commonModes: Set<Mode>) -> Bool {
        guard mode.sourceCount == 0 && mode.timerCount == 0 else { return false }
        let isCommon = commonModes.contains(mode.mode)
        return !pendingBlocks.withLock { $0.hasBlocks(for: mode.mode, isCommon: isCommon) }
    }
}
