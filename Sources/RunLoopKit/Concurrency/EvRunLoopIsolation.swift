/// The serial executor that actors pinned to a loop hold (``EvRunLoopExecutor/asUnownedSerialExecutor()``):
/// one per loop, whichever ``EvRunLoopExecutor`` names it, so that the runtime compares them by
/// identity. Its jobs run isolated to the loop, on the loop's thread or, once that has exited, on
/// the queue that stands in for it.
///
/// `@unchecked Sendable`: `loop` is set once, in the loop's `init`, before the object is shared.
final class EvRunLoopIsolation: SerialExecutor, @unchecked Sendable {
    /// The loop this is the executor of. Unowned and unchecked (no reference count on an actor's
    /// hop): the loop owns this object, and a job queued or run here keeps the loop alive.
    unowned(unsafe) var loop: EvRunLoop!

    init() {}

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        // As EvRunLoopExecutor.enqueue: the job itself is queued, or handed to the stand-in queue.
        if !loop.enqueueAndWake(.isolatedJob(job, self), inModes: [.common]) { runOrphaned(job) }
    }

    /// Runs `job` isolated to the loop, on the calling thread: the loop's or its stand-in queue.
    func run(_ job: UnownedJob) {
        job.runSynchronously(on: asUnownedSerialExecutor())
    }

    /// Runs `job` on the serial queue that stands in for the exited loop's thread.
    func runOrphaned(_ job: UnownedJob) {
        let loop: EvRunLoop = loop  // kept alive for the job's isolation checks
        EvRunLoopExecutor.orphanage.async { withExtendedLifetime(loop) { self.run(job) } }
    }

    func asUnownedSerialExecutor() -> UnownedSerialExecutor {
        UnownedSerialExecutor(ordinary: self)
    }

    /// See ``EvRunLoopExecutor/isIsolatingCurrentContext()``.
    func isIsolatingCurrentContext() -> Bool? {
        runsJobsOnCallingThread ? true : nil
    }

    /// Whether the calling thread is where the loop's jobs run now.
    private var runsJobsOnCallingThread: Bool {
        // The exiting thread still owns the loop during its teardown, while the stand-in queue
        // may already run the jobs the teardown handed on.
        if ThreadRegistry.isOwnedByCallingThread(loop) { return !loop.threadHasExited }
        return EvRunLoopExecutor.isOnStandInQueue && loop.threadHasExited
    }

    /// See ``EvRunLoopExecutor/checkIsolated()``.
    func checkIsolated() {
        if loop.threadHasExited {
            require(EvRunLoopExecutor.isOnStandInQueue, """
                EvRunLoopExecutor.checkIsolated(): the loop's thread has exited (R4), so the \
                executor's jobs run on the dispatch queue that stands in for it, and this is not \
                that queue
                """)
            return
        }
        // Not preconditionOwnThread(_:), whose message is about running the loop.
        require(ThreadRegistry.isOwnedByCallingThread(loop), """
            EvRunLoopExecutor.checkIsolated(): called off the loop's thread (assumeIsolated on an \
            actor pinned to the loop, say); the executor's jobs run only on its loop's thread
            """)
    }
}
