import Synchronization

extension EvRunLoop {
    /// Runs `body` on the loop's thread in one of `modes` and returns its value, or rethrows its
    /// error (SwiftNIO's `submit`). Schedules a perform-block and wakes the loop; the calling task
    /// is suspended, no thread is blocked. For work whose result nobody awaits, use
    /// ``execute(inModes:_:)``.
    ///
    /// - Parameters:
    ///   - modes: the modes `body` may run in (``Mode/common`` = whichever common mode runs, R15).
    ///   - body: runs once, on the loop's thread.
    /// - Returns: what `body` returned.
    /// - Thread: any async context, the loop's own thread included (`body` then runs in the
    ///   loop's next blocks step).
    /// - Throws: ``EvPerformError/loopExited`` if the loop's thread has exited, or exits before
    ///   `body` ran (R4): the task is resumed, never left waiting. `CancellationError` if the task
    ///   is cancelled before `body` starts: the task is resumed at once, and `body` never runs.
    ///   Otherwise whatever `body` throws; once `body` has started, cancelling the task changes
    ///   nothing.
    /// - Precondition: `modes` is not empty.
    public func submit<T: Sendable>(
        inModes modes: [Mode] = [.common], _ body: @escaping @Sendable () throws -> T
    ) async throws -> T {
        require(!modes.isEmpty, "EvRunLoop.submit(inModes:_:): modes must not be empty")
        let completion = AsyncCompletion<T>()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                guard completion.install(continuation) else { return }
                // A block the loop refuses (its thread has exited) or drops with its thread is
                // released unrun: its sentinel then resumes the task with loopExited.
                _ = enqueueAndWake(.block(completion.block(body)), inModes: modes)
            }
        } onCancel: {
            completion.cancel()
        }
    }

    /// The fire dates of a repeating timer on this loop, as an asynchronous sequence.
    ///
    /// The timer is added to `modes` at once and fires on the loop's thread; the sequence keeps
    /// only the newest tick while nobody awaits (a slow consumer skips ticks, as a display link
    /// would). Ending the iteration (or dropping the sequence) invalidates the timer. The
    /// sequence ends when the loop's thread exits (R4) — at once if it already has — as
    /// ``waitUntilStopped()`` returns then.
    ///
    /// - Precondition: `interval` is greater than zero, `tolerance` is not negative (R47), and
    ///   `modes` is not empty.
    public func ticks(every interval: Duration, tolerance: Duration = .zero, inModes modes: [Mode] = [.common]) -> AsyncStream<ContinuousClock.Instant> {
        require(interval > .zero, "EvRunLoop.ticks(every:tolerance:inModes:): interval must be greater than zero (got \(interval))")
        require(tolerance >= .zero, "EvRunLoop.ticks(every:tolerance:inModes:): tolerance must not be negative (got \(tolerance))")
        // With no mode the timer would join none, and the sequence would wait for ever.
        require(!modes.isEmpty, "EvRunLoop.ticks(every:tolerance:inModes:): modes must not be empty")
        let (stream, continuation) = AsyncStream<ContinuousClock.Instant>.makeStream(bufferingPolicy: .bufferingNewest(1))
        guard let exitHook = addExitHook({ continuation.finish() }) else {
            continuation.finish()
            return stream
        }
        let timer = EvTimer(after: interval, interval: interval, tolerance: tolerance) { timer in
            continuation.yield(timer.fireDate)
        }
        // Safe after the hook: a stream the exit finished first still calls it when its last copy goes.
        continuation.onTermination = { _ in
            timer.invalidate()
            self.removeExitHook(exitHook)
        }
        for mode in modes { add(timer, forMode: mode) }
        wakeUp()
        return stream
    }

    /// Suspends until a run of this loop returns ``RunResult/stopped`` (after ``stop()``), or at
    /// once if the loop's thread has already exited. The runs that
    /// ``run(mode:until:orUntil:)`` ends itself, once its condition holds, do not count.
    ///
    /// Returns early, without throwing, if the task is cancelled (at once if it already is), as
    /// an `AsyncStream`'s iteration ends: a wait has nothing to undo, and a cancelled task must
    /// not hold up its parent (a task group, a service group's shutdown) until someone stops the
    /// loop. Check `Task.isCancelled` to tell a cancellation from a stop. The wait is forgotten
    /// then: the loop keeps nothing of it.
    public func waitUntilStopped() async {
        let id = Self.nextStopWaiterID.wrappingAdd(1, ordering: .relaxed).oldValue
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let registered = state.withLock { state in
                    // Under the lock the handler below takes: either it finds the wait, or the
                    // wait sees the cancellation.
                    guard !state.isDead, !Task.isCancelled else { return false }
                    state.madeWaiters().stopWaiters[id] = continuation
                    return true
                }
                if !registered { continuation.resume() }
            }
        } onCancel: {
            state.withLock { $0.waiters?.stopWaiters.removeValue(forKey: id) }?.resume()
        }
    }

    /// Tells the waits of ``waitUntilStopped()`` apart, so that a cancelled one can leave.
    private static let nextStopWaiterID = Atomic<UInt64>(0)

    /// Resumes everyone waiting in ``waitUntilStopped()``.
    func resumeStopWaiters() {
        let waiters = state.withLock { state -> [UInt64: CheckedContinuation<Void, Never>] in
            guard let waiters = state.waiters else { return [:] }
            defer { waiters.stopWaiters = [:] }
            return waiters.stopWaiters
        }
        for waiter in waiters.values { waiter.resume() }
    }
}
