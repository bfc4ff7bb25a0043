import Synchronization

extension EvRunLoop {
    /// Runs `body` on the loop's thread in one of `modes` and returns its value, or rethrows its
    /// error. Schedules a perform-block and wakes the loop. Call from any thread's async context.
    ///
    /// If the loop's thread has exited, `body` never runs and this never returns; use it with
    /// loops whose threads outlive the call (a worker thread, the main loop).
    public func execute<T: Sendable, E: Error>(
        inModes modes: [Mode] = [.common], _ body: @escaping @Sendable () throws(E) -> T
    ) async throws(E) -> T {
        let result: Result<T, E> = await withCheckedContinuation { continuation in
            perform(inModes: modes) {
                do throws(E) {
                    continuation.resume(returning: .success(try body()))
                } catch {
                    continuation.resume(returning: .failure(error))
                }
            }
            wakeUp()
        }
        return try result.get()
    }

    /// The fire dates of a repeating timer on this loop, as an asynchronous sequence.
    ///
    /// The timer is added to `modes` at once and fires on the loop's thread; the sequence keeps
    /// only the newest tick while nobody awaits (a slow consumer skips ticks, as a display link
    /// would). Ending the iteration (or dropping the sequence) invalidates the timer. The
    /// sequence ends when the loop's thread exits (R4) — at once if it already has — as
    /// ``waitUntilStopped()`` returns then.
    ///
    /// - Precondition: `interval` is greater than zero.
    public func ticks(every interval: Duration, tolerance: Duration = .zero, inModes modes: [Mode] = [.common]) -> AsyncStream<ContinuousClock.Instant> {
        require(interval > .zero, "EvRunLoop.ticks(every:tolerance:inModes:): interval must be greater than zero (got \(interval))")
        let (stream, continuation) = AsyncStream<ContinuousClock.Instant>.makeStream(bufferingPolicy: .bufferingNewest(1))
        guard let exitHook = addExitHook({ continuation.finish() }) else {
            continuation.finish()
            return stream
        }
        let timer = EvTimer(after: interval, interval: interval, tolerance: tolerance) { timer in
            continuation.yield(timer.fireDate)
        }
        continuation.onTermination = { _ in
            timer.invalidate()
            self.removeExitHook(exitHook)
        }
        for mode in modes { add(timer, forMode: mode) }
        wakeUp()
        return stream
    }

    /// Suspends until a run of this loop returns ``RunResult/stopped`` (after ``stop()``), or at
    /// once if the loop's thread has already exited.
    public func waitUntilStopped() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let registered = state.withLock { state in
                guard !state.isDead else { return false }
                state.stopWaiters.append(continuation)
                return true
            }
            if !registered { continuation.resume() }
        }
    }

    /// Resumes everyone waiting in ``waitUntilStopped()``.
    func resumeStopWaiters() {
        let waiters = state.withLock { state in
            defer { state.stopWaiters = [] }
            return state.stopWaiters
        }
        for waiter in waiters { waiter.resume() }
    }
}
