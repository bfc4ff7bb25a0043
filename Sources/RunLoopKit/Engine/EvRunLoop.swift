import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A thread's run loop: CFRunLoop's model — modes, common modes, version-0 sources, timers,
/// observers and perform-blocks — with libev doing all the waiting.
///
/// Each thread has at most one loop, made the first time it asks for ``current`` (R1) and torn
/// down when the thread exits (R4). A loop runs only on its own thread (R5); adding, removing,
/// signalling, ``wakeUp()``, ``stop()`` and ``perform(inModes:_:)`` are safe from any thread (R6).
/// Callouts run with no lock held, so a callout may do anything, including running the loop
/// again (R58).
public final class EvRunLoop: Sendable {
    /// The loop's bookkeeping; see ``LoopState``. Lock order: this lock, then an item's.
    let state = Locked(LoopState())
    /// Pending perform-blocks (R54–R57), under a lock of their own so that posting a block from
    /// another thread does not contend with the loop's phases. Lock order: ``state`` first.
    let pendingBlocks = Locked(BlockQueue())
    /// The wait (``EvBackend`` on libev; ``VirtualWaiter`` in tests). Unsafe, as a waiter is not
    /// `Sendable`: its thread rules (``LoopWaiter``) are kept by the engine — ``LoopWaiter/wakeUp()``
    /// only through the loop's wake gate, the calls of other threads only under the loop's lock,
    /// both of which exclude teardown.
    nonisolated(unsafe) let waiter: any LoopWaiter
    /// The same waiter when it is the libev one, for the run's passes: through the concrete type
    /// the compiler inlines the wait's common paths instead of calling each through the protocol.
    /// Unmanaged: ``waiter`` holds it, and a run borrows it with no retain and release.
    nonisolated(unsafe) let libevWaiter: Unmanaged<EvBackend>?
    /// Whether this is the main thread's loop, ``main`` (R2).
    public let isMain: Bool
    let waiting = Atomic<Bool>(false)
    /// ``timerPrecision`` is ``TimerPrecision/precise``.
    let preciseTimers = Atomic<Bool>(false)
    /// Whether ``wakeUp()`` reaches the libev layer now (CF's per-run "ignore wake-ups" flag,
    /// C51, C52): true from a run's start and from each pass's start until its wait returns;
    /// false while no run is in progress and in the post-wait half of a pass.
    let acceptsWakeUps = Atomic<Bool>(false)
    /// Lock-free hints that let a run skip steps with nothing to do (see ``Hint``).
    let hints = Atomic<UInt32>(0)
    /// Every activity an observer of one of the loop's modes asks for: other phases skip the lock.
    let observedActivities = Atomic<UInt32>(0)
    /// How many times a run was marked stopped, counted under the lock with the mark: a run that
    /// saw the same count before knows, without the lock, that no stop reached it since (R27).
    let stopRequests = Atomic<UInt64>(0)
    /// How many times something a run checks without the lock changed (see ``PassView``): a
    /// mode went from no sources or no timers to some or back, or the version-1 watchers went
    /// out of step with the mode they were started for.
    let passViewChanges = Atomic<UInt64>(0)
    /// The callout running now and the loop's counters (``metrics``), written by its thread only.
    let recorder = LoopRecorder()
    /// A signalled source handed over without the loop's lock (see ``SignalInbox``).
    let signalInbox = SignalInbox()
    /// The version-0 step's list of ready sources when several are signalled, kept with its
    /// capacity between passes so that sorting them allocates nothing (see
    /// ``performSignalledSources(_:)``). Loop's thread only, hence unsafe and unchecked.
    @exclusivity(unchecked) nonisolated(unsafe) var readySourcesScratch: [ReadySource] = []
    /// The timers step's list of due timers, kept with its capacity between passes so that a
    /// fire allocates nothing (see ``fireDueTimers(_:_:at:_:)``). Loop's thread only.
    @exclusivity(unchecked) nonisolated(unsafe) var dueTimersScratch: [TimerHeap.Entry] = []
    /// Stall monitors of this loop, told of callouts inside its wait (see ``WaitCalloutWatcher``).
    let waitCalloutWatchers = Locked<[any WaitCalloutWatcher]>([])
    /// True while an executor's job runs (loop's thread only): a run nested in it leaves the
    /// other jobs queued until it returns, since a serial executor runs one job at a time (an
    /// actor's method must not see another of its jobs start inside it).
    @exclusivity(unchecked) nonisolated(unsafe) var isRunningJob = false
    /// A run nested in the running job left jobs queued (loop's thread only): its waits may
    /// have taken their wake-ups, so the job's end wakes the loop for them.
    @exclusivity(unchecked) nonisolated(unsafe) var heldBackJobs = false
    /// The serial executor of every actor pinned to this loop (``EvRunLoopExecutor``): one per
    /// loop, so that the runtime tells their contexts apart by identity alone.
    let jobIsolation = EvRunLoopIsolation()
    /// Guards cross-thread ``wakeUp()`` against teardown without taking ``state``: the count of
    /// wake-ups in flight, plus ``wakeGateClosed`` once the loop is dead.
    private let wakeGate = Atomic<Int>(0)
    private static let wakeGateClosed = 1 << 40

