import Dispatch
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Why an ``EvWorkerThread`` refused a call.
public enum EvWorkerThreadError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Work was submitted before ``EvWorkerThread/start()``.
    case notStarted
    /// ``EvWorkerThread/start()`` was called on a worker that was already started.
    case alreadyStarted
    /// The worker was stopped: it accepts no more work and cannot be started again.
    case stopped
    /// `pthread_create` failed with this `errno` (`EAGAIN`: the process is out of threads).
    case threadCreationFailed(errno: Int32)
    /// The new thread could not create its run loop (no file descriptor left, say).
    case runLoopUnavailable(EvRunLoopError)

    /// A message naming the call that failed and why.
    public var description: String {
        switch self {
        case .notStarted: "EvWorkerThread: work submitted before start()"
        case .alreadyStarted: "EvWorkerThread.start(): the worker was already started"
        case .stopped: "EvWorkerThread: the worker was stopped and accepts no more work"
        case .threadCreationFailed(let errno): "EvWorkerThread.start(): pthread_create failed (errno \(errno))"
        case .runLoopUnavailable(let error): "EvWorkerThread.start(): \(error)"
        }
    }
}

/// A keep-alive thread: a thread whose run loop waits for work.
///
/// The thread runs its loop's default mode with a private keep-alive source, so it sleeps
/// without spinning until work arrives. Work is scheduled as perform-blocks in the loop's common
/// modes (R15, R54) and the loop is woken for it; items run one after another, in the order they
/// were submitted (R55), on the worker's thread.
///
/// ``stop(waitUntilExited:)`` runs everything submitted before it, then ends the run loop and
/// the thread — and, unlike the `[NSRunLoop run]` trap (W13), the thread really exits: its loop
/// is torn down (R4) and, from another thread, `stop` joins it, so nothing of it remains once
/// `stop` returns. Dropping the last reference to the worker stops it the same way, waiting as
/// `stop` does except on the worker's own thread, in a task off the main thread, and in a
/// main-actor task while ``EvRunLoop/runMain(_:)`` runs the main loop, where it returns at once
/// and the thread ends on its own once its queue is done (await ``stop()`` to know when).
/// Submitting after `stop` throws ``EvWorkerThreadError/stopped``; nothing is silently dropped.
///
/// Work scheduled directly on ``runLoop`` (``EvRunLoop/perform(inModes:waitUntilDone:_:)``,
/// timers, delayed performs) is not covered by that promise: whatever is still pending in it when
/// the thread ends is dropped with the loop (waiting callers get ``EvPerformError/loopExited``).
public final class EvWorkerThread: Sendable {
    /// The life of a worker.
    public enum State: Sendable, Equatable {
        /// Created, not started.
        case idle
        /// Running: accepts work.
        case running
        /// ``EvWorkerThread/stop(waitUntilExited:)`` was called: finishing what was submitted.
        case stopping
        /// The thread has ended (or the worker was stopped before it was started).
        case stopped
    }

    let core: WorkerCore

    /// A worker thread, not yet started.
    ///
    /// - Parameters:
    ///   - name: the thread's name (visible in `ps -L`, debuggers; truncated to 15 bytes, at a character boundary).
    ///   - stackSize: the thread's stack size in bytes; `nil` for the system default.
    public init(name: String? = nil, stackSize: Int? = nil) {
        core = WorkerCore(name: name, stackSize: stackSize)
    }

    /// Stops the worker (see ``stop(waitUntilExited:)``): from another thread this waits until
    /// work already submitted has run and the thread has exited; from the worker's own thread,
    /// in a task off the main thread, and in a main-actor task under ``EvRunLoop/runMain(_:)``,
    /// it does not wait (the thread ends once its queue is done, its loop torn down and its
    /// descriptors closed, and is joined then).
    deinit {
        let waits = core.waitsWhenReleased.load(ordering: .relaxed) && WorkerCore.releaseMayWait
        core.stop(waitUntilExited: waits)
        if !waits, let thread = core.thread { WorkerCore.trackUnwaited(thread) }
    }

    /// Starts the thread and returns its run loop once the loop exists and accepts work.
    ///
    /// - Returns: the worker's run loop, for items and actors to pin to it (the same loop
    ///   ``runLoop`` reads while the worker runs).
    /// - Thread: any.
    /// - Throws: ``EvWorkerThreadError/alreadyStarted`` or ``EvWorkerThreadError/stopped`` when
    ///   called twice or after `stop`; ``EvWorkerThreadError/threadCreationFailed(errno:)`` or
    ///   ``EvWorkerThreadError/runLoopUnavailable(_:)`` when the system is out of threads or file
    ///   descriptors (the worker stays startable).
    @discardableResult
    public func start() throws(EvWorkerThreadError) -> EvRunLoop {
        try core.start()
    }

