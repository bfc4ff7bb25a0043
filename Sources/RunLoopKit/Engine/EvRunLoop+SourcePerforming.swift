extension EvRunLoop {
    /// R33, R34: performs the signalled sources of `run`'s mode in (order, signal time) order; with
    /// `returnAfterSourceHandled`, only the first. Returns whether any source was performed.
    @inline(__always)
    func performSignalledSources(_ run: RunContext) -> Bool {
        (hasHint(Hint.signalledSources) || !signalInbox.isEmpty) && performSignalled(run)
    }

    @inline(never)
    private func performSignalled(_ run: RunContext) -> Bool {
        let mode = run.mode
        // The usual case, one source in the inbox and none listed: no lock but the source's.
        // (A source listed from now on was signalled after this look, as if after this step.)
        if !hasHint(Hint.signalledSources), let source = signalInbox.take() {
            guard takeIfPerformable(source, in: mode) else {
                listIfStillSignalled(source)
                return false
            }
            Callout.sourcePerform(source, on: self)
            return true
        }
        // The common case under the lock, one signalled source: taken at once, no list to build.
        let only: EvSource? = state.withLock { state in
            if let source = signalInbox.take() { list(source, &state) }
            return state.signalled.count == 1 ? takeOnlySignalled(in: mode, &state) : listSignalled(in: mode, &state)
        }
        if let only {
            Callout.sourcePerform(only, on: self)
            return true
        }
        return performListed(run)
    }

    /// Clears the flag of a source taken from the inbox if it is to perform now: still
    /// signalled, valid, bound to this loop and in `mode` (R33: cleared before the perform).
    @inline(__always)
    private func takeIfPerformable(_ source: EvSource, in mode: Mode) -> Bool {
        source.state.withLock { sourceState in
            guard sourceState.isSignalled, sourceState.isValid, sourceState.loop === self, sourceState.modes.contains(mode) else { return false }
            sourceState.isSignalled = false
            return true
        }
    }

    /// A source from the inbox that the running mode does not hold waits on the list for its
    /// modes (R35), unless it is no longer signalled or bound here.
    @inline(never)
    private func listIfStillSignalled(_ source: EvSource) {
        state.withLock { list(source, &$0) }
    }

    /// Lists a source taken from the inbox if it is still signalled and bound here (loop's lock
    /// held). Listed already, it is listed once.
    private func list(_ source: EvSource, _ state: inout LoopState) {
        source.state.withLock { sourceState in
            guard sourceState.isSignalled, sourceState.isValid, sourceState.loop === self else { return }
            state.enqueueSignalled(source)
            setHint(Hint.signalledSources)
        }
    }

    /// Several signalled sources: those of `mode` are listed in the loop's scratch array, which
    /// keeps its capacity between passes, so that listing and sorting them allocates nothing
    /// once it has grown. Returns nil, for ``performSignalled(_:)``.
    @inline(never)
    private func listSignalled(in mode: Mode, _ state: inout LoopState) -> EvSource? {
        for slot in 0..<state.signalled.count {
            let source = state.signalled[slot]
            source.state.withLock { sourceState in
                // One no longer signalled (performed through the inbox) is listed too, to leave.
                if sourceState.isValid, sourceState.modes.contains(mode) || !sourceState.isSignalled {
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

    /// The one listed source, taken off the list (its reference moves out of it: no retain, no
    /// release) with its flag cleared, if it is signalled, valid and in `mode`; `nil`, leaving
    /// it there, if it is signalled for another mode. One no longer signalled (performed
    /// through the inbox) leaves the list.
    @inline(__always)
    private func takeOnlySignalled(in mode: Mode, _ state: inout LoopState) -> EvSource? {
        let taken = state.signalled.takeOnly { source in
            source.state.withLock { sourceState in
                guard sourceState.isSignalled, sourceState.isValid else { return .drop }
                guard sourceState.modes.contains(mode) else { return .keep }
                sourceState.isSignalled = false  // R33: cleared before the perform
                return .take
            }
        }
        if state.signalled.isEmpty { clearHint(Hint.signalledSources) }
        return taken
    }

    /// Clears the source's signalled flag just before its callout, so a signal during the callout
    /// runs it again later (R33); false if it is no longer signalled or valid. Either way it
    /// leaves the list.
    private func take(_ source: EvSource, _ state: inout LoopState) -> Bool {
        let taken = source.state.withLock { sourceState in
            guard sourceState.isSignalled, sourceState.isValid else { return false }
            sourceState.isSignalled = false
            return true
        }
        state.dequeueSignalled(source)
        if state.signalled.isEmpty { clearHint(Hint.signalledSources) }
        return taken
    }
}

/// A signalled source ready in the running mode, with what orders it (R33).
struct ReadySource {
    let order: Int
    let sequence: UInt64
    let source: EvSource
}
