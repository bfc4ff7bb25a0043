extension EvRunLoop {
    /// The libev libraries' watchers have events (the last wait said so): the loop's
    /// ``EvLibevSource``s are ready, as one version-1 source, since they share one libev loop and
    /// one batch of callbacks runs for all of them (R38). Loop's lock held.
    func markLibevSourcesReady(_ state: inout LoopState) {
        if state.libevReadySequence == 0 {
            state.readySequence &+= 1
            state.libevReadySequence = state.readySequence
        }
        setHint(Hint.readySource1s)
    }

    /// Whether the libev libraries' callbacks are due in `mode`: their events arrived and the
    /// mode holds an ``EvLibevSource`` (R37). Loop's lock held.
    @inline(__always)
    func libevSourcesReady(in mode: Mode, _ state: inout LoopState) -> Bool {
        state.libevReadySequence != 0 && (state.existingModeState(mode)?.libevSourceCount ?? 0) > 0
    }

    /// The version-1 step takes the libev libraries' readiness to run their callbacks. Loop's
    /// lock held.
    func takeLibevReadiness(_ state: inout LoopState) {
        state.libevReadySequence = 0
        if state.readySource1Count == 0 { clearHint(Hint.readySource1s) }
    }

    /// An ``EvLibevSource`` leaves this loop for good (invalidated, or the teardown; loop's
    /// thread): its detach handlers run first, with the libev loop still there, in the order they
    /// were registered; then it is invalid, since its libraries' watchers cannot move to another
    /// loop. `call` names who ended it in a message about the handlers' misuse.
    func endLibevSource(_ core: EvSource1Core, _ call: StaticString) {
        guard case .libev(let binding) = core.kind else { return }
        let handlers = binding.end()
        if !handlers.isEmpty {
            waiter.withLibraryLoop(call) { evLoop in
                for handler in handlers { handler(evLoop) }
            }
        }
        core.invalidate()
        state.withLock { state in
            guard !state.libevSources.isEmpty else { return }
            state.libevSources.removeValue(forKey: ObjectIdentifier(core))
            // The last one gone: readiness left over would stand for no source.
            if state.libevSources.isEmpty && state.libevReadySequence != 0 { takeLibevReadiness(&state) }
        }
    }
}