    /// The worker's run loop while it is running or stopping; `nil` before start and after the
    /// thread ended. ``start()`` returns the same loop, without the optional.
    public var runLoop: EvRunLoop? { core.shared.withLock { $0.loop } }

    /// Where the worker is in its life.
    public var state: State { core.shared.withLock { $0.state } }

    /// Schedules `work` to run on the worker thread and returns at once (fire-and-forget, SwiftNIO's
    /// `execute`); the worker's loop is woken for it.
    ///
    /// Items run in submission order, each once, in the worker loop's common modes.
    ///
    /// - Parameter work: runs once, on the worker thread.
    /// - Thread: any, including the worker itself (the item then runs after the current one).
    /// - Throws: ``EvWorkerThreadError/notStarted`` before ``start()``;
    ///   ``EvWorkerThreadError/stopped`` once ``stop(waitUntilExited:)`` was called.
    public func execute(_ work: @escaping @Sendable () -> Void) throws(EvWorkerThreadError) {
        try core.submit(work)
    }

    /// Runs `work` on the worker thread and returns its value or rethrows its error (SwiftNIO's
    /// `submit`); the calling task is suspended meanwhile, no thread is blocked. Items run in
    /// submission order with those of ``execute(_:)``.
    ///
    /// - Parameter work: runs once, on the worker thread.
    /// - Returns: what `work` returned.
    /// - Thread: any async context.
    /// - Throws: ``EvWorkerThreadError`` when the worker does not accept work (not started,
    ///   stopped); ``EvPerformError/loopExited`` if the worker's thread ended before `work` ran;
    ///   `CancellationError` if the task is cancelled before `work` starts (`work` then never
    ///   runs; once it has started, cancelling changes nothing); otherwise whatever `work` throws.
    public func submit<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try core.checkAcceptsWork()
        let completion = AsyncCompletion<T>()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                guard completion.install(continuation) else { return }
                let block = completion.block(work)
                withExtendedLifetime(block) {
                    do {
                        try core.submit(block)
                    } catch {
                        // Refused (stopped meanwhile): report that before the unqueued block's
                        // release reports loopExited (the first outcome wins).
                        completion.finish(.failure(error))
                    }
                }
            }
        } onCancel: {
            completion.cancel()
        }
    }

    /// Runs `work` on the worker thread and waits for it: returns its value or rethrows its error.
    ///
    /// - Thread: any. Called on the worker thread itself, `work` runs at once (waiting for it in
    ///   the queue would deadlock) — if the worker still accepts work.
    /// - Throws: ``EvWorkerThreadError`` when the worker does not accept work (not started,
    ///   stopped); otherwise whatever `work` throws.
    @discardableResult
    public func submitAndWait<T: Sendable>(_ work: @escaping @Sendable () throws -> T) throws -> T {
        if core.isWorkerThread {
            try core.checkAcceptsWork()
            return try work()
        }
        let completion = PerformCompletion<T>()
        try core.submit(completion.block(work))
        return try completion.wait().get()
    }

    /// Stops the worker: work submitted before this call still runs, in order; then the run loop
    /// ends and the thread exits. Later submissions throw ``EvWorkerThreadError/stopped``. A run
    /// of the loop nested in a work item or a job ends too, whether it began before this call or
    /// after it.
    ///
    /// Stopping twice, or stopping a worker that was never started, does nothing more, except
    /// that a stop that waits waits for the thread whichever stop ended it.
    ///
    /// - Parameter waitUntilExited: from another thread, `true` (the default) waits until the
    ///   queued work has run and the thread has exited and been joined — its run loop torn down,
    ///   its descriptors closed. `false` returns at once; the thread then ends on its own.
    /// - Thread: any. On the worker thread itself (from a work item) it never waits: the current
    ///   item finishes, the rest of the queue runs, then the thread ends.
    public func stop(waitUntilExited: Bool = true) {
        core.stop(waitUntilExited: waitUntilExited)
    }
}

/// The part of a worker that its thread and its scheduled blocks share; the public object owns
/// it, the thread never owns the public object (so dropping it stops the worker).
final class WorkerCore: Sendable {
    struct Shared {
        var state = EvWorkerThread.State.idle
        var isStarting = false
        var loop: EvRunLoop?
        /// The loop the thread made, still known after its run ended (``loop`` is cleared then)
        /// until it is released: its teardown, at the thread's exit, may not be over yet.
        weak var startedLoop: EvRunLoop?
        var thread: EvThreadHandle?
        var keepAlive: EvSource?
        /// Set by the stop: queues a final block for each run the loop enters until it is done.
        var stopObserver: EvObserver?
    }

