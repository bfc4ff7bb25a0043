import Synchronization

extension EvRunLoop {
    /// Adds a version-1 source to `mode`, or to every common mode for ``Mode/common`` (R12).
    /// It is watched while one of its modes runs (R37). Safe from any thread: from another
    /// thread it wakes the loop only if the source joined the mode the loop runs now, or is an
    /// ``EvSignalSource``.
    ///
    /// - Precondition: the source is not in another run loop; for an ``EvSignalSource``, no
    ///   other run loop watches the same signal.
    public func add(_ source: EvVersion1Source, forMode mode: Mode) {
        let core = source.source1Core
        let onOwnThread = ThreadRegistry.existingLoop() === self
        let wakes: Bool = state.withLock { state in
            guard !state.isDead, core.isValid else { return false }
            // R12: even if it is a common item already, it joins every common mode it left since.
            if mode == .common { state.commonSource1s[ObjectIdentifier(core)] = core }
            attach(core, to: state.expand(mode), &state)
            if onOwnThread {
                startSignalWatcher(core, &state)
                return false
            }
            // The loop's thread starts the watcher before it next waits; it need not wake for a
            // mode that does not run (R37), but a signal's deliveries wake it until it does.
            if case .signal = core.kind { return true }
            guard let running = state.runs.last?.mode else { return false }
            return core.state.withLock { $0.modes.contains(running) }
        }
        if wakes { wakeUp() }
    }

    /// Removes a version-1 source from `mode` (for ``Mode/common``, from the common items and every
    /// common mode, R14). No handler of it runs for this mode afterwards, except, called from
    /// another thread, one the loop's thread had already picked. Safe from any thread.
    public func remove(_ source: EvVersion1Source, forMode mode: Mode) {
        let core = source.source1Core
        state.withLock { state in
            let wasCommon = mode == .common && !state.commonSource1s.isEmpty && state.commonSource1s.removeValue(forKey: ObjectIdentifier(core)) != nil
            guard mode != .common || wasCommon else { return }
            core.state.withLock { sourceState in
                guard sourceState.loop === self else { return }
                detach(core, from: state.expand(mode), &state, &sourceState)
            }
        }
    }

    /// Whether a version-1 source is in `mode` of this loop; for ``Mode/common``, whether it was
    /// added to the common items.
    public func contains(_ source: EvVersion1Source, forMode mode: Mode) -> Bool {
        let core = source.source1Core
        return state.withLock { state in
            if mode == .common { return state.commonSource1s[ObjectIdentifier(core)] != nil }
            return core.state.withLock { $0.loop === self && $0.modes.contains(mode) }
        }
    }

    func attach(_ core: EvSource1Core, to modes: ModeList, _ state: inout LoopState) {
        core.state.withLock { sourceState in
            guard sourceState.isValid else { return }
            require(
                sourceState.loop == nil || sourceState.loop === self,
                "EvRunLoop.add(_:forMode:): this version-1 source is already scheduled in another run loop")
            let joining = modes.selecting { !sourceState.modes.contains($0) }
            guard !joining.isEmpty else { return }
            let id = ObjectIdentifier(core)
            if sourceState.loop == nil, case .signal(let signal) = core.kind {
                SignalOwnership.claim(signal, for: self)
                state.signalSource1s[id] = core
            }
            if case .libev(let binding) = core.kind {
                binding.bind(to: self)
                state.libevSources[id] = core  // kept until invalidated or torn down
            }
            sourceState.loop = self
            for mode in joining { sourceState.modes.append(mode) }
            state.source1s[id] = core
            for mode in joining {
                let modeState = state.modeState(mode)
                if modeState.changeSourceCount(by: 1) { notePassViewChanged() }
                if core.isWatchedPerMode { modeState.watchedSources[id] = core }
                if case .libev = core.kind { modeState.libevSourceCount += 1 }
            }
            state.watches.noteChanged(id)
            notePassViewChanged()
            if sourceState.pendingEvents != 0 {
                // Ready already: it joins the new modes' queues at its own turn (R38).
                for mode in joining { enqueueReady(core, sourceState.readySequence, in: state.modeState(mode), &state) }
            } else if core.hasPendingWork() {
                markReady(core, events: ReadinessBits.readable, &state, &sourceState)
            }
        }
    }

