import Dispatch

/// A Swift concurrency executor backed by a run loop: jobs run on the loop's thread, one at a
/// time, in the loop's common modes (as perform-blocks, R15, R54).
///
/// Pin an actor to a run-loop thread by keeping an executor and returning it as the actor's
/// executor:
///
/// ```swift
/// actor Renderer {
///     let executor: EvRunLoopExecutor
///     init(loop: EvRunLoop) { executor = EvRunLoopExecutor(loop) }
///     nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }
/// }
/// ```
///
/// The executor is also a `TaskExecutor`, for `Task(executorPreference:)`: such a task's jobs run
/// as a task executor's, each once, in their place among the loop's blocks (R55), as an actor's
/// do. Jobs only run while the loop runs a common mode, in the order they were queued whatever
/// their tasks' priorities (the executor neither reorders nor escalates). A run nested in a job
/// (an actor's method that runs the loop) runs no other job of the loop's executors until that
/// job returns.
///
/// The loop's thread is the executor's context whatever runs on it: in a timer's handler, an
/// observer or a perform-block as in the executor's jobs, `assumeIsolated` on a pinned actor
/// passes, and so does a cast through a conformance isolated to a global actor pinned to the loop
/// (``isIsolatingCurrentContext()``).
///
/// Once the loop's thread has exited (R4), jobs sent to it — and jobs it dropped with its
/// thread — run one at a time on a serial dispatch queue instead, off the loop's thread: an
/// `await` on a pinned actor returns rather than waiting forever. That queue is one for the
/// whole process, so executors of the same exited loop still share one exclusive context
/// (``isSameExclusiveExecutionContext(other:)``).
///
/// Every executor of a loop hands its actors the same serial executor, the loop's own: actors
/// pinned through different executors of one loop call each other without a hop, and the
/// runtime compares them by identity alone, so that `Actor.withSerialExecutor(_:)` works on them.
public final class EvRunLoopExecutor: SerialExecutor, TaskExecutor {
    /// The loop the jobs run on.
    public let loop: EvRunLoop
    /// Where jobs run once their loop's thread has exited: one serial queue for every executor,
    /// so that executors of the same loop — the same exclusive context — stay serial.
    static let orphanage: DispatchQueue = {
        let queue = DispatchQueue(label: "RunLoopKit.EvRunLoopExecutor.orphaned")
        queue.setSpecific(key: orphanageMark, value: true)
        return queue
    }()
    private static let orphanageMark = DispatchSpecificKey<Bool>()

    /// Whether the caller is a job on the queue that stands in for exited loops' threads.
    static var isOnStandInQueue: Bool { DispatchQueue.getSpecific(key: orphanageMark) ?? false }

    /// An executor running jobs on `loop`'s thread.
    public init(_ loop: EvRunLoop) {
        self.loop = loop
    }

    /// Schedules `job` on the loop's common modes and wakes the loop. Safe from any thread. On a
    /// loop whose thread has exited, the job runs on the serial queue that stands in for it.
    ///
    /// The jobs that reach this method are those of tasks that prefer the executor
    /// (`Task(executorPreference:)`, `withTaskExecutorPreference`): they run as a task executor's.
    /// An actor's jobs reach the loop through ``asUnownedSerialExecutor()`` and run isolated to
    /// the loop.
    ///
    /// - Parameter job: the job to run.
    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        // The job itself is queued, with no closure around it. A job the loop refuses (its thread
        // has exited) or drops with its thread (BlockQueue.Work.dropped) runs on the stand-in queue.
        if !loop.enqueueAndWake(.taskJob(job, self), inModes: [.common]) { runOrphaned(job) }
    }

    /// Runs `job` on the calling thread, the loop's or its stand-in queue, as a task executor's
    /// job. Run as an actor's, such a task's nonisolated code would leave that isolation at once,
    /// and the runtime would queue the job again, behind the blocks and jobs queued since.
    func run(_ job: UnownedJob) {
        job.runSynchronously(on: asUnownedTaskExecutor())
    }

    /// Runs `job` on the serial queue that stands in for the exited loop's thread.
    func runOrphaned(_ job: UnownedJob) {
        Self.orphanage.async { self.run(job) }
    }

    /// The serial executor actors pinned to the loop hold, the loop's own whichever of its
    /// executors they name: jobs sent through it run isolated to the loop.
    public func asUnownedSerialExecutor() -> UnownedSerialExecutor {
        loop.jobIsolation.asUnownedSerialExecutor()
    }

    /// Two executors of the same loop run jobs in the same exclusive context (its thread).
    public func isSameExclusiveExecutionContext(other: EvRunLoopExecutor) -> Bool {
        other.loop === loop
    }

    /// `true` when the caller runs in the executor's context: on the loop's thread, in a job or a
    /// plain callout (a timer, a source, an observer, a block) alike — or, once the loop's thread
    /// has exited, on the queue that runs its jobs instead. Otherwise `nil`, not `false`.
    ///
    /// The runtime asks this first wherever it checks isolation. Where the check may not stop the
    /// program (the cast to a protocol through a conformance isolated to a global actor pinned to
    /// the loop), `nil` counts as not isolated; where it stops the program (`assumeIsolated`,
    /// `preconditionIsolated`), `nil` leads the runtime on to ``checkIsolated()``, whose message
    /// names the loop's thread.
    public func isIsolatingCurrentContext() -> Bool? {
        loop.jobIsolation.isIsolatingCurrentContext()
    }

    /// Stops with a message unless called on the loop's thread (for `assumeIsolated`) — or, once
    /// the loop's thread has exited, on the queue that runs its jobs instead.
    public func checkIsolated() {
        loop.jobIsolation.checkIsolated()
    }
}
