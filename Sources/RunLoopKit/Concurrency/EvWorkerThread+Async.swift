extension EvWorkerThread {
    /// Stops the worker from asynchronous code without blocking a thread of the cooperative
    /// pool: as ``stop(waitUntilExited:)``, work submitted before this call still runs, in order,
    /// then the run loop ends; this suspends until the worker's run loop has been torn down on its
    /// thread (its items released, its descriptors closed, R4). The thread itself is not joined
    /// here (that would block): it finishes exiting on its own, joined from a dispatch queue; a
    /// later ``stop(waitUntilExited:)`` waits until it is gone.
    ///
    /// Stopping twice, or a worker never started, returns at once; so does stopping a worker whose
    /// thread is already past its run loop's end.
    ///
    /// - Thread: any task. Not from a work item or a job running on the worker's own loop: that
    ///   would wait for the loop it is running on (use ``stop(waitUntilExited:)`` there).
    public func stop() async {
        // The loop as the stop found it, after any start() in progress has made it.
        await core.stop(waitUntilExited: false)?.untilTornDown()
    }

    /// Suspends until the worker's run loop has been torn down on its thread, whoever stopped it
    /// (``stop()`` or ``stop(waitUntilExited:)`` from anywhere, or the last reference dropped).
    /// Returns at once when the worker has no loop: never started, or torn down already.
    ///
    /// - Thread: any task. Not from a work item or a job running on the worker's own loop: that
    ///   would wait for the loop it is running on.
    public func waitUntilStopped() async {
        await runLoop?.untilTornDown()
    }
}
