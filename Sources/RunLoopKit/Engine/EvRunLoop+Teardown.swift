extension EvRunLoop {
    /// Unbinds every item from this dying loop (R4) and returns the sources with the modes they
    /// were in, for their cancel callouts (R36).
    func detachAllItems(_ state: inout LoopState) -> [(EvSource, ModeList)] {
        var cancelled: [(EvSource, ModeList)] = []
        for source in state.sources.all {
            source.state.withLock { sourceState in
                guard sourceState.loop === self else { return }
                cancelled.append((source, sourceState.modes))
                sourceState.modes = ModeList()
                sourceState.loop = nil
                // Still signalled, it joins the next loop's list when added there (R35).
                state.dequeueSignalled(source)
            }
        }
        _ = signalInbox.take()  // no source is bound here any more: none can be left again
        // R4: the sources leave the dying loop and keep their own state (a port its queued
        // messages, for the next loop it joins).
        for core in state.source1s.values {
            core.state.withLock { sourceState in
                guard sourceState.loop === self else { return }
                if case .signal(let signal) = core.kind { SignalOwnership.release(signal, for: self) }
                sourceState.modes = ModeList()
                sourceState.loop = nil
                sourceState.pendingEvents = 0
            }
        }
        var timers = Array(state.commonTimers.values)
        var observers = state.commonObservers.map(\.observer)
        for modeState in state.allModeStates {
            timers += modeState.timers.removeAll()
            observers += modeState.observers.map(\.observer)
        }
        for timer in timers {
            timer.state.withLock { timerState in
                guard timerState.loop === self else { return }
                timer.invalidateHeapEntries()
                timerState.modes = ModeList()
                timerState.loop = nil
            }
        }
        for observer in observers {
            observer.state.withLock { observerState in
                guard observerState.loop === self else { return }
                observerState.modes = ModeList()
                observerState.loop = nil
            }
        }
        let waiters = state.waiters
        state = LoopState()
        state.isDead = true
        state.waiters = waiters  // stop waiters resumed and exit hooks run once teardown is complete
        return cancelled
    }
}