    func detach(_ core: EvSource1Core, from modes: ModeList, _ state: inout LoopState, _ sourceState: inout Source1State) {
        let leaving = modes.selecting { sourceState.modes.contains($0) }
        guard !leaving.isEmpty else { return }
        let id = ObjectIdentifier(core)
        sourceState.modes.remove(leaving)
        for mode in leaving {
            if state.existingModeState(mode)?.changeSourceCount(by: -1) == true { notePassViewChanged() }
            state.existingModeState(mode)?.readySources.remove(core)
            state.existingModeState(mode)?.watchedSources.removeValue(forKey: id)
            if case .libev = core.kind { state.existingModeState(mode)?.libevSourceCount -= 1 }
        }
        state.watches.noteChanged(id)
        notePassViewChanged()
        unbindIfUnscheduled(core, &state, &sourceState)
    }

    func detachEverywhere(_ core: EvSource1Core, _ state: inout LoopState, _ sourceState: inout Source1State) {
        state.commonSource1s.removeValue(forKey: ObjectIdentifier(core))
        detach(core, from: sourceState.modes, &state, &sourceState)
        // A common source out of every mode was bound by its common membership alone.
        unbindIfUnscheduled(core, &state, &sourceState)
    }

    /// A source in no mode and not common leaves the loop, with its readiness (R37).
    private func unbindIfUnscheduled(_ core: EvSource1Core, _ state: inout LoopState, _ sourceState: inout Source1State) {
        let id = ObjectIdentifier(core)
        guard sourceState.loop === self, sourceState.modes.isEmpty, state.commonSource1s[id] == nil else { return }
        if case .signal(let signal) = core.kind {
            SignalOwnership.release(signal, for: self)
            state.signalSource1s.removeValue(forKey: id)
        }
        sourceState.loop = nil
        if sourceState.pendingEvents != 0 {
            state.watches.droppedReadiness = true
            if sourceState.pendingEvents & ReadinessBits.failed != 0 { forgetFailedWatcher(core, &state) }
            sourceState.pendingEvents = 0
            noteReadinessTaken(&state)
        }
        state.source1s.removeValue(forKey: id)
        // On the loop's thread a descriptor's watch ends now, started or parked, while the number
        // still names its file (the caller may close it next): its kernel entry is removed, not
        // left to linger.
        if case .fileDescriptor = core.kind, let token = state.watches.token(of: id), ThreadRegistry.existingLoop() === self {
            _ = state.watches.markStopped(id)
            waiter.stopWatcher(token)
        }
        state.watches.noteChanged(id)  // its watcher goes at the next sync
        notePassViewChanged()
    }

    /// A failure went with a source that left the loop before it was told: the wait stopped the
    /// watcher that failed, so a sync that finds the source back in a running mode starts it
    /// again, and it fails again. (Told, the source invalidates itself: never started again.)
    private func forgetFailedWatcher(_ core: EvSource1Core, _ state: inout LoopState) {
        _ = state.watches.markStopped(ObjectIdentifier(core))
    }

    /// Records readiness of a bound source (any thread; a port's send) and wakes the loop if
    /// that ends its wait: the source was not ready yet and the innermost run's mode holds it
    /// (R22). Otherwise the readiness waits (R37): a run of one of its modes sees it before it
    /// sleeps, under the same lock.
    func markReady(_ core: EvSource1Core, events: Int32) {
        if state.withLock({ state in markReady(core, events: events, &state) }) { wakeUp() }
    }

    /// Whether the source became ready in the innermost run's mode.
    @discardableResult
    func markReady(_ core: EvSource1Core, events: Int32, _ state: inout LoopState) -> Bool {
        core.state.withLock { sourceState in
            guard sourceState.loop === self else { return false }
            guard markReady(core, events: events, &state, &sourceState), let running = state.runs.last?.mode else { return false }
            return sourceState.modes.contains(running)
        }
    }

