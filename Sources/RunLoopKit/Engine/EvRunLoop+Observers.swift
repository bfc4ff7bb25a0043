extension EvRunLoop {
    /// Adds `observer` to `mode`, or to every common mode for ``Mode/common`` (R12). Safe from
    /// any thread; it is called from the next phase on (R52).
    ///
    /// - Precondition: the observer is not in another run loop (R53).
    public func add(_ observer: EvObserver, forMode mode: Mode) {
        state.withLock { state in
            guard !state.isDead, observer.isValid else { return }
            if mode == .common {
                // R12: even if it is a common item already, it joins every common mode it left since.
                let id = ObjectIdentifier(observer)
                if !state.commonObservers.contains(where: { $0.id == id }) { state.commonObservers.append((id, observer)) }
            }
            attach(observer, to: state.expand(mode), &state)
        }
    }

    /// Removes `observer` from `mode` (for ``Mode/common``, from the common items and every common
    /// mode, R14). Safe from any thread.
    public func remove(_ observer: EvObserver, forMode mode: Mode) {
        state.withLock { state in
            let id = ObjectIdentifier(observer)
            let wasCommon = mode == .common && state.commonObservers.contains { $0.id == id }
            if wasCommon { state.commonObservers.removeAll { $0.id == id } }
            guard mode != .common || wasCommon else { return }
            observer.state.withLock { observerState in
                guard observerState.loop === self else { return }
                detach(observer, from: state.expand(mode), &state, &observerState)
            }
        }
    }

    /// Whether `observer` is in `mode` of this loop; for ``Mode/common``, whether it was added to
    /// the common items.
    public func contains(_ observer: EvObserver, forMode mode: Mode) -> Bool {
        state.withLock { state in
            let id = ObjectIdentifier(observer)
            if mode == .common { return state.commonObservers.contains { $0.id == id } }
            return observer.state.withLock { $0.loop === self && $0.modes.contains(mode) }
        }
    }

    func attach(_ observer: EvObserver, to modes: ModeList, _ state: inout LoopState) {
        observer.state.withLock { observerState in
            guard observerState.isValid else { return }
            require(
                observerState.loop == nil || observerState.loop === self,
                "EvRunLoop.add(_:forMode:): this EvObserver is already in another run loop; an observer belongs to one loop (R53)")
            for mode in modes where !observerState.modes.contains(mode) {
                observerState.loop = self
                observerState.modes.append(mode)
                let modeState = state.modeState(mode)
                let sequence = state.nextSequence()
                // R49: ascending order, equal orders in the order they were added.
                let index = modeState.observers.firstIndex { $0.observer.order > observer.order } ?? modeState.observers.endIndex
                modeState.observers.insert((sequence, observer), at: index)
                modeState.observedActivities.formUnion(observer.activities)
                observedActivities.bitwiseOr(observer.activities.rawValue, ordering: .relaxed)
            }
        }
    }

    func detach(_ observer: EvObserver, from modes: ModeList, _ state: inout LoopState, _ observerState: inout ObserverState) {
        let leaving = modes.selecting { observerState.modes.contains($0) }
        observerState.modes.remove(leaving)
        for mode in leaving {
            guard let modeState = state.existingModeState(mode) else { continue }
            modeState.observers.removeAll { $0.observer === observer }
            modeState.observedActivities = modeState.observers.reduce([]) { $0.union($1.observer.activities) }
        }
        if !leaving.isEmpty { recomputeObservedActivities(state) }
        let id = ObjectIdentifier(observer)
        if observerState.modes.isEmpty, !state.commonObservers.contains(where: { $0.id == id }) {
            observerState.loop = nil
        }
    }

    /// The loop-wide mask from the modes' own after an observer left, so that a loop whose last
    /// observer of a phase went skips that phase's lock again, and may merge polls (R20.6).
    /// Under the loop's lock, as every change of the mask is; a pass that read a stale bit only
    /// looks at its mode's list and finds nobody.
    private func recomputeObservedActivities(_ state: LoopState) {
        var union = state.defaultMode.observedActivities
        for modeState in state.otherModes.values { union.formUnion(modeState.observedActivities) }
        observedActivities.store(union.rawValue, ordering: .relaxed)
    }

    func detachEverywhere(_ observer: EvObserver, _ state: inout LoopState, _ observerState: inout ObserverState) {
        let id = ObjectIdentifier(observer)
        if !state.commonObservers.isEmpty { state.commonObservers.removeAll { $0.id == id } }
        detach(observer, from: observerState.modes, &state, &observerState)
    }

    /// R48–R52: calls the observers of `mode` for `activity`. The set is taken when the phase
    /// begins; an observer invalidated meanwhile, or whose callout is running, is skipped.
    ///
    /// Inlined up to the first check, which is all a loop without observers of `activity` pays:
    /// a run makes four or six of these calls per pass.
    @inline(__always)
    func notifyObservers(_ activity: Activity, _ run: RunContext) {
        guard observedActivities.load(ordering: .relaxed) & activity.rawValue != 0 else { return }
        callObservers(activity, run.modeState)
    }

    private func callObservers(_ activity: Activity, _ modeState: ModeState) {
        let observers: [EvObserver] = state.withLock { _ in
            guard modeState.observedActivities.contains(activity) else { return [] }
            return modeState.observers.compactMap { $0.observer.activities.contains(activity) ? $0.observer : nil }
        }
        for observer in observers {
            let shouldCall = observer.state.withLock { observerState in
                guard observerState.isValid, !observerState.isFiring else { return false }
                observerState.isFiring = true
                return true
            }
            guard shouldCall else { continue }
            Callout.observer(observer, activity, on: self)
            let isDone = observer.state.withLock { observerState in
                observerState.isFiring = false
                return !observer.repeats
            }
            if isDone { observer.invalidate() }  // R50
        }
    }
}