    init(isMain: Bool) throws(EvRunLoopError) {
        self.isMain = isMain
        let backend = try EvBackend()
        waiter = backend
        libevWaiter = .passUnretained(backend)
        backend.owner = self
        jobIsolation.loop = self
    }

    /// A loop that waits with `waiter` (a ``VirtualWaiter`` in tests); see ``ThreadRegistry/adopt(_:)``.
    init(isMain: Bool, waiter: any LoopWaiter) {
        self.isMain = isMain
        self.waiter = waiter
        libevWaiter = nil
        jobIsolation.loop = self
    }

    /// The calling thread's run loop, created on first use (R1).
    ///
    /// Stops with a message if the loop cannot be created (no file descriptor left, say); use
    /// ``forCurrentThread()`` to handle that as an error instead.
    ///
    /// Inside a task it stops with a message naming the fix unless the thread's loop is running
    /// the task's job (an actor on ``EvRunLoopExecutor``, main-actor work under the main loop):
    /// a task on Swift's cooperative pool, in ``runMain(_:)``'s body say, would get a loop that
    /// nothing ever runs (see <doc:ThreadsLifetimeAndErrors>).
    public static var current: EvRunLoop {
        do {
            return try ThreadRegistry.currentLoop("EvRunLoop.current")
        } catch {
            fatalError("EvRunLoop.current: \(error)")
        }
    }

    /// The calling thread's run loop, created on first use (R1).
    ///
    /// - Throws: ``EvRunLoopError`` when the loop's backend cannot be created.
    /// - Precondition: as for ``current``, not called from a task unless the thread's loop is
    ///   running the task's job.
    public static func forCurrentThread() throws(EvRunLoopError) -> EvRunLoop {
        try ThreadRegistry.currentLoop("EvRunLoop.forCurrentThread()")
    }

    /// The main thread's run loop, from any thread (R2).
    ///
    /// Stops with a message naming ``runMain(_:)`` where nothing could ever run it: once
    /// libdispatch has the main thread (an async main, or `dispatchMain()`), and from a task on
    /// the main thread while it is not running (an async main before its first suspension).
    /// To tell whether a loop is the main loop without asking for it, use ``isMain``.
    public static var main: EvRunLoop {
        let loop: EvRunLoop
        do {
            loop = try ThreadRegistry.mainRunLoop()
        } catch {
            fatalError("EvRunLoop.main: \(error)")
        }
        AsyncGuard.checkMain(loop, "EvRunLoop.main")
        return loop
    }

    /// The mode of the innermost run in progress, `nil` when the loop is not running (R9).
    public var currentMode: Mode? { state.withLock { $0.runs.last?.mode } }

