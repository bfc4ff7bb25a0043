extension EvRunLoop {
    /// Adds `timer` to `mode`, or to every common mode for ``Mode/common`` (R12). Adding it where
    /// it already is does nothing; an invalidated timer is ignored. Safe from any thread; a timer
    /// due before the sleeping loop's deadline re-arms the wait (R44).
    ///
    /// - Precondition: the timer is not in another run loop (R39).
    public func add(_ timer: EvTimer, forMode mode: Mode) {
        state.withLock { state in
            guard !state.isDead else { return }
            timer.state.withLock { timerState in
                guard timerState.isValid else { return }
                // R12: even if it is a common item already, it joins every common mode it left since.
                if mode == .common {
                    state.commonTimers[ObjectIdentifier(timer)] = timer
                    attach(timer, to: state.expand(mode), &state, &timerState)
                } else {
                    attach(timer, to: mode, &state, &timerState)
                }
            }
        }
    }

    /// Removes `timer` from `mode`; for ``Mode/common``, from the common items and every common
    /// mode (R14). Removing it from one named mode leaves it in the others. Safe from any thread.
    public func remove(_ timer: EvTimer, forMode mode: Mode) {
        state.withLock { state in
            let wasCommon = mode == .common && !state.commonTimers.isEmpty && state.commonTimers.removeValue(forKey: ObjectIdentifier(timer)) != nil
            guard mode != .common || wasCommon else { return }
            timer.state.withLock { timerState in
                guard timerState.loop === self else { return }
                detach(timer, from: state.expand(mode), &state, &timerState)
            }
        }
    }

    /// Whether `timer` is in `mode` of this loop; for ``Mode/common``, whether it was added to
    /// the common items and is in a mode of this loop now (C21: a common timer removed by name
    /// from its last mode answers false, as in CF, though it joins a mode made common later).
    public func contains(_ timer: EvTimer, forMode mode: Mode) -> Bool {
        state.withLock { state in
            let isHere = timer.state.withLock { $0.loop === self && (mode == .common ? !$0.modes.isEmpty : $0.modes.contains(mode)) }
            return isHere && (mode != .common || state.commonTimers[ObjectIdentifier(timer)] != nil)
        }
    }

    func attach(_ timer: EvTimer, to modes: ModeList, _ state: inout LoopState) {
        timer.state.withLock { timerState in
            guard timerState.isValid else { return }
            attach(timer, to: modes, &state, &timerState)
        }
    }

    private func attach(_ timer: EvTimer, to modes: ModeList, _ state: inout LoopState, _ timerState: inout TimerState) {
        for mode in modes { attach(timer, to: mode, &state, &timerState) }
    }

    /// Adds the timer to one mode (not ``Mode/common``): what `add(_:forMode:)` does for a named
    /// mode, without building a list of one.
    private func attach(_ timer: EvTimer, to mode: Mode, _ state: inout LoopState, _ timerState: inout TimerState) {
        if timerState.loop == nil {
            timerState.loop = self
        } else {
            require(
                timerState.loop === self,
                "EvRunLoop.add(_:forMode:): this EvTimer is already scheduled in another run loop; a timer belongs to one loop (R39)")
        }
        guard !timerState.modes.contains(mode) else { return }
        timerState.modes.append(mode)
        let latest = timerState.latestFireDate
        let sequence = state.nextSequence()
        let (joined, comesFirst) = Self.unretained(state.modeState(mode))._withUnsafeGuaranteedRef { modeState in
            let comesFirst = modeState.timers.push(timer, at: timerState.fireDate, latest: latest, sequence: sequence)
            modeState.timers.compactIfMostlyStale(liveCount: modeState.timerCount + 1)
            return (modeState.timerJoined(), comesFirst)
        }
        if joined || comesFirst { notePassViewChanged() }  // PassView.timersDueFrom
        rearmIfSleeping(for: mode, at: latest, &state)
    }

    /// A mode's state as a reference that is neither retained nor released: modes live as long
    /// as their loop (R7) and the loop's state is held exclusively while it is used, so the
    /// retain and release that a plain reference costs around each call would guard nothing.
    @inline(__always)
    private static func unretained(_ modeState: ModeState) -> Unmanaged<ModeState> {
        Unmanaged.passUnretained(modeState)
    }

    func detach(_ timer: EvTimer, from modes: ModeList, _ state: inout LoopState, _ timerState: inout TimerState) {
        let leaving = modes.selecting { timerState.modes.contains($0) }
        guard !leaving.isEmpty else { return }
        timerState.modes.remove(leaving)
        let isCommon = state.isCommonTimer(timer)
        if timerState.modes.isEmpty && !isCommon {
            timer.invalidateHeapEntries()
            timerState.loop = nil
        } else {
            reschedule(timer, &timerState, &state)
        }
        for mode in leaving { timerLeft(mode, &state) }
    }

    /// Takes `timer` out of every mode and the common items: invalidation and a one-shot's fire
    /// (R43, R45). Its list of modes is handed over whole, with nothing to select or rebuild.
    func detachEverywhere(_ timer: EvTimer, _ state: inout LoopState, _ timerState: inout TimerState) {
        state.forgetCommonTimer(timer)
        timer.invalidateHeapEntries()
        timerState.loop = nil
        let leaving = timerState.modes
        timerState.modes = ModeList()
        for mode in leaving { timerLeft(mode, &state) }
    }

    /// Counts a timer out of `mode`. The mode's state is borrowed, not retained: modes live as
    /// long as their loop (R7), and the loop's state is held exclusively here.
    /// The heap is compacted when stale entries came to outnumber live ones (so that cancelled
    /// timers are not kept alive by their entries for long), in a call of its own that finds
    /// the mode again: the common path calls nothing while it holds the mode's state.
    ///
    /// The mode's state is never bound to a name here: a named reference lives to the end of its
    /// scope (lexical lifetime), so it stays retained across any later call in the scope.
    private func timerLeft(_ mode: Mode, _ state: inout LoopState) {
        let counted = state.existingModeState(mode).map { modeState in
            (emptied: modeState.timerLeft(), mostlyStale: modeState.timers.isMostlyStale(liveCount: modeState.timerCount))
        }
        guard let (emptied, mostlyStale) = counted else { return }
        if emptied { notePassViewChanged() }
        if mostlyStale { compactTimers(of: mode, &state) }
        // Only another thread finds the loop's sleep planned: its own is awake here.
        if state.runs.last?.mode == mode && waiter.isSleepPlanned { pushDeadlineBack(for: mode, &state) }
    }

    /// A timer left the mode a planned sleep is for: the sleep may end later, at the mode's next
    /// timer or the run's timeout, and not wake for a timer that is gone.
    @inline(never)
    private func pushDeadlineBack(for mode: Mode, _ state: inout LoopState) {
        guard let modeState = state.existingModeState(mode) else { return }
        let next = nextTimerWakeUp(modeState).date
        let isTimers = next <= state.plannedRunDeadline && next != .distantFuture  // as the plan chose (R46)
        waiter.pushDeadlineBack(to: isTimers ? timerDeadline(next) : SleepDeadline(date: state.plannedRunDeadline))
    }

    /// A sleep's deadline for a timer's `date`, precise if the loop's timers are (R46).
    private func timerDeadline(_ date: MonotonicTime) -> SleepDeadline {
        SleepDeadline(date: date, precise: preciseTimers.load(ordering: .relaxed))
    }

    @inline(never)
    private func compactTimers(of mode: Mode, _ state: inout LoopState) {
        state.existingModeState(mode)?.timers.compact()
    }

    /// The timer's fire date or modes changed: every older heap entry becomes stale and the timer
    /// is pushed again into each of its modes. Where its live entry is the heap's top (a timer
    /// that just fired), the new entry takes that place instead of leaving a stale one there.
    func reschedule(_ timer: EvTimer, _ timerState: inout TimerState, _ state: inout LoopState) {
        guard timerState.loop === self else { return }
        let live = timer.heapGeneration.load(ordering: .relaxed)
        timer.invalidateHeapEntries()
        let latest = timerState.latestFireDate
        for mode in timerState.modes {
            let sequence = state.nextSequence()
            let comesFirst = Self.unretained(state.modeState(mode))._withUnsafeGuaranteedRef { modeState in
                if modeState.timers.moveTop(of: timer, generation: live, to: timerState.fireDate, latest: latest, sequence: sequence) {
                    return false  // no earlier than the entry it replaced: views stay right
                }
                let comesFirst = modeState.timers.push(timer, at: timerState.fireDate, latest: latest, sequence: sequence)
                modeState.timers.compactIfMostlyStale(liveCount: modeState.timerCount)
                return comesFirst
            }
            if comesFirst { notePassViewChanged() }  // PassView.timersDueFrom
            rearmIfSleeping(for: mode, at: latest, &state)
        }
    }

    /// A timer of the running mode now due before the planned sleep's deadline moves it: the
    /// wait re-arms from this thread, so the sleeping loop need not be woken (R44).
    @inline(__always)
    private func rearmIfSleeping(for mode: Mode, at date: MonotonicTime, _ state: inout LoopState) {
        guard state.runs.last?.mode == mode else { return }
        waiter.bringDeadlineForward(to: timerDeadline(date))
    }

    /// When the loop must wake for `mode`'s timers: the earliest fire date, delayed within the
    /// timers' tolerances to fire several at once (R46); timers whose handler runs are skipped
    /// (R59). With it, the repeat interval of the timer that date is the fire date of, when no
    /// other timer shares the wake-up (0 otherwise).
    func nextTimerWakeUp(_ modeState: ModeState) -> (date: MonotonicTime, interval: Int64) {
        guard modeState.timerCount > 0 else { return (.distantFuture, 0) }
        if let wake = modeState.timers.simpleWakeUp() { return wake }
        var firing: [TimerHeap.Entry] = []
        defer { for entry in firing { modeState.timers.push(entry) } }
        while let top = modeState.timers.peekLive() {
            guard top.timer.isFiring else { return (modeState.timers.coalescedWakeUp(startingAt: top), 0) }
            modeState.timers.removeTop()
            firing.append(top)
        }
        return (.distantFuture, 0)
    }
}

extension LoopState {
    /// A number that grows with every heap push, so equal fire dates keep their scheduling order.
    mutating func nextSequence() -> UInt64 {
        sequence &+= 1
        return sequence
    }
}
