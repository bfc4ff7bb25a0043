extension EvRunLoop {
    /// Adds `source` to `mode`, or to every common mode for ``Mode/common`` (R12), calling its
    /// `schedule` handler once per mode it joins (R36). A signalled source added to a loop is
    /// performed the next time one of its modes runs (R35). Safe from any thread.
    ///
    /// - Precondition: the source is not in another run loop.
    public func add(_ source: EvSource, forMode mode: Mode) {
        let joined: ModeList = state.withLock { state in
            guard !state.isDead, source.isValid else { return [] }
            // R12: even if it is a common item already, it joins every common mode it left since.
            if mode == .common { state.commonSources[ObjectIdentifier(source)] = source }
            return attach(source, to: state.expand(mode), &state)
        }
        for mode in joined { Callout.sourceSchedule(source, self, mode) }
    }

    /// Removes `source` from `mode` (for ``Mode/common``, from the common items and every common
    /// mode, R14), calling its `cancel` handler once per mode it leaves (R36). Safe from any thread.
    public func remove(_ source: EvSource, forMode mode: Mode) {
        let left: ModeList = state.withLock { state in
            let wasCommon = mode == .common && !state.commonSources.isEmpty && state.commonSources.removeValue(forKey: ObjectIdentifier(source)) != nil
            guard mode != .common || wasCommon else { return [] }
            return source.state.withLock { sourceState in
                guard sourceState.loop === self else { return [] }
                return detach(source, from: state.expand(mode), &state, &sourceState)
            }
        }
        for mode in left { Callout.sourceCancel(source, self, mode) }
    }

    /// Whether `source` is in `mode` of this loop; for ``Mode/common``, whether it was added to
    /// the common items.
    public func contains(_ source: EvSource, forMode mode: Mode) -> Bool {
        state.withLock { state in
            if mode == .common { return state.commonSources[ObjectIdentifier(source)] != nil }
            return source.state.withLock { $0.loop === self && $0.modes.contains(mode) }
        }
    }

    /// Adds the source to those of `modes` it is not in yet; returns them.
    func attach(_ source: EvSource, to modes: ModeList, _ state: inout LoopState) -> ModeList {
        source.state.withLock { sourceState in
            guard sourceState.isValid else { return [] }
            require(
                sourceState.loop == nil || sourceState.loop === self,
                "EvRunLoop.add(_:forMode:): this EvSource is already scheduled in another run loop; a source belongs to one loop")
            let joining = modes.selecting { !sourceState.modes.contains($0) }
            guard !joining.isEmpty else { return [] }
            // Listed while bound here (BoundSources): listed now if it was not bound before.
            if sourceState.loop == nil { state.sources.insert(source) }
            sourceState.loop = self
            for mode in joining { sourceState.modes.append(mode) }
            for mode in joining where state.modeState(mode).changeSourceCount(by: 1) { notePassViewChanged() }
            if sourceState.isSignalled {
                state.enqueueSignalled(source)
                setHint(Hint.signalledSources)
            }
            return joining
        }
    }

    /// Removes the source from those of `modes` it is in; returns them.
    func detach(_ source: EvSource, from modes: ModeList, _ state: inout LoopState, _ sourceState: inout SourceState) -> ModeList {
        let leaving = modes.selecting { sourceState.modes.contains($0) }
        sourceState.modes.remove(leaving)
        for mode in leaving where state.existingModeState(mode)?.changeSourceCount(by: -1) == true { notePassViewChanged() }
        let id = ObjectIdentifier(source)
        if sourceState.modes.isEmpty, state.commonSources[id] == nil {
            sourceState.loop = nil
            state.sources.remove(source)
            state.dequeueSignalled(source)
            if state.signalled.isEmpty { clearHint(Hint.signalledSources) }
        }
        return leaving
    }

    func detachEverywhere(_ source: EvSource, _ state: inout LoopState, _ sourceState: inout SourceState) {
        if !state.commonSources.isEmpty { state.commonSources.removeValue(forKey: ObjectIdentifier(source)) }
        _ = detach(source, from: sourceState.modes, &state, &sourceState)
    }

    /// Called by ``EvSource/signal()`` with the source's lock held, after it set the flag: queues
    /// the source if the loop's lock is free now; false, having done nothing, if it is not (the
    /// lock order is the loop's lock first, so under an item's lock it may only be tried).
    func tryEnqueueSignalled(_ source: EvSource) -> Bool {
        let queued: Bool? = state.withLockIfAvailable { state in
            state.enqueueSignalled(source)
            setHint(Hint.signalledSources)
            return true
        }
        return queued ?? false
    }

    /// Called by ``EvSource/signal()`` after it set the flag and found the loop's lock taken:
    /// queue the source for its modes if it is still signalled and bound here.
    func enqueueSignalled(_ source: EvSource) {
        state.withLock { state in
            source.state.withLock { sourceState in
                if sourceState.isSignalled, sourceState.loop === self {
                    state.enqueueSignalled(source)
                    setHint(Hint.signalledSources)
                }
            }
        }
    }

    /// R33, R34: performs the signalled sources of `run`'s mode in (order, signal time) order; with
    /// `returnAfterSourceHandled`, only the first. Returns whether any source was performed.
    @inline(__always)
    func performSignalledSources(_ run: RunContext) -> Bool {
        hasHint(Hint.signalledSources) && performSignalled(run)
    }

    @inline(never)
    private func performSignalled(_ run: RunContext) -> Bool {
        let mode = run.mode
        // The common case, one signalled source: taken at once, no list to build.
        let only: EvSource? = state.withLock { state in
            state.signalled.count == 1 ? takeOnlySignalled(in: mode, &state) : listSignalled(in: mode, &state)
        }
        if let only {
            Callout.sourcePerform(only, on: self)
            return true
        }
        return performListed(run)
    }

    /// Several signalled sources: those of `mode` are listed in the loop's scratch array, which
    /// keeps its capacity between passes, so that listing and sorting them allocates nothing
    /// once it has grown. Returns nil, for ``performSignalled(_:)``.
    @inline(never)
    private func listSignalled(in mode: Mode, _ state: inout LoopState) -> EvSource? {
        for slot in 0..<state.signalled.count {
            let source = state.signalled[slot]
            source.state.withLock { sourceState in
                if sourceState.isValid, sourceState.modes.contains(mode) {
                    readySourcesScratch.append(
                        ReadySource(order: source.order, sequence: sourceState.signalSequence, source: source))
                }
            }
        }
        return nil
    }

    /// Performs the sources ``listSignalled(in:_:)`` listed, each taken just before its callout.
    @inline(never)
    private func performListed(_ run: RunContext) -> Bool {
        // Out of the loop for the pass: a run nested in a perform finds it empty and lists its own.
        var ready = readySourcesScratch
        readySourcesScratch = []
        // R33: by order, then by signal time; in place, no copy of the list.
        ready.sort { ($0.order, $0.sequence) < ($1.order, $1.sequence) }
        var performed = false
        for candidate in ready where state.withLock({ take(candidate.source, &$0) }) {
            Callout.sourcePerform(candidate.source, on: self)
            performed = true
            if run.returnAfterSourceHandled { break }
        }
        ready.removeAll(keepingCapacity: true)  // no source kept alive by the scratch
        readySourcesScratch = ready
        return performed
    }

    /// The one signalled source, taken off the list (its reference moves out of it: no retain,
    /// no release) with its flag cleared, if it is valid and in `mode`; `nil`, leaving it there,
    /// if not.
    @inline(__always)
    private func takeOnlySignalled(in mode: Mode, _ state: inout LoopState) -> EvSource? {
        let taken = state.signalled.takeOnly { source in
            source.state.withLock { sourceState in
                guard sourceState.isSignalled, sourceState.isValid, sourceState.modes.contains(mode) else { return false }
                sourceState.isSignalled = false  // R33: cleared before the perform
                return true
            }
        }
        if taken != nil { clearHint(Hint.signalledSources) }
        return taken
    }

    /// Clears the source's signalled flag just before its callout, so a signal during the callout
    /// runs it again later (R33); false if it is no longer signalled or valid.
    private func take(_ source: EvSource, _ state: inout LoopState) -> Bool {
        let taken = source.state.withLock { sourceState in
            guard sourceState.isSignalled, sourceState.isValid else { return false }
            sourceState.isSignalled = false
            return true
        }
        guard taken else { return false }
        state.dequeueSignalled(source)
        if state.signalled.isEmpty { clearHint(Hint.signalledSources) }
        return true
    }
}

/// A signalled source ready in the running mode, with what orders it (R33).
struct ReadySource {
    let order: Int
    let sequence: UInt64
    let source: EvSource
}
