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
        enqueue(.block(block), inModes: modes, woken: false)
    }

    /// Queues `work` for `modes` and wakes the loop for it: the calls that hand work over
    /// (`execute`, `submit`, an executor's jobs, a worker's work). Unlike a block of
    /// ``perform(inModes:_:)``, such work never waits for a later wake-up: a run does not sleep
    /// while some of it may run in its mode, since its own wake-up may have been dropped (C52) in
    /// the post-wait half of a run nested in a callout, which then ended. Returns false, without
    /// waking, when the loop's thread has exited.
    func enqueueAndWake(_ work: consuming BlockQueue.Work, inModes modes: [Mode]) -> Bool {
        guard enqueue(work, inModes: modes, woken: true) else { return false }
        wakeUp()
        return true
    }

    /// Queues `work` for `modes` as a perform-block (R54), `woken` by the caller; false when the
    /// loop's thread has exited.
    func enqueue(_ work: consuming BlockQueue.Work, inModes modes: [Mode], woken: Bool) -> Bool {
        guard modes.count > 1 || (modes[0] != .common && modes[0] != .default) else {
            return append(work, modes: modes, woken: woken)  // the usual case: nothing to deduplicate or create
        }
        var unique = modes
        if modes.count > 1 { unique = modes.reduce(into: []) { if !$0.contains($1) { $0.append($1) } } }
        if unique.contains(where: { $0 != .common && $0 != .default }) {
            // As CFRunLoopPerformBlock does: the named modes exist from now on, so a mode that has
            // only this block runs it instead of being taken for an unknown mode (R7, R16).
            state.withLock { state in
                guard !state.isDead else { return }
                for mode in unique where mode != .common && mode != .default { _ = state.modeState(mode) }
            }
        }
        return append(work, modes: unique, woken: woken)
    }

    /// Queues `work` for `modes` (no mode twice) under the blocks' lock and sets the hint.
    private func append(_ work: consuming BlockQueue.Work, modes: [Mode], woken: Bool) -> Bool {
        var work = Optional(work)
        var hints = modes.contains { $0 == .common || $0 == .default } ? Hint.blocks | Hint.defaultBlocks : Hint.blocks
        if woken { hints |= Hint.wokenBlocks }
        return pendingBlocks.withLock { queue in
            guard queue.append(work.take()!, modes: modes, woken: woken) else { return false }
            // Set and cleared only under this lock: while it is held, set hints stay set.
            if self.hints.load(ordering: .relaxed) & hints != hints { setHint(hints) }
            return true
        }
    }

    /// Clears the hints the queue no longer justifies. Called under the blocks' lock.
    private func clearBlockHints(_ queue: borrowing BlockQueue) {
        if queue.isEmpty {
            clearHint(Hint.blocks | Hint.defaultBlocks | Hint.wokenBlocks)
        } else {
            var stale: UInt32 = 0
            if !queue.hasDefaultBlocks { stale |= Hint.defaultBlocks }
            if queue.wokenCount == 0 { stale |= Hint.wokenBlocks }
            if stale != 0 { clearHint(stale) }
        }
    }

    /// Whether work queued with a wake-up (``enqueueAndWake(_:inModes:)``) may run in `run`'s
    /// mode now, which the run must not sleep on. Called with the loop's lock held (the blocks'
    /// lock comes after it); without such work pending, a hint read and no lock.
    @inline(__always)
    func hasWokenBlocks(_ run: RunContext, _ state: inout LoopState) -> Bool {
        guard hasHint(Hint.wokenBlocks) else { return false }
        return hasWokenBlocksForMode(run, &state)
    }

    /// The rare half of ``hasWokenBlocks(_:_:)``, out of line: the common wait keeps its registers.
    @inline(never)
    private func hasWokenBlocksForMode(_ run: RunContext, _ state: inout LoopState) -> Bool {
        let isCommon = run.mode == .default || state.otherCommonModes.contains(run.mode)
        let jobsHeldBack = isRunningJob
        return pendingBlocks.withLock { $0.hasWokenBlocks(for: run.mode, isCommon: isCommon, jobsHeldBack: jobsHeldBack) }
    }

    /// R20 steps 3, 5 and 12: runs the blocks pending at the start of the step that may run in
    /// `mode`, in the order they were scheduled (R55); blocks scheduled meanwhile wait for the
    /// next step. The step takes the mode's own blocks and, while it is common, the `.common`
    /// ones (R15), and merges them by sequence: it never looks at blocks for other modes (W19).
    ///
    /// Inlined up to the check for pending blocks, which is all a pass without blocks pays (a
    /// run makes three of these calls per pass).
    @inline(__always)
    func performBlocks(_ run: RunContext) {
        // Without a block for it, a step of the default mode takes no lock (W19).
        guard hasHint(run.mode == .default ? Hint.defaultBlocks : Hint.blocks) else { return }
        performPendingBlocks(run)
    }

    private func performPendingBlocks(_ run: RunContext) {
        // The default mode is always common (R11); others are looked up when blocks are pending.
        let isCommon = run.mode == .default || state.withLock { $0.otherCommonModes.contains(run.mode) }
        let insideJob = isRunningJob
        var (own, common, watchCommon, end) = pendingBlocks.withLock { queue in
            var (own, common) = queue.takeRunnable(in: run.mode, isCommon: isCommon)
            if insideJob && queue.keepJobsQueued(&common) { heldBackJobs = true }
            clearBlockHints(queue)
            return (own, common, !isCommon && queue.hasCommonBlocks, queue.nextSequence)
        }
        var nextOwn = 0
        var nextCommon = 0
        while true {
            let sequence: UInt64
            if nextOwn < own.count && (nextCommon == common.count || own[nextOwn].sequence < common[nextCommon].sequence) {
                sequence = own[nextOwn].sequence
                own[nextOwn].work.run(on: self)
                nextOwn += 1
            } else if nextCommon < common.count {
                sequence = common[nextCommon].sequence
                common[nextCommon].work.run(on: self)
                nextCommon += 1
            } else {
                break
            }
            guard watchCommon, state.withLock({ $0.otherCommonModes.contains(run.mode) }) else { continue }
            // R15: a block made the running mode common. As CF checks membership block by block,
            // the `.common` blocks scheduled after this one and before the step began join it
            // (the mode was not common when the step began, so it took no `.common` block).
            watchCommon = false
            common = pendingBlocks.withLock { queue in
                var joined = queue.takeCommon(scheduledIn: sequence + 1..<end)
                if insideJob && queue.keepJobsQueued(&joined) { heldBackJobs = true }
                clearBlockHints(queue)
                return joined
            }
            nextCommon = 0
        }
        // The emptied buffer goes back for the next step's blocks (a block per step, an actor
        // hop, would allocate one per step). The blocks are released first, with no lock held.
        var buffer = own.capacity >= common.capacity ? own : common
        own = []
        common = []
        guard buffer.capacity > 0 && buffer.capacity <= BlockQueue.spareCapacityLimit else { return }
        // removeAll(keepingCapacity:) goes through replaceSubrange, which costs more than the
        // few removeLast calls of a small buffer.
        while !buffer.isEmpty { buffer.removeLast() }
        pendingBlocks.withLock { $0.recycle(&buffer) }
    }

    /// R16: no sources, no timers, no pending block for it (observers do not count). Called with
    /// the loop's lock held; takes the blocks' lock, which comes after it.
    ///
    /// Takes the common set (``LoopState/otherCommonModes``) rather than the whole
    /// ``LoopState``: passing that large struct by value would copy it on every iteration's
    /// result check.
    func isEmpty(_ mode: ModeState, otherCommonModes: ModeList) -> Bool {
        guard mode.sourceCount == 0 && mode.timerCount == 0 else { return false }
        let isCommon = mode.mode == .default || otherCommonModes.contains(mode.mode)
        return !pendingBlocks.withLock { $0.hasBlocks(for: mode.mode, isCommon: isCommon) }
    }
}
