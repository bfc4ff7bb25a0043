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
/// loop runs a common mode; jobs sent after the loop's thread exited are dropped with the loop.
public final class EvRunLoopExecutor: SerialExecutor, TaskExecutor {
    /// The loop the jobs run on.
    public let loop: EvRunLoop

    /// An executor running jobs on `loop`'s thread.
    public init(_ loop: EvRunLoop) {
        self.loop = loop
    }

    /// Schedules `job` on the loop's common modes and wakes the loop. Safe from any thread.
    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedSerialExecutor()
        loop.perform(inModes: [.common]) { job.runSynchronously(on: executor) }
        loop.wakeUp()
    }

    /// This executor, compared by ``isSameExclusiveExecutionContext(other:)`` (same loop, same thread).
    public func asUnownedSerialExecutor() -> UnownedSerialExecutor {
        UnownedSerialExecutor(complexEquality: self)
    }

    /// Two executors of the same loop run jobs in the same exclusive context (its thread).
    public func isSameExclusiveExecutionContext(other: EvRunLoopExecutor) -> Bool {
        other.loop === loop
    }

    /// Stops with a message unless called on the loop's thread (for `assumeIsolated`).
    public func checkIsolated() {
        loop.preconditionOwnThread("EvRunLoopExecutor.checkIsolated()")
    }
}