    let shared = Locked(Shared())
    /// Set by the final block; the thread's run loop ends when it sees it.
    private let finished = Atomic<Bool>(false)
    /// Whether releasing the worker waits for its thread (see ``EvWorkerThread``'s `deinit`):
    /// cleared by a group released on one of its own threads, which must not wait for the others.
    let waitsWhenReleased = Atomic<Bool>(true)
    private let name: String?
    private let stackSize: Int?

    init(name: String?, stackSize: Int?) {
        self.name = name
        self.stackSize = stackSize
    }

    var isWorkerThread: Bool { thread?.isCurrent ?? false }

    /// Whether dropping a worker here may wait for its thread: not in a task off the main thread,
    /// whose thread (one of the cooperative pool's few, a loop's) the worker's queued work may be
    /// waiting for, nor in a main-actor task while ``EvRunLoop/runMain(_:)`` runs the main loop,
    /// which that work may need too (`runMain` waits for it instead).
    static var releaseMayWait: Bool {
        !AsyncGuard.isInTask || ThreadRegistry.isMainThread && !runMainInProgress.load(ordering: .relaxed)
    }

    /// ``EvRunLoop/runMain(_:)`` is running: it awaits the workers dropped without waiting.
    static let runMainInProgress = Atomic<Bool>(false)

    /// The threads of workers dropped without waiting, until they are joined (their loops torn
    /// down, their thread-local teardown over): ``EvRunLoop/runMain(_:)`` awaits them, so that its
    /// program loses none of their queued work and exits with none of them still ending.
    private static let unwaitedThreads = Locked<[ObjectIdentifier: EvThreadHandle]>([:])

    /// Keeps `thread`, of a worker dropped without waiting, among ``unwaitedThreads`` until joined.
    static func trackUnwaited(_ thread: EvThreadHandle) {
        let id = ObjectIdentifier(thread)
        unwaitedThreads.withLock { $0[id] = thread }
        thread.whenJoined { _ = unwaitedThreads.withLock { $0.removeValue(forKey: id) } }
    }

    /// Suspends until every worker dropped without waiting has run its queue and its thread has
    /// been joined.
    static func untilUnwaitedWorkersEnd() async {
        while let thread = unwaitedThreads.withLock({ $0.values.first }) {
            await withCheckedContinuation { (joined: CheckedContinuation<Void, Never>) in
                thread.whenJoined { joined.resume() }
            }
            // Also here: a join that just happened may not have run the tracker's removal yet.
            _ = unwaitedThreads.withLock { $0.removeValue(forKey: ObjectIdentifier(thread)) }
        }
    }

    /// The worker's thread, once started.
    var thread: EvThreadHandle? { shared.withLock { $0.thread } }

    func start() throws(EvWorkerThreadError) -> EvRunLoop {
        try shared.withLock { shared throws(EvWorkerThreadError) in
            switch shared.state {
            case .idle where !shared.isStarting: shared.isStarting = true
            case .idle, .running, .stopping: throw .alreadyStarted
            case .stopped: throw .stopped
            }
        }
        let handshake = StartHandshake()
        let thread: EvThreadHandle
        do {
            thread = try EvThreadHandle.spawn(name: name, stackSize: stackSize) { [self] in
                threadBody(handshake)
            }
        } catch {
            shared.withLock { $0.isStarting = false }
            throw .threadCreationFailed(errno: error.errno)
        }
        shared.withLock { $0.thread = thread }
        handshake.threadRecorded.signal()
        handshake.ready.wait()
        if let error = handshake.failure.withLock({ $0 }) {
            thread.join()
            shared.withLock { shared in
                shared.isStarting = false
                shared.thread = nil
            }
            throw .runLoopUnavailable(error)
        }
        return handshake.loop.withLock { $0! }
    }

