extension EvRunLoop {
    /// Runs `mode` until `condition` holds or `deadline` passes, and returns whether `condition`
    /// held: the one call a test needs to wait for something the loop does, where XCTest's
    /// `waitForExpectations` would run only Foundation's run loop.
    ///
    /// ```swift
    /// let fired = loop.run(until: .now + .seconds(5), orUntil: { ticks == 3 })
    /// ```
    ///
    /// The loop sleeps as in any run; it never spins. `condition` is checked first, then after
    /// each handled source (the run returns after it, R24) and before each sleep, so a timer, a
    /// block or an observer that makes it true ends the wait without another wake-up. A change
    /// made by another thread is seen when the loop next wakes: follow it with ``wakeUp()``, or
    /// make it with ``execute(inModes:_:)``, which wakes the loop. As with ``run(until:)``, a
    /// ``stop()`` ends only the run in progress and the wait goes on.
    ///
    /// - Parameters:
    ///   - mode: the mode to run; ``Mode/default`` by default.
    ///   - deadline: when to give up; a date already past makes one run that only looks (R25).
    ///   - condition: what to wait for; called on this thread, possibly more than once per pass,
    ///     so it should only look.
    /// - Returns: `true` as soon as `condition` holds; `false` once `deadline` has passed, or at
    ///   once when the mode is (or becomes) empty, since nothing could then run (R16).
    /// - Precondition: called on the loop's own thread (R5); `mode` is not ``Mode/common`` (R10).
    public func run(mode: Mode = .default, until deadline: ContinuousClock.Instant, orUntil condition: () -> Bool) -> Bool {
        require(mode != .common, "EvRunLoop.run(mode:until:orUntil:): the .common pseudo-mode cannot be run (R10)")
        preconditionOwnThread("EvRunLoop.run(mode:until:orUntil:)")
        if condition() { return true }
        return withoutActuallyEscaping(condition) { condition in
            let check = ConditionCheck(condition)
            defer { check.release() }
            // Stops this wait's own run, never one nested in a callout (whose result is its owner's),
            // and quietly: no stop() was made, so waitUntilStopped() goes on waiting.
            let depth = state.withLock { $0.runs.count }
            let checker = EvObserver(activities: .beforeWaiting, order: .max) { _, _ in
                guard self.state.withLock({ $0.runs.count }) == depth + 1, check.holds() else { return }
                self.stopInnermostRun(quietly: true)
            }
            add(checker, forMode: mode)
            defer { checker.invalidate() }
            while true {
                let result = run(mode: mode, timeout: ContinuousClock.now.duration(to: deadline), returnAfterSourceHandled: true)
                if check.held || condition() { return true }
                if result == .finished || ContinuousClock.now >= deadline { return false }
            }
        }
    }
}

/// The condition of ``EvRunLoop/run(mode:until:orUntil:)``, for its observer.
///
/// `@unchecked Sendable`: made, called and released on the loop's thread only, inside the call
/// that owns the condition; ``release()`` drops it before that call returns.
private final class ConditionCheck: @unchecked Sendable {
    private var condition: (() -> Bool)?
    /// Whether the condition held when the observer last looked.
    private(set) var held = false

    init(_ condition: @escaping () -> Bool) { self.condition = condition }

    func holds() -> Bool {
        held = condition?() ?? false
        return held
    }

    func release() { condition = nil }
}