    /// Records readiness that the watcher `token` of a bound source reported (loop's thread,
    /// loop's lock held).
    func markReady(_ core: EvSource1Core, events: Int32, fromWatcher token: Int, _ state: inout LoopState) {
        core.state.withLock { sourceState in
            guard sourceState.loop === self else {
                // Left the loop during the wait: its entry now waits for a handler that will not
                // come, and rests; rejoining before the next sync keeps the watcher, so re-arm then.
                state.watches.droppedReadiness = true
                if events & ReadinessBits.failed != 0 { forgetFailedWatcher(core, &state) }
                return
            }
            markReady(core, events: events, token: token, &state, &sourceState)
        }
    }

    /// Whether the source became ready now. `token`: the watcher that reported it, 0 for none.
    @discardableResult
    private func markReady(
        _ core: EvSource1Core, events: Int32, token: Int = 0, _ state: inout LoopState, _ sourceState: inout Source1State
    ) -> Bool {
        guard sourceState.isValid else { return false }
        let wasReady = sourceState.pendingEvents != 0
        sourceState.pendingEvents |= events
        if token != 0 || !wasReady { sourceState.readyToken = token }
        guard !wasReady else { return false }
        sourceState.readySequence = state.withTables { tables in
            tables.readySource1Count += 1
            tables.readySequence &+= 1
            return tables.readySequence
        }
        if case .fileDescriptor = core.kind { sourceState.readyStamp = recorder.userCodeStamp }
        for mode in sourceState.modes {
            if let modeState = state.existingModeState(mode) { enqueueReady(core, sourceState.readySequence, in: modeState, &state) }
        }
        setHint(Hint.readySource1s)
        return true
    }

    /// Puts `core`, ready under `sequence`, in `modeState`'s queue. The caller holds `core`'s
    /// lock, so its own entries are told live by `sequence` alone.
    private func enqueueReady(_ core: EvSource1Core, _ sequence: UInt64, in modeState: ModeState, _ state: inout LoopState) {
        let mode = modeState.mode
        modeState.readySources.append(core, sequence: sequence, readyCount: state.readySource1Count) { other, otherSequence in
            other === core ? otherSequence == sequence : isReady(other, otherSequence, in: mode)
        }
    }

    /// Whether a ready-queue entry still stands: `core` is bound here, in `mode`, and ready
    /// under `sequence`, not handled since. Loop's lock held, `core`'s not.
    private func isReady(_ core: EvSource1Core, _ sequence: UInt64, in mode: Mode) -> Bool {
        core.state.withLock { isReady($0, sequence, in: mode) }
    }

    @inline(__always)
    private func isReady(_ sourceState: borrowing Source1State, _ sequence: UInt64, in mode: Mode) -> Bool {
        sourceState.loop === self && sourceState.pendingEvents != 0 && sourceState.readySequence == sequence
            && !sourceState.isHeld && sourceState.modes.contains(mode)
    }

    /// Whether the libev libraries' readiness came before the mode's ready sources' (R38): then
    /// it is taken. Loop's lock held, the libraries' readiness due in the mode.
    @inline(never)
    private func takesLibevReadinessFirst(_ queue: ModeState, _ state: inout LoopState) -> Bool {
        guard libevReadinessComesFirst(queue, &state) else { return false }
        takeLibevReadiness(&state)
        return true
    }

    /// Whether the libev libraries' readiness came before every ready source of `queue`'s mode.
    private func libevReadinessComesFirst(_ queue: ModeState, _ state: inout LoopState) -> Bool {
        let mode = queue.mode
        let first = queue.readySources.first { isReady($0, $1, in: mode) }
        return state.libevReadySequence < first?.sequence ?? .max
    }

    /// A ready source was handled or left: with none left, the passes stop looking.
    private func noteReadinessTaken(_ state: inout LoopState) {
        state.withTables { tables in
            tables.readySource1Count -= 1
            if tables.readySource1Count == 0 && tables.libevReadySequence == 0 { clearHint(Hint.readySource1s) }
        }
    }

