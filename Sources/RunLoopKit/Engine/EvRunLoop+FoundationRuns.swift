extension EvRunLoop {
    /// An instant so far ahead that it never comes (Foundation's `Date.distantFuture`): what
    /// ``limitDate(forMode:)`` returns for a mode that has no timer.
    public static var distantFuture: ContinuousClock.Instant { MonotonicTime.distantFuture.instant }

    /// Runs `mode` until ``stop()`` is called, `deadline` passes, or the mode is found empty:
    /// one run (``run(mode:timeout:returnAfterSourceHandled:)``) without returning after handled
    /// sources. The form for a daemon's loop: a SIGTERM handler's ``stop()`` ends it at once,
    /// where ``run(until:)``, as Foundation's, carries on until its date (C119).
    ///
    /// - Parameters:
    ///   - mode: the mode to run; ``Mode/default`` by default.
    ///   - deadline: when to give up; `nil` (the default) for never.
    /// - Returns: ``RunResult/stopped`` after ``stop()``, ``RunResult/timedOut`` at `deadline`,
    ///   ``RunResult/finished`` when the mode is (or becomes) empty (R16, R24).
    /// - Precondition: called on the loop's own thread (R5); `mode` is not ``Mode/common`` (R10).
    @discardableResult
    public func runUntilStopped(mode: Mode = .default, deadline: ContinuousClock.Instant? = nil) -> RunResult {
        run(mode: mode, timeout: deadline.map { ContinuousClock.now.duration(to: $0) })
    }

    /// Runs `mode` once, returning after one handled source or at `limit`, as Foundation's
    /// `run(mode:before:)` (C118).
    ///
    /// - Parameters:
    ///   - mode: the mode to run.
    ///   - limit: when to return at the latest; a date already past makes one run that only
    ///     looks (R25).
    /// - Returns: `false`, without running, when this is not the calling thread's loop or `mode`
    ///   is empty (R16, the main loop's main-queue rule included, R17) or ``Mode/common``;
    ///   otherwise `true`, whatever the run's result was (timed out and stopped included).
    @discardableResult
    public func run(mode: Mode, before limit: ContinuousClock.Instant) -> Bool {
        guard isCurrent, mode != .common, !isEmptyForRun(mode) else { return false }
        run(mode: mode, timeout: ContinuousClock.now.duration(to: limit), returnAfterSourceHandled: true)
        return true
    }

    /// Polls `mode` once, then tells when the loop next needs to run it, as Foundation's
    /// `limitDate(forMode:)` (C122): what a loop driven from another loop's callouts needs.
    ///
    /// - Parameter mode: the mode to poll.
    /// - Returns: `nil` when this is not the calling thread's loop, when `mode` is
    ///   ``Mode/common`` or, after the poll, empty; otherwise the mode's next timer fire date
    ///   (``nextTimerFireDate(forMode:)``), or ``distantFuture`` when it has no timer.
    public func limitDate(forMode mode: Mode) -> ContinuousClock.Instant? {
        guard isCurrent, mode != .common else { return nil }
        run(mode: mode, timeout: .zero, returnAfterSourceHandled: true)
        guard !isEmptyForRun(mode) else { return nil }
        return nextTimerFireDate(forMode: mode) ?? Self.distantFuture
    }

    /// The fire date of the timer of `mode` with the earliest deadline, firing or not
    /// (CF's `CFRunLoopGetNextTimerFireDate`, C84). Safe from any thread.
    ///
    /// - Parameter mode: the mode to look at.
    /// - Returns: that fire date; `nil` when the mode has no timer, does not exist or is
    ///   ``Mode/common``.
    public func nextTimerFireDate(forMode mode: Mode) -> ContinuousClock.Instant? {
        guard mode != .common else { return nil }
        let next: MonotonicTime? = state.withLock { state in
            state.existingModeState(mode)?.timers.peekLive()?.deadline
        }
        return next?.instant
    }

    /// Whether a run of `mode` would return ``RunResult/finished`` at once (R16, R17).
    private func isEmptyForRun(_ mode: Mode) -> Bool {
        state.withLock { state in
            guard let modeState = state.existingModeState(mode) else { return true }
            let servicesMainQueue = isMain && state.isCommon(mode) && !state.isServicingMainQueue
            return !servicesMainQueue && isEmpty(modeState, otherCommonModes: state.otherCommonModes)
        }
    }
}
