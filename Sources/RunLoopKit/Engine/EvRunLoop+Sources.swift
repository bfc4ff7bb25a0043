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
            signalInbox.remove(source)
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
}