    /// Whether a version-1 source of `mode` is ready, so the next wait must not block.
    @inline(__always)
    func hasReadySource1(_ run: RunContext, _ state: inout LoopState) -> Bool {
        hasHint(Hint.readySource1s) && hasReadySource1(in: run.modeState, &state)
    }

    private func hasReadySource1(in modeState: ModeState, _ state: inout LoopState) -> Bool {
        let mode = modeState.mode
        return libevSourcesReady(in: mode, &state)
            || modeState.readySources.hasLive { isReady($0, $1, in: mode) }
    }

    /// R38: handles at most one ready version-1 source of `mode`, the one ready longest (the
    /// loop's ``EvLibevSource``s count as one, see EvRunLoop+LibevSources.swift), or the one the
    /// iteration holds (``holdOneVersion1Source(_:)``).
    @inline(__always)  // the usual answer, none ready, is one load
    func handleOneVersion1Source(_ run: RunContext) -> Bool {
        hasHint(Hint.readySource1s | Hint.heldSource1s) && handleReadyVersion1Source(run)
    }

    /// C70: where an AfterWaiting observer could run the loop nested, the iteration holds the
    /// source it will handle as soon as its wait returns, as CF's wait reads the port it woke
    /// for, and a nested run leaves that one alone. Its readiness stays with it, so a report of
    /// the same readiness meanwhile is no new one. The libev libraries' readiness is left to
    /// R20.11.
    @inline(__always)
    func holdOneVersion1Source(_ run: RunContext) {
        if hasHint(Hint.readySource1s) { holdReadyVersion1Source(run) }
    }

    @inline(never)
    private func holdReadyVersion1Source(_ run: RunContext) {
        let queue = run.modeState
        state.withLock { state in
            if libevSourcesReady(in: queue.mode, &state), libevReadinessComesFirst(queue, &state) { return }
            let front = claimFrontReadySource(queue) { sourceState in
                sourceState.isHeld = true
                return sourceState.readyToken
            }
            guard let (core, token) = front else { return }
            state.runs[run.frame].heldSource1 = HeldSource1(core)
            state.heldSource1Count += 1
            setHint(Hint.heldSource1s)
            if token != 0 { waiter.holdReadiness(token) }
        }
    }

    @inline(never)
    private func handleReadyVersion1Source(_ run: RunContext) -> Bool {
        let mode = run.mode
        let queue = run.modeState
        let picked: TakenSource1?? = state.withLock { state in
            if let held = state.runs[run.frame].heldSource1 {
                state.runs[run.frame].heldSource1 = nil
                state.heldSource1Count -= 1
                if state.heldSource1Count == 0 { clearHint(Hint.heldSource1s) }
                guard let taken = takeHeld(held.take(), in: mode, &state) else { return .none }
                return .some(taken)
            }
            if libevSourcesReady(in: mode, &state), takesLibevReadinessFirst(queue, &state) { return .some(nil) }
            guard let taken = takeFrontReadySource(queue, &state) else { return .none }
            return .some(taken)
        }
        guard let picked else { return false }
        guard let (core, readiness, token, stamp) = picked else {
            Callout.libevSource(on: self)
            return true
        }
        // Taken before the callout: readiness that comes while it runs (a nested run, say)
        // is new, and reported. Code that ran since it came may have closed the descriptor and
        // reused its number: then the handler gets the error alone, never the new file's turn.
        var events = readiness
        if token != 0 {
            let verify = events & ReadinessBits.failed == 0 && stamp != recorder.userCodeStamp
            if !waiter.readinessTaken(token, verify: verify) { events = ReadinessBits.failed }
        }
        if Callout.version1Source(core, events, on: self) {
            _ = state.withLock { state in markReady(core, events: events, &state) }  // awake: no wake-up
        }
        return true
    }

    /// The front live entry of `queue`, its readiness taken; stale entries before it are dropped.
    /// Loop's lock held.
    @inline(__always)  // the usual path's, in one piece with its caller's lock
    private func takeFrontReadySource(_ queue: ModeState, _ state: inout LoopState) -> TakenSource1? {
        guard let (core, readiness) = claimFrontReadySource(queue, { $0.takeReadiness() }) else { return nil }
        return taken(core, readiness, &state)
    }

