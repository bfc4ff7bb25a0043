extension EvRunLoop {
    /// What one run needs to remember (CF's per-run data).
    struct RunContext {
        let mode: Mode
        /// The running mode's contents, looked up once per run (modes are never removed).
        let modeState: ModeState
        /// Index of this run's frame in ``LoopState/runs`` (nested runs push above it).
        let frame: Int
        let deadline: MonotonicTime
        /// A timeout of zero or less: one iteration that only looks (R25).
        let pollOnly: Bool
        let returnAfterSourceHandled: Bool
        /// The main loop in a common mode, not nested in a main-queue block: it services
        /// libdispatch's main queue, which also keeps the mode from being empty (R17, R60).
        let servicesMainQueue: Bool
        /// ``EvRunLoop/stopRequests`` when the run was entered.
        let stopRequestsAtEntry: UInt64
    }

    /// Runs the loop once in `mode` (CFRunLoopRunInMode): Entry, iterations until a result
    /// applies, Exit (R19–R25).
    ///
    /// - Parameters:
    ///   - mode: the mode to run; a mode with no sources, timers or pending blocks returns
    ///     ``RunResult/finished`` at once, with no observer called (R16, R18).
    ///   - timeout: how long to run; `nil` for no deadline; zero or less runs exactly one
    ///     iteration that does not sleep (R25). Huge values never overflow (R26).
    ///   - returnAfterSourceHandled: return ``RunResult/handledSource`` after the first source
    ///     is handled (R24, R34).
    /// - Returns: why the run ended (R24).
    /// - Precondition: called on the loop's own thread (R5); `mode` is not ``Mode/common`` (R10).
    @discardableResult
    public func run(mode: Mode = .default, timeout: Duration? = nil, returnAfterSourceHandled: Bool = false) -> RunResult {
        require(mode != .common, "EvRunLoop.run(mode:timeout:returnAfterSourceHandled:): the .common pseudo-mode cannot be run (R10)")
        if !ThreadRegistry.isOwnedByCallingThread(self) {
            // A dead loop has no thread that owns it: say that rather than blame the caller's (R4).
            requireAlive(state.withLock { $0.isDead })
            preconditionOwnThread("EvRunLoop.run(mode:timeout:returnAfterSourceHandled:)")
        }
        let pollOnly = timeout.map { $0 <= .zero } ?? false
        // The clock only when a deadline needs it (a poll's has always passed, R25).
        let deadline = timeout.map { pollOnly ? MonotonicTime(nanoseconds: 0) : waiter.now().adding($0) } ?? .distantFuture
        let (isDead, entered): (Bool, RunContext?) = state.withLock { state in
            // Its own thread can still reach a dead loop, from an exit hook (R4).
            if state.isDead { return (true, nil) }
            let servicesMainQueue = isMain && state.isCommon(mode) && !state.isServicingMainQueue
            guard let modeState = state.modeStateForRun(mode), servicesMainQueue || !isEmpty(modeState, otherCommonModes: state.otherCommonModes) else { return (false, nil) }
            state.runs.append(RunFrame(mode: mode))
            return (false, RunContext(
                mode: mode, modeState: modeState, frame: state.runs.count - 1, deadline: deadline, pollOnly: pollOnly,
                returnAfterSourceHandled: returnAfterSourceHandled, servicesMainQueue: servicesMainQueue,
                stopRequestsAtEntry: stopRequests.load(ordering: .relaxed)))
        }
        requireAlive(isDead)
        guard let run = entered else { return .finished }
        if run.frame == 0 { recorder.outermostRunBegins() }
        // C52: a run accepts wake-ups from its start (Entry included); the enclosing run's state,
        // or "not running", comes back after its Exit.
        let enclosingAcceptsWakeUps = acceptsWakeUps.exchange(true, ordering: .sequentiallyConsistent)
        notifyObservers(.entry, run)
        let result: RunResult
        if let libevWaiter {
            result = libevWaiter._withUnsafeGuaranteedRef { iterate(run, $0) }
        } else {
            result = iterate(run, waiter)
        }
        notifyObservers(.exit, run)
        if run.frame == 0 { recorder.outermostRunEnds() }
        let stoppedQuietly = state.withLock { state in
            defer { state.runs.removeLast() }
            return state.runs[run.frame].isStoppedQuietly
        }
        acceptsWakeUps.store(enclosingAcceptsWakeUps, ordering: .sequentiallyConsistent)
        if result == .stopped && !stoppedQuietly { resumeStopWaiters() }
        return result
    }

    /// The iterations of one run, in CF's order (R20), until a result applies (R24). `waiter` is
    /// the loop's own (``waiter``), as its concrete type where it is known.
    private func iterate<Waiter: LoopWaiter>(_ run: RunContext, _ waiter: Waiter) -> RunResult {
        // As CF's __CFRunLoopRun: a stop from an Entry observer ends the run before its first
        // iteration (R27). Only a stop made since the run was entered can have marked it.
        if stopRequests.load(ordering: .acquiring) != run.stopRequestsAtEntry,
           state.withLock({ $0.runs[run.frame].isStopped }) { return .stopped }
        // C114: CF starts every run as if the previous pass had serviced the main queue, so the
        // first pass never takes the shortcut below: pending main-queue work is found by the wait.
        var servicedMainQueue = true
        var stopsSeen = run.stopRequestsAtEntry
        var view = PassView()
        while true {
            recorder.bump(recorder.iterations)
            acceptsWakeUps.store(true, ordering: .sequentiallyConsistent)  // C52: until the wait returns
            notifyObservers(.beforeTimers, run)
            notifyObservers(.beforeSources, run)
            performBlocks(run)
            var handledSource = performSignalledSources(run)
            if handledSource { performBlocks(run) }
            let merged = handledSource && mergesPollIntoNextSleep(run, &view, stopsSeen, waiter)
            let poll = (handledSource || run.pollOnly) && !merged
            let mainQueueSignalled: Bool
            if run.servicesMainQueue && !servicedMainQueue && observesWaiting() && waiter.peekMainQueueSignal() {
                // R20.7, C114: straight to handling, no sleep; wake-ups end here as after a wait.
                stopAcceptingWakeUps()
                mainQueueSignalled = true
            } else {
                if !poll { notifyObservers(.beforeWaiting, run) }
                mainQueueSignalled = sleep(run, poll: poll, merged: merged, &view, waiter)
                if !poll && observes(.afterWaiting) {
                    // C70: the source the wait woke for is this iteration's; a run nested in an
                    // AfterWaiting observer leaves it alone.
                    if !mainQueueSignalled { holdOneVersion1Source(run) }
                    notifyObservers(.afterWaiting, run)
                }
            }
            if refreshed(&view, run).hasTimers {
                let now = waiter.now()
                if now >= view.timersDueFrom { fireDueTimers(run, &view, at: now, waiter) }
            }
            // The signal is taken only now: until it is, a run nested in an AfterWaiting observer
            // or a timer's handler finds it and services the work (else it could sleep with the
            // work pending); then it is gone here, and this pass services nothing.
            servicedMainQueue = mainQueueSignalled && run.servicesMainQueue && waiter.takeMainQueueSignal()
            if servicedMainQueue {
                serviceMainQueue()
                handledSource = true
            } else if handleOneVersion1Source(run) {
                handledSource = true
            }
            performBlocks(run)
            let mayBeEmpty = !run.servicesMainQueue && !refreshed(&view, run).hasItems
            if let result = result(of: run, handledSource: handledSource, mayBeEmpty: mayBeEmpty, stopsSeen: &stopsSeen, waiter) { return result }
        }
    }

    /// Whether an observer watches BeforeWaiting or AfterWaiting: only then can anyone tell the
    /// main-queue shortcut (R20.7) from the sleep, which finds the same work at once; without
    /// one the shortcut's look, a system call in every iteration after a handled source, is saved.
    @inline(__always)
    private func observesWaiting() -> Bool {
        observes([.beforeWaiting, .afterWaiting])
    }

    /// Whether an observer of any of `activities` is in the loop, in any mode.
    @inline(__always)
    private func observes(_ activities: Activity) -> Bool {
        observedActivities.load(ordering: .relaxed) & activities.rawValue != 0
    }

    /// R60: drains libdispatch's main queue; a run nested in one of its blocks leaves it alone.
    private func serviceMainQueue() {
        state.withLock { $0.isServicingMainQueue = true }
        Callout.mainQueue(waiter, on: self)
        state.withLock { $0.isServicingMainQueue = false }
    }

    /// Whether the poll after a handled source (R20.9) can be the next pass's sleep instead. CF
    /// would poll, end the pass and begin the next one only to sleep; when no callout can run in
    /// between, nothing tells the two apart: no observer of the steps between, no block or
    /// signalled source for the next pass, no timer due, no result to return, no libev library
    /// whose callbacks a poll runs. The sleep ends at once for whatever the poll would have found
    /// (a wake-up, a ready source, a stop, main-queue work: with no observer of the wait the next
    /// pass makes no shortcut look, see observesWaiting), and one system call or more is saved.
    @inline(never)  // once per handled source: kept out of the pass, whose registers every run pays for
    private func mergesPollIntoNextSleep<Waiter: LoopWaiter>(
        _ run: RunContext, _ view: inout PassView, _ stopsSeen: UInt64, _ waiter: Waiter
    ) -> Bool {
        let stepsBetween: Activity = [.beforeWaiting, .afterWaiting, .beforeTimers, .beforeSources]
        guard !run.pollOnly, !run.returnAfterSourceHandled,
              observedActivities.load(ordering: .relaxed) & stepsBetween.rawValue == 0,
              !hasHint(Hint.signalledSources | (run.mode == .default ? Hint.defaultBlocks : Hint.blocks)),
              signalInbox.isEmpty, stopRequests.load(ordering: .acquiring) == stopsSeen
        else { return false }
        let view = refreshed(&view, run)
        guard view.hasItems else { return false }  // R16: the pass's end finds the mode empty
        // The poll runs the libev libraries' prepare and check callbacks, which may leave work
        // for the steps between (a source signalled, a block) with no wake-up.
        guard !view.hasLibevSources else { return false }
        guard view.hasTimers || run.deadline != .distantFuture else { return true }
        let now = waiter.now()
        return now < run.deadline && (!view.hasTimers || now < view.timersDueFrom)
    }

    /// R20.9, R22: sleeps until the earliest of the mode's next timer and the run's deadline,
    /// a wake-up, a stop, a version-1 source or (main loop) the main queue; with `poll`, only
    /// looks. `merged`: the sleep stands for the next pass too (``mergesPollIntoNextSleep``),
    /// which counts as an iteration. Returns whether the main queue signalled work (the signal is
    /// left set).
    @_transparent  // once per pass: a call would save and restore registers each time
    private func sleep<Waiter: LoopWaiter>(_ run: RunContext, poll: Bool, merged: Bool, _ view: inout PassView, _ waiter: Waiter) -> Bool {
        if isMain { waiter.watchMainQueue(run.servicesMainQueue) }
        // A poll takes the lock only to bring the watchers in step.
        let sleeps = poll && refreshed(&view, run).watchersInStep ? false : state.withLock { state in
            syncWatchers(for: run.mode, &state)
            // A ready version-1 source (a port with messages) is like a kernel event already there.
            // A run already stopped must not sleep: the wake-up of its stop() may have been taken
            // by a run nested in the same iteration (R27); nor may work handed over with a
            // wake-up wait, whose wake-up such a run may have dropped (C52).
            if poll || hasReadySource1(run, &state) || waiter.hasReady || state.runs[run.frame].isStopped
                || hasWokenBlocks(run, &state)
            {
                return false
            }
            // Planned under the lock: a timer added from another thread from now on moves it (R44).
            state.plannedRunDeadline = run.deadline
            waiter.planSleep(sleepDeadline(run))
            return true
        }
        let reasons: WakeReasons
        if sleeps {
            if merged { recorder.bump(recorder.iterations) }
            waiting.store(true, ordering: .releasing)
            let asleepSince = recorder.sleepBegins()
            reasons = waiter.sleep()
            recorder.sleepEnds(asleepSince)
            stopAcceptingWakeUps()  // C52: the post-wait half
            waiting.store(false, ordering: .releasing)
        } else {
            reasons = waiter.poll()
            stopAcceptingWakeUps()  // C52: a poll counts as the wait
        }
        if waiter.hasReady { collectReadiness() }
        return reasons.contains(.mainQueue)
    }

    /// When the sleep must end by itself: the mode's next timer or the run's timeout, whichever
    /// is first (loop thread, lock held).
    @inline(__always)
    private func sleepDeadline(_ run: RunContext) -> SleepDeadline {
        guard run.modeState.timerCount > 0 else { return SleepDeadline(date: run.deadline) }
        let next = nextTimerWakeUp(run.modeState)
        guard next.date <= run.deadline && next.date != .distantFuture else { return SleepDeadline(date: run.deadline) }
        return SleepDeadline(date: next.date, interval: next.interval, precise: preciseTimers.load(ordering: .relaxed))
    }

    /// C52: the pass's wait has returned, and wake-ups are dropped until the next pass begins.
    /// A release store, not a sequentially consistent one (a locked instruction on x86-64, on
    /// the path from a wake-up to its callout): only the store at a pass's start pairs with
    /// ``wakeUp()``'s load to order work posted before it. A wake-up made between the wait's
    /// return and this store reaches the libev layer whatever the ordering (as in CF); a
    /// weaker store only lets one made a few nanoseconds later do the same.
    @inline(__always)
    private func stopAcceptingWakeUps() {
        acceptsWakeUps.store(false, ordering: .releasing)
    }

    private func requireAlive(_ isDead: Bool) {
        require(!isDead, "EvRunLoop.run(mode:timeout:returnAfterSourceHandled:): this loop's thread has exited (R4)")
    }

    /// R24: the first result that holds after an iteration, or `nil` to go on.
    ///
    /// Without the lock when nothing can have changed the answer: no stop was requested since
    /// the run last looked (`stopsSeen`, a ``stopRequests`` count), and the mode holds a source
    /// or a timer (`mayBeEmpty` false), so it cannot be empty (R16). A stop or removal made by
    /// another thread at the same moment is then seen at the next pass's check, as if made just
    /// after this one (which taking the lock could not rule out either).
    @inline(__always)
    private func result<Waiter: LoopWaiter>(
        of run: RunContext, handledSource: Bool, mayBeEmpty: Bool, stopsSeen: inout UInt64, _ waiter: Waiter
    ) -> RunResult? {
        if handledSource && run.returnAfterSourceHandled { return .handledSource }
        if run.pollOnly { return .timedOut }  // R25: CF's deadline of a poll is in the past
        if run.deadline != .distantFuture, waiter.now() >= run.deadline { return .timedOut }
        let stops = stopRequests.load(ordering: .acquiring)
        if stops == stopsSeen && !mayBeEmpty { return nil }
        stopsSeen = stops
        return stoppedOrFinished(run)
    }

    /// The lock-taking half of ``result(of:handledSource:mayBeEmpty:stopsSeen:_:)``.
    private func stoppedOrFinished(_ run: RunContext) -> RunResult? {
        state.withLock { state in
            if state.runs[run.frame].isStopped { return .stopped }
            // R17, C116: asked at every check, as CF does, so a mode of the main loop made common
            // during its run counts the main queue from then on (which this run does not service).
            if isMain && state.isCommon(run.mode) && !state.isServicingMainQueue { return nil }
            return isEmpty(run.modeState, otherCommonModes: state.otherCommonModes) ? .finished : nil
        }
    }

    /// Runs the default mode until a run is stopped or finds the mode empty (CFRunLoopRun, R31).
    /// Unlike Foundation's `RunLoop.run()`, ``stop()`` ends it.
    public func run() {
        while true {
            let result = run(mode: .default)
            if result == .stopped || result == .finished { return }
        }
    }

    /// Runs the default mode, one source at a time, until `deadline` passes or a run finds the
    /// mode empty (Foundation's `run(until:)`, R32): a date already past still makes one run that
    /// only looks (R25), and, as in Foundation, ``stop()`` ends only the current single run.
    /// Returns the last run's result.
    @discardableResult
    public func run(until deadline: ContinuousClock.Instant) -> RunResult {
        while true {
            let result = run(mode: .default, timeout: ContinuousClock.now.duration(to: deadline), returnAfterSourceHandled: true)
            if result == .finished || ContinuousClock.now >= deadline { return result }
        }
    }
}