    /// Every mode that exists on the loop, the default mode first (R8; C10, C11: what CF's
    /// CFRunLoopCopyAllModes lists, so a mode made common that no common item joined yet is not
    /// in it).
    public var allModes: [Mode] {
        let names = state.withLock { $0.otherModes.keys.map(\.mode) }
        return [.default] + names.sorted { $0.name < $1.name }
    }

    /// True only while the loop's thread is (about to be) asleep: between the BeforeWaiting and
    /// AfterWaiting phases (R23). Safe from any thread.
    public var isWaiting: Bool { waiting.load(ordering: .acquiring) }

    /// Ends the loop's current sleep, or makes its next sleep return at once — at most once
    /// however often it is called meanwhile (R30, C53). As in CF, a wake-up counts only from a
    /// run's start until the wait of the current pass returns: while no run is in progress, and
    /// in the post-wait half of a pass (AfterWaiting, timers, version-1 sources, the last blocks,
    /// Exit), it does nothing, since the loop looks at its blocks and sources before it next
    /// waits anyway (C51, C52). Safe from any thread; does nothing once the loop's thread has
    /// exited.
    public func wakeUp() {
        // Sequentially consistent, paired with the loop's store at the start of a pass: whoever
        // posted work before this load is either seen by that pass or woken by this call.
        // (On x86-64 that load is a plain move: the fence is in the loop's stores.)
        guard acceptsWakeUps.load(ordering: .sequentiallyConsistent) else { return }
        // The gate: acquiring, so that nothing of the backend is touched before the count is up
        // (then teardown, which adds its mark after it, waits for this call); releasing on the
        // way out, so that the backend's write happens before teardown sees the count back down.
        // Wrapping: one locked add each, not a compare-and-swap loop around an overflow check
        // (the count cannot reach 2^63).
        if wakeGate.wrappingAdd(1, ordering: .acquiring).newValue < Self.wakeGateClosed {
            waiter.wakeUp()
        }
        wakeGate.wrappingSubtract(1, ordering: .releasing)
    }

    /// Stops the innermost run in progress: it returns ``RunResult/stopped`` at the end of its
    /// current iteration, while outer runs carry on (R27, R29). Does nothing when the loop is not
    /// running (R28). Safe from any thread and from the run's own callouts. Its wake-up follows
    /// ``wakeUp()``'s rules: a stop made in the post-wait half is seen by that pass's result check
    /// and leaves nothing for a later run (C52); one made from an Entry observer, as in CF, leaves
    /// a wake-up that ends the next wait, even the next run's (C56, W7).
    public func stop() {
        stopInnermostRun(quietly: false)
    }

    /// Stops the innermost run as ``stop()`` does. `quietly`, for a wait of the library's own
    /// (``run(mode:until:orUntil:)``), the run's `stopped` resumes no task in
    /// ``waitUntilStopped()``, unless ``stop()`` stops it too.
    func stopInnermostRun(quietly: Bool) {
        let running = state.withLock { state -> Bool in
            guard !state.runs.isEmpty else { return false }
            let innermost = state.runs.count - 1
            // A quiet stop never hides a stop() that came first.
            state.runs[innermost].isStoppedQuietly = quietly && (state.runs[innermost].isStoppedQuietly || !state.runs[innermost].isStopped)
            state.runs[innermost].isStopped = true
            stopRequests.wrappingAdd(1, ordering: .releasing)
            return true
        }
        if running { wakeUp() }
    }

    /// Stops every run in progress, outer ones included: each returns ``RunResult/stopped`` at
    /// the end of its current iteration and none sleeps again (R27 for each run). For components
    /// that end a loop for good (``EvWorkerThread``).
    func stopAllRuns() {
        let running = state.withLock { state -> Bool in
            for index in state.runs.indices {
                state.runs[index].isStopped = true
                state.runs[index].isStoppedQuietly = false
            }
            if !state.runs.isEmpty { stopRequests.wrappingAdd(1, ordering: .releasing) }
            return !state.runs.isEmpty
        }
        if running { wakeUp() }
    }