    /// `core` with the readiness taken from it, counted as taken. Loop's lock held.
    @inline(__always)
    private func taken(
        _ core: EvSource1Core, _ readiness: (events: Int32, stamp: UInt64, token: Int), _ state: inout LoopState
    ) -> TakenSource1 {
        noteReadinessTaken(&state)
        return (core, readiness.events, readiness.token, readiness.stamp)
    }

    /// The front live entry of `queue`, out of the queue, with what `claim` made of its source's
    /// state under the same hold of the source's lock that finds it live; stale entries before
    /// it are dropped (as first(isLive:) does). Loop's lock held.
    @inline(__always)
    private func claimFrontReadySource<Claim>(
        _ queue: ModeState, _ claim: (inout Source1State) -> Claim
    ) -> (core: EvSource1Core, claim: Claim)? {
        let mode = queue.mode
        while let entry = queue.readySources.front {
            let claimed: Claim? = entry.core.state.withLock { sourceState in
                guard isReady(sourceState, entry.sequence, in: mode) else { return nil }
                return claim(&sourceState)
            }
            queue.readySources.removeFirst()
            guard let claimed else { continue }
            return (entry.core, claimed)
        }
        return nil
    }

    /// The readiness of the source the iteration held, taken if the source is still in this
    /// loop and in `mode`. One that left the running mode for others of its own goes back into
    /// their queues, to be handled when one of them runs (R37); one that left the loop took its
    /// readiness along. Loop's lock held.
    private func takeHeld(_ core: EvSource1Core, in mode: Mode, _ state: inout LoopState) -> TakenSource1? {
        let readiness: (events: Int32, stamp: UInt64, token: Int)? = core.state.withLock { sourceState in
            sourceState.isHeld = false
            guard sourceState.isValid, sourceState.loop === self, sourceState.pendingEvents != 0 else { return nil }
            guard sourceState.modes.contains(mode) else {
                for other in sourceState.modes {
                    if let modeState = state.existingModeState(other) { enqueueReady(core, sourceState.readySequence, in: modeState, &state) }
                }
                return nil
            }
            return sourceState.takeReadiness()
        }
        return readiness.map { taken(core, $0, &state) }
    }
}

/// Which loop watches each signal: one at a time (a delivery goes to one loop), with a count of
/// its sources for that signal.
///
/// The first claim routes the signal to the loop (``EvBackend/route(_:)``: the process's handler
/// is installed and deliveries wake that loop from then on); the last release unroutes it at
/// once, from whichever thread removes or invalidates the source, and puts back the disposition
/// the process had before (a handler, `SIG_IGN`, `SIG_DFL`). So a signal can move to another
/// loop as soon as the last source of the first one is gone.
enum SignalOwnership {
    private static let owners = Locked<[Int32: (loop: ObjectIdentifier, count: Int)]>([:])

    static func claim(_ signal: Int32, for loop: EvRunLoop) {
        require(!StackCapture.isCaptureSignal(signal), """
            EvRunLoop.add(_:forMode:): signal \(signal) is the one an EvStallMonitor captures stacks with \
            (its Configuration.backtraceSignal); watch another signal, or give the monitor another one
            """)
        owners.withLock { owners in
            let id = ObjectIdentifier(loop)
            if let owner = owners[signal] {
                require(
                    owner.loop == id,
                    "EvRunLoop.add(_:forMode:): signal \(signal) is already watched by another run loop; a signal can be watched by one loop at a time")
                owners[signal]!.count += 1
            } else {
                ForeignSignalOwner.refuseDispatchSource(for: signal, "EvRunLoop.add(_:forMode:)")
                owners[signal] = (id, 1)
                loop.waiter.route(signal)
            }
        }
    }

    static func release(_ signal: Int32, for loop: EvRunLoop) {
        owners.withLock { owners in
            guard let owner = owners[signal], owner.loop == ObjectIdentifier(loop) else { return }
            if owner.count > 1 {
                owners[signal] = (owner.loop, owner.count - 1)
            } else {
                owners[signal] = nil
                loop.waiter.unroute(signal)
            }
        }
    }
}
