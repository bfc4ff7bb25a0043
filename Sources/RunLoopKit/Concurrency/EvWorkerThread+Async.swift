extension EvWorkerThread {
    /// Stops the worker from asynchronous code without blocking a thread of the cooperative
    /// pool: as ``stop(waitUntilExited:)``, work submitted before this call still runs, in order,
    /// then the run loop ends; this suspends until the worker's run loop has been torn down on its
    /// thread (its items released, its descriptors closed, R4). The thread itself is not joined
    /// here (that would block): it finishes exiting on its own, joined from a dispatch queue; a
    /// later ``stop(waitUntilExited:)`` waits until it is gone.
    ///
    /// Stopping a worker never started, or one whose loop has been torn down, returns at once;
    /// stopping twice waits as the first stop does. A cancellation of the task does not cut it
    /// short: it returns once the loop is torn down.
    ///
    /// - Thread: any task. A job on the worker's own loop (an actor pinned to it) suspends while
    ///   the loop ends, and goes on once it is torn down, on the queue that stands in for the
    ///   exited thread (``EvRunLoopExecutor``).
    public func stop() async {
        // The loop as the stop found it, after any start() in progress has made it.
        await core.stop(waitUntilExited: false)?.untilTornDown()
    }

    /// Suspends until the worker's run loop has been torn down on its thread, whoever stopped it
    /// (``stop()`` or ``stop(waitUntilExited:)`` from anywhere, or the last reference dropped).
    /// Returns at once when the worker has no loop: never started, or torn down already.
    ///
    /// Returns early, without throwing, if the task is cancelled, as
    /// ``EvRunLoop/waitUntilStopped()`` does: check `Task.isCancelled` to tell. The worker goes
    /// on running; ``stop()``, which has work to finish, is not cut short by a cancellation.
    ///
    /// - Thread: any task; a job on the worker's own loop goes on as after ``stop()``.
    public func waitUntilStopped() async {
        await core.shared.withLock { $0.startedLoop }?.untilTornDownOrCancelled()
    }
}
