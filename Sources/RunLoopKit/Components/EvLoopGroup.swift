import Synchronization

/// Why an ``EvLoopGroup`` could not be made.
public enum EvLoopGroupError: Error, Sendable, Equatable, CustomStringConvertible {
    /// `numberOfThreads` was zero or negative: a group has at least one thread.
    case invalidNumberOfThreads(Int)
    /// The thread at `index` could not start (out of threads or descriptors); the threads
    /// started before it were stopped again.
    case threadFailedToStart(index: Int, EvWorkerThreadError)

    /// A message naming the call that failed and why.
    public var description: String {
        switch self {
        case .invalidNumberOfThreads(let count):
            "EvLoopGroup(numberOfThreads:name:): numberOfThreads must be at least 1 (got \(count))"
        case .threadFailedToStart(let index, let error):
            "EvLoopGroup(numberOfThreads:name:): thread \(index) did not start: \(error)"
        }
    }
}

/// A fixed set of keep-alive threads, each running its own run loop, handed out round robin:
/// SwiftNIO's `MultiThreadedEventLoopGroup` for run loops.
///
/// Each thread is an ``EvWorkerThread``, named `name-0` … `name-(N-1)`, started by the
/// initializer; its loop sleeps without spinning until work arrives. Give work to a loop with
/// ``EvRunLoop/execute(inModes:_:)``, ``EvRunLoop/submit(inModes:_:)`` or items added on its
/// thread. ``next()`` spreads connections or jobs across the loops.
///
/// ``stop(waitUntilExited:)`` and ``stop()`` stop every thread as ``EvWorkerThread`` does: work
/// submitted through ``EvRunLoop/execute(inModes:_:)`` before the stop still runs, then each
/// loop ends and its thread exits. Dropping the last reference to the group stops it the same way,
/// waiting for the threads as an ``EvWorkerThread`` released in the same place would.
public final class EvLoopGroup: Sendable {
    /// The group's threads, in index order.
    let workers: [EvWorkerThread]
    /// The threads' run loops, in index order: `loops[i]` runs on the thread named `name-i`.
    ///
    /// - Thread: any. The array never changes; after ``stop(waitUntilExited:)`` its loops have
    ///   exited and refuse work (``EvPerformError/loopExited``).
    public let loops: [EvRunLoop]
    /// How many times ``next()`` was called; its remainder picks the loop.
    private let handedOut = Atomic<Int>(0)

    /// Starts `numberOfThreads` keep-alive threads and returns once every one's loop accepts work.
    ///
    /// - Parameters:
    ///   - numberOfThreads: how many threads, at least 1 (`System.coreCount` is a common choice).
    ///   - name: the threads' name prefix: thread `i` is named `name-i` (`ps -L`, `top -H`,
    ///     debuggers, stall reports). Thread names keep 15 bytes; a longer prefix is shortened so
    ///     that the index stays.
    /// - Thread: any.
    /// - Throws: ``EvLoopGroupError/invalidNumberOfThreads(_:)`` for zero or fewer threads;
    ///   ``EvLoopGroupError/threadFailedToStart(index:_:)`` when the system is out of threads or
    ///   descriptors (the threads already started are stopped and joined first).
    public init(numberOfThreads: Int, name: String) throws(EvLoopGroupError) {
        guard numberOfThreads >= 1 else { throw .invalidNumberOfThreads(numberOfThreads) }
        var workers: [EvWorkerThread] = []
        var loops: [EvRunLoop] = []
        for index in 0..<numberOfThreads {
            let worker = EvWorkerThread(name: Self.threadName(name, index))
            do {
                loops.append(try worker.start())
            } catch {
                Self.stop(workers, waitUntilExited: true)
                throw .threadFailedToStart(index: index, error)
            }
            workers.append(worker)
        }
        self.workers = workers
        self.loops = loops
    }

    /// Stops every thread as ``stop(waitUntilExited:)`` does: from another thread this waits
    /// until they have exited; from one of the group's own threads, and in a task off the main
    /// thread, it does not wait (as an ``EvWorkerThread`` released there).
    deinit {
        // Else the workers, released next, would each wait for its thread from this one.
        if workers.contains(where: { $0.core.isWorkerThread }) {
            for worker in workers { worker.core.waitsWhenReleased.store(false, ordering: .relaxed) }
        }
        Self.stop(workers, waitUntilExited: WorkerCore.releaseMayWait)
    }

    /// The next loop, round robin: `loops[0]`, `loops[1]`, … `loops[N-1]`, `loops[0]`, …
    ///
    /// - Thread: any; concurrent calls each get a loop, and over many calls every loop is handed
    ///   out equally often. After a stop it still returns the (exited) loops.
    public func next() -> EvRunLoop {
        let count = handedOut.wrappingAdd(1, ordering: .relaxed).oldValue
        return loops[Int(UInt(bitPattern: count) % UInt(loops.count))]
    }

    /// Stops every thread: work submitted to the loops before this call still runs, in order,
    /// then each loop ends and its thread exits (``EvWorkerThread/stop(waitUntilExited:)``, for
    /// all threads at once). Stopping twice does nothing more.
    ///
    /// - Parameter waitUntilExited: from another thread, `true` (the default) waits until every
    ///   thread has run its queued work and exited, its loop torn down; `false` returns at once.
    /// - Thread: any. From a work item on one of the group's own loops it never waits: the
    ///   threads end once their queues are done.
    public func stop(waitUntilExited: Bool = true) {
        Self.stop(workers, waitUntilExited: waitUntilExited)
    }

    /// Stops the group from asynchronous code without blocking a thread of the cooperative pool:
    /// as ``stop(waitUntilExited:)``, and suspends until every loop has been torn down on its
    /// thread, as ``EvWorkerThread/stop()`` does. The threads are not joined here (that would
    /// block): they finish exiting on their own, joined from a dispatch queue; a later
    /// ``stop(waitUntilExited:)`` waits until they are gone. Stopping twice waits as the first stop does.
    ///
    /// A cancellation of the task does not cut it short: it returns once the loops are torn down.
    ///
    /// - Thread: any task. A job on one of the group's loops suspends while the loops end, and
    ///   goes on as after ``EvWorkerThread/stop()``.
    public func stop() async {
        Self.stop(workers, waitUntilExited: false)
        for loop in loops { await loop.untilTornDown() }
    }

    /// Suspends until every loop of the group has been torn down on its thread, whoever stopped
    /// the group; at once if they are.
    ///
    /// Returns early, without throwing, if the task is cancelled, as
    /// ``EvRunLoop/waitUntilStopped()`` does: check `Task.isCancelled` to tell. The group goes on
    /// running.
    ///
    /// - Thread: any task; a job on one of the group's loops goes on as after ``stop()``.
    public func waitUntilStopped() async {
        for loop in loops { await loop.untilTornDownOrCancelled() }
    }

    /// Asks every worker to stop first, so that they wind down together, then joins them.
    private static func stop(_ workers: [EvWorkerThread], waitUntilExited: Bool) {
        for worker in workers { worker.stop(waitUntilExited: false) }
        guard waitUntilExited, !workers.contains(where: { $0.core.isWorkerThread }) else { return }
        for worker in workers { worker.stop(waitUntilExited: true) }
    }

    /// `name-index`, with `name` cut (at a character boundary) so that the whole fits the 15 bytes
    /// a thread name keeps.
    static func threadName(_ name: String, _ index: Int) -> String {
        EvThreadHandle.kernelName(name, suffix: "-\(index)")
    }
}
