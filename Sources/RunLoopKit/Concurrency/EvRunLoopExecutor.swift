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
/// The executor is also a `TaskExecutor`, for `Task(executorPreference:)`. Jobs only run while the
/// loop runs a common mode. A run nested in a job (an actor's method that runs the loop) runs
/// no other job of the loop's executors until that job returns.
///
/// Once the loop's thread has exited (R4), jobs sent to it — and jobs it dropped with its
/// thread — run one at a time on a serial dispatch queue instead, off the loop's thread: an
/// `await` on a pinned actor returns rather than waiting forever. That queue is one for the
/// whole process, so executors of the same exited loop still share one exclusive context
/// (``isSameExclusiveExecutionContext(other:)``).
public final class EvRunLoopExecutor: SerialExecutor, TaskExecutor {
    /// The loop the jobs run on.
    public let loop: EvRunLoop
    /// Where jobs run once their loop's thread has exited: one serial queue for every executor,
    /// so that executors of the same loop — the same exclusive context — stay serial.
    private static let orphanage: DispatchQueue = {
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
    /// - Parameter job: the job to run.
    public func enqueue(_ job: consuming ExecutorJob) {
        // The job itself is queued, with no closure around it. A job the loop refuses (its thread
        // has exited) or drops with its thread (BlockQueue.Work.dropped) runs on the stand-in queue.
        let job = UnownedJob(job)
        if loop.enqueue(.job(job, self), inModes: [.common]) {
            loop.wakeUp()
        } else {
            runOrphaned(job)
        }
    }

    /// Runs `job` on the serial queue that stands in for the exited loop's thread.
    func runOrphaned(_ job: UnownedJob) {
        let executor = asUnownedSerialExecutor()
        Self.orphanage.async { job.runSynchronously(on: executor) }
    }

    /// This executor, compared by ``isSameExclusiveExecutionContext(other:)`` (same loop, same thread).
    public func asUnownedSerialExecutor() -> UnownedSerialExecutor {
        UnownedSerialExecutor(complexEquality: self)
    }

    /// Two executors of the same loop run jobs in the same exclusive context (its thread).
    public func isSameExclusiveExecutionContext(other: EvRunLoopExecutor) -> Bool {
        other.loop === loop
    }

    /// Stops with a message unless called on the loop's thread (for `assumeIsolated`) — or, once
    /// the loop's thread has exited, on the queue that runs its jobs instead.
    public func checkIsolated() {
        if loop.threadHasExited {
            dispatchPrecondition(condition: .onQueue(Self.orphanage))
            return
        }
        loop.preconditionOwnThread("EvRunLoopExecutor.checkIsolated()")
    }
}