    private func threadBody(_ handshake: StartHandshake) {
        // Running only once its handle is known: a stop that sees it running joins it, and a work
        // item on it knows its own thread.
        handshake.threadRecorded.wait()
        let loop: EvRunLoop
        do {
            loop = try EvRunLoop.forCurrentThread()
        } catch {
            handshake.failure.withLock { $0 = error }
            handshake.ready.signal()
            return
        }
        handshake.loop.withLock { $0 = loop }
        let keepAlive = EvSource {}  // never signalled: it only keeps the default mode from being empty (R16)
        loop.add(keepAlive, forMode: .default)
        shared.withLock { shared in
            shared.loop = loop
            shared.startedLoop = loop
            shared.keepAlive = keepAlive
            shared.state = .running
            shared.isStarting = false
        }
        handshake.ready.signal()
        while !finished.load(ordering: .acquiring) {
            loop.run(mode: .default)
        }
        keepAlive.invalidate()
        shared.withLock { shared in
            shared.stopObserver?.invalidate()
            shared.stopObserver = nil
            shared.loop = nil
            shared.keepAlive = nil
            shared.state = .stopped
        }
    }

    /// Throws what ``EvWorkerThread/execute(_:)`` would throw, without submitting anything.
    func checkAcceptsWork() throws(EvWorkerThreadError) {
        switch shared.withLock({ $0.state }) {
        case .idle: throw .notStarted
        case .stopping, .stopped: throw .stopped
        case .running: return
        }
    }

    func submit(_ work: @escaping @Sendable () -> Void) throws(EvWorkerThreadError) {
        let loop = try shared.withLock { shared throws(EvWorkerThreadError) -> EvRunLoop in
            switch shared.state {
            case .idle: throw .notStarted
            case .stopping, .stopped: throw .stopped
            case .running:
                // Scheduled under the worker's lock, so it is ordered before any stop's final block.
                _ = shared.loop!.enqueue(.block(work), inModes: [.common], woken: true)
                return shared.loop!
            }
        }
        loop.wakeUp()
    }

    /// Stops the worker (see ``EvWorkerThread/stop(waitUntilExited:)``). Returns the worker's
    /// loop if its thread had not yet let go of it: its teardown may still be to come.
    @discardableResult
    func stop(waitUntilExited: Bool) -> EvRunLoop? {
        enum Step { case retry, done(EvThreadHandle?, EvRunLoop?, stoppedNow: Bool) }
        while true {
            let step = shared.withLock { shared -> Step in
                switch shared.state {
                case .idle:
                    if shared.isStarting { return .retry }  // start() is creating the thread
                    shared.state = .stopped
                    return .done(nil, nil, stoppedNow: false)
                case .running:
                    shared.state = .stopping
                    let loop = shared.loop!
                    let keepAlive = shared.keepAlive
                    // A run that a work item or a job enters from now on may have been taken out in
                    // one blocks step with the final block, which that run then cannot see (C99):
                    // it gets a final block of its own. Added first, so that no such run is missed.
                    let observer = EvObserver(activities: .entry, order: .min) { [self] _, _ in
                        guard !finished.load(ordering: .acquiring) else { return }
                        _ = loop.enqueue(.block { [self] in finish(loop, keepAlive) }, inModes: [.common], woken: true)
                    }
                    shared.stopObserver = observer
                    loop.add(observer, forMode: .common)
                    _ = loop.enqueue(.block { [self] in finish(loop, keepAlive) }, inModes: [.common], woken: true)
                    return .done(shared.thread, loop, stoppedNow: true)
                case .stopping, .stopped:
                    return .done(shared.thread, shared.startedLoop, stoppedNow: false)
                }
            }
            guard case .done(let thread, let loop, let stoppedNow) = step else {
                sched_yield()
                continue
            }
            if stoppedNow { loop?.wakeUp() }
            if let thread {
                if waitUntilExited || thread.isCurrent { thread.join() } else { thread.joinWhenDone() }
            }
            return loop
        }
    }

    /// The final block: everything submitted before it has run (R55), or is running a nested run
    /// of the loop. Ends every run of the worker's loop, including a nested run a work item or a
    /// job may have started, in which this block (or one queued at the run's Entry) finds itself:
    /// `EvRunLoop.stop()` would end only the innermost run (R27), and a block scheduled again from
    /// the nested run would wait for a wake-up that, made there, can be dropped (C52).
    private func finish(_ loop: EvRunLoop, _ keepAlive: EvSource?) {
        finished.store(true, ordering: .releasing)
        keepAlive?.invalidate()
        loop.stopAllRuns()
    }
}

/// The new worker thread reports to ``WorkerCore/start()`` through this.
private final class StartHandshake: Sendable {
    /// ``WorkerCore/start()`` has stored the thread's handle.
    let threadRecorded = DispatchSemaphore(value: 0)
    let ready = DispatchSemaphore(value: 0)
    let failure = Locked<EvRunLoopError?>(nil)
    let loop = Locked<EvRunLoop?>(nil)
}