    /// Adds `mode` to the loop's common modes; every item already added to ``Mode/common`` is
    /// added to it at once (R11, R13). Adding it twice does nothing. As in CF, the mode comes into
    /// existence (``allModes`` lists it) only when a common item joins it, now or later (C10).
    /// Safe from any thread: from another thread it wakes the loop only if version-1 sources
    /// joined the mode the loop runs now, or one of them is an ``EvSignalSource``.
    ///
    /// - Precondition: `mode` is not ``Mode/common``.
    public func addCommonMode(_ mode: Mode) {
        require(mode != .common, "EvRunLoop.addCommonMode(_:): .common is the pseudo-mode itself, not a mode")
        let (scheduled, wakes): ([(EvSource, Mode)], Bool) = state.withLock { state in
            guard !state.isDead, mode != .default, !state.otherCommonModes.contains(mode) else { return ([], false) }
            state.otherCommonModes.append(mode)
            for timer in state.commonTimers.values { attach(timer, to: [mode], &state) }
            for (_, observer) in state.commonObservers { attach(observer, to: [mode], &state) }
            for core in state.commonSource1s.values { attach(core, to: [mode], &state) }
            let scheduled = state.commonSources.values.flatMap { source in attach(source, to: [mode], &state).map { (source, $0) } }
            // As in add(_:forMode:): the loop's thread starts the joining sources' watchers, and
            // wakes for that only if they joined the mode it runs (R37) or one is a signal's.
            let wakes = !state.commonSource1s.isEmpty && (state.runs.last?.mode == mode || state.commonSource1s.values.contains {
                if case .signal = $0.kind { true } else { false }
            })
            return (scheduled, wakes)
        }
        if wakes && ThreadRegistry.existingLoop() !== self { wakeUp() }
        for (source, mode) in scheduled { Callout.sourceSchedule(source, self, mode) }
    }

    /// Tears the loop down when its thread exits (R4): cancel callouts for its sources, every item
    /// released, the libev loop destroyed and its descriptors closed.
    func tearDown() {
        // Scoped: the items and blocks are released before the exit hooks say the teardown is over.
        do {
            let (cancelled, libevSources): ([(EvSource, ModeList)], [EvSource1Core]) = state.withLock { state in
                state.isDead = true
                let libevSources = Array(state.libevSources.values)
                return (detachAllItems(&state), libevSources)
            }
            // Before the libev loops go: the libraries detach from theirs while it still exists.
            for core in libevSources { endLibevSource(core, "EvRunLoop (its thread exited)") }
            if wakeGate.add(Self.wakeGateClosed, ordering: .acquiringAndReleasing).newValue != Self.wakeGateClosed {
                // Not a wait of the loop (its thread is exiting): wakeUp() calls in flight on other
                // threads, a few instructions each, leave before the backend they touch goes.
                while wakeGate.load(ordering: .acquiring) != Self.wakeGateClosed { sched_yield() }
            }
            state.withLock { _ in waiter.destroy() }
            let dropped = pendingBlocks.withLock { $0.close() }
            clearHint(Hint.blocks | Hint.defaultBlocks)
            for work in dropped { work.dropped() }  // released (jobs handed on) with no lock held
            resumeStopWaiters()
            for (source, modes) in cancelled {
                for mode in modes { Callout.sourceCancel(source, self, mode) }
            }
        }
        runExitHooks()
    }

    /// Stops with a message naming `call` unless the calling thread owns this loop (R5).
    func preconditionOwnThread(_ call: StaticString) {
        guard !ThreadRegistry.isOwnedByCallingThread(self) else { return }
        // Async code that reaches for the main loop needs to hear how it gets run.
        let hint = isMain ? "; the main loop runs on the process's main thread, which an async main gives away: start the program from a synchronous main with EvRunLoop.runMain(_:)" : ""
        fatalError("\(call): a run loop can only be run on its own thread (R5)\(hint)")
    }
}
