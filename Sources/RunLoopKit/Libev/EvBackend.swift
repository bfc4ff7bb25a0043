import CLibev
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The wait on libev: the one type that touches libev, and the only place a loop's thread
/// blocks — always inside `ev_run`, in libev's `epoll_wait`.
///
/// It owns an `ev_loop` and the descriptors libev watches for it: the eventfd of its
/// ``WakeSignal`` (``wakeUp()``), from the first sleep with a deadline a `timerfd` that holds
/// the deadline (see EvBackend+Deadline.swift), from the first descriptor source the epoll set
/// of its ``DescriptorSet``, and on the main loop libdispatch's main-queue eventfd. Each is an
/// `ev_io`, dispatched by libev. None of them can be watched as a caller's descriptor (see
/// ``isInternalDescriptor(_:)``).
///
/// The wait's phases (awake, planned, asleep) live in the ``WakeSignal``'s word; the page "The
/// wait" of the documentation draws them, with the thread rules and the lock order.
///
/// Failures never end in libev's `abort`: creating the loop's first descriptors throws; a
/// watcher whose `epoll_ctl` failed (libev stops it and passes `EV_ERROR`) is started again
/// before the next wait; a deadline the `timerfd` cannot hold is held by an `ev_timer`;
/// libev's system-error hook reports a failed `epoll_wait`, which is retried. A failure that
/// persists stops the process with a message naming RunLoopKit's call (EvBackend+Failures.swift).
///
/// Thread rules: ``sleep()``, ``poll()`` and ``destroy()`` on the loop's thread;
/// ``planSleep(_:)`` there with the loop's lock held; ``wakeUp()`` from any thread and
/// ``bringDeadlineForward(to:)`` from any thread with the loop's lock held, both serialised by
/// the loop against ``destroy()``.
///
/// Fields of the loop's thread that every wait touches are `@exclusivity(unchecked)`: the rules
/// above serialise every access, and the run time's dynamic check costs per access. The rare
/// paths (repairs, failures, signals, the libraries' loop) are `@inline(never)`, so that the
/// wait's common path stays small and saves few registers.
final class EvBackend: LoopWaiter, ReadinessSink {
    let loop: OpaquePointer
    /// Wakes the loop from other threads and from signal handlers (``SignalRouting``).
    let wake: WakeSignal
    private let wakeWatcher: UnsafeMutablePointer<ev_io>
    /// What ended the current wait, set by the watchers' callbacks inside `ev_run`. In the same
    /// allocation as ``wakeWatcher``, just after it.
    let reasons: UnsafeMutablePointer<UInt32>
    /// Not zero when the eventfd woke the loop and is not read yet (see ``readWakeKick()``).
    /// After ``reasons``, for the wake-up watcher's callback to reach without the backend.
    private let wakeKickUnread: UnsafeMutablePointer<UInt32>
    /// libev's epoll descriptor, or -1 if it could not be told (see ``backendDescriptor(expected:holding:)``).
    var backendFD: Int32 = -1
    private(set) var destroyed = false
    /// The libev libraries' watchers have events the engine has not taken yet (see
    /// EvBackend+LibraryLoop.swift). Next to ``destroyed``, in padding the object has anyway.
    @exclusivity(unchecked) var libraryEventsArrived = false
    /// This loop's own watchers changed since its last `ev_run`: a wait in the libev libraries'
    /// loop, which embeds this one, has libev make their `epoll_ctl` calls first.
    @exclusivity(unchecked) var ownWatchersChanged = false
    /// The deadline: what was asked for, what the timerfd holds (see ``DeadlineState``). Changed
    /// by the loop's thread, and by other threads only with the loop's lock and
    /// ``deadlineLock`` held (R44); so the loop's thread takes ``deadlineLock`` wherever it does
    /// not hold the loop's lock (``withDeadline(_:)``), and needs no lock where it does
    /// (``planSleep(_:)``, once per sleep).
    @exclusivity(unchecked) var deadline = DeadlineState()
    let deadlineLock = Locked<Void>(())
    /// Whether the planned sleep's deadline may be a precise timer's: set by the plan, and by
    /// another thread that moves the deadline to a precise timer's date (R44); the deadline
    /// itself says for sure. Releasing and acquiring, plain moves on x86-64.
    let sleepMayBePrecise = Atomic<Bool>(false)
    /// The timerfd's watcher, made with the timerfd.
    @exclusivity(unchecked) var deadlineWatcher: UnsafeMutablePointer<ev_io>?
    /// The timerfd went off and is not read yet (see ``readExpiredDeadline(_:)``).
    @exclusivity(unchecked) var deadlineExpiredUnread = false
    /// Holds the deadline while the timerfd cannot (see EvBackend+Failures.swift).
    @exclusivity(unchecked) var fallbackTimer: UnsafeMutablePointer<ev_timer>?
    @exclusivity(unchecked) var fallbackTimerActive = false
    /// The timerfd could not be made or armed for the planned deadline: the fallback stands in.
    @exclusivity(unchecked) var deadlineUnarmed = false
    /// The run loop this wait is for: library callbacks that run inside the wait are its callouts.
    /// Unowned: the loop owns its wait, and a weak reference would move the loop's reference
    /// count out of line, slowing every retain and release of it.
    unowned(unsafe) var owner: LoopWaiterOwner?
    /// The watchers of version-1 sources, made with the first (see ``WatcherTables``).
    @exclusivity(unchecked) var watcherTables: WatcherTables?
    /// Callers' descriptors, watched in a set of the loop's own (made at first use).
    @exclusivity(unchecked) var descriptors: DescriptorSet?
    var descriptorsWatcher: UnsafeMutablePointer<ev_io>?
    /// The main loop's watcher of libdispatch's main-queue eventfd (see EvBackend+MainQueue.swift).
    @exclusivity(unchecked) var mainQueueWatcher: UnsafeMutablePointer<ev_io>?
    /// Whether the running mode services the main queue (see ``watchMainQueue(_:)``).
    @exclusivity(unchecked) var mainQueueServiced = false
    /// Tokens whose watchers fired during the last wait, with what fired: the first
    /// ``readyCount`` entries. The array is never shortened, so taking them frees nothing and
    /// noting them seldom allocates.
    @exclusivity(unchecked) var ready: [(token: Int, events: Int32)] = []
    @exclusivity(unchecked) var readyCount = 0
    /// Whether a watcher reported readiness not yet taken with ``takeReady(_:)``, a watched
    /// descriptor is always ready (see ``DescriptorSet``), or the libev libraries' watchers have
    /// events (``libraryEventsArrived``): kept with them, read every pass.
    @exclusivity(unchecked) var hasReady = false
    /// Internal watchers libev stopped with `EV_ERROR` (their `epoll_ctl` failed), with `errno`.
    @exclusivity(unchecked) var failedWatchers: [(watcher: UnsafeMutablePointer<ev_io>, errno: Int32)] = []
    /// Re-arms of internal watchers that failed again, in a row.
    @exclusivity(unchecked) var rearmFailures = 0
    /// `epoll_wait` failures reported by libev, in a row.
    @exclusivity(unchecked) var pollFailures = 0
    var seenSystemErrors = 0

    /// Something the next wait must repair first: a failed watcher, an unarmed deadline.
    var needsRepair: Bool { deadlineUnarmed || !failedWatchers.isEmpty || rearmFailures != 0 }

    /// How often a failing `epoll_ctl` re-arm or `epoll_wait` is retried before the process stops.
    static let retryLimit = 64

    /// Creates the libev loop and its wake-up watcher.
    ///
    /// - Throws: ``EvRunLoopError/outOfFileDescriptors`` when the process has no descriptor
    ///   left for the loop's epoll set or its eventfd, or ``EvRunLoopError/backendUnavailable(_:)``
    ///   (naming the call and the error) when the kernel refuses otherwise.
    init() throws(EvRunLoopError) {
        SystemErrorHook.install()
        // NOTIMERFD: libev would make a timerfd of its own (for time jumps, at the first
        // ev_periodic); the loop's descriptors stay its epoll set, eventfd and timerfd.
        let flags = UInt32(EVFLAG_NOSIGMASK) | UInt32(EVFLAG_NOENV) | UInt32(EVFLAG_NOTIMERFD) | UInt32(EVBACKEND_EPOLL)
        let (wake, expected, loop) = try Self.descriptorNumbering.withLock { _ throws(EvRunLoopError) -> (WakeSignal, Int32, OpaquePointer) in
            guard let wake = WakeSignal() else { throw Self.creationError("eventfd", errno) }
            // libev does not tell its epoll descriptor; epoll_create1 takes the lowest free
            // number, so note that number just before (checked in backendDescriptor(expected:)).
            let expected = Self.lowestFreeDescriptor(duplicating: wake.descriptor)
            guard expected >= 0, let loop = ev_loop_new(flags) else {
                let error = errno
                wake.closeDescriptor()
                throw Self.creationError("ev_loop_new (epoll_create1)", error)
            }
            return (wake, expected, loop)
        }
        self.loop = loop
        self.wake = wake
        let watcherAndWords = UnsafeMutableRawPointer.allocate(
            byteCount: MemoryLayout<ev_io>.stride + 2 * MemoryLayout<UInt32>.size, alignment: MemoryLayout<ev_io>.alignment)
        wakeWatcher = watcherAndWords.bindMemory(to: ev_io.self, capacity: 1)
        reasons = (watcherAndWords + MemoryLayout<ev_io>.stride).bindMemory(to: UInt32.self, capacity: 2)
        reasons.initialize(repeating: 0, count: 2)
        wakeKickUnread = reasons + 1
        InternalDescriptors.insert(wake.descriptor)

        ev_set_userdata(loop, Unmanaged.passUnretained(self).toOpaque())
        clibev_io_init(wakeWatcher, { loop, watcher, revents in
            guard let loop, let watcher else { return }
            if revents & EvBackend.failed != 0 { return EvBackend.with(loop) { $0.internalWatcherFailed(watcher) } }
            // Read before the next wait, not here (see readWakeKick()); the flag sits just after
            // the watcher: no lookup of the backend, no retain and release of it.
            (UnsafeMutableRawPointer(watcher) + EvBackend.wakeKickUnreadOffset).storeBytes(of: 1, as: UInt32.self)
        }, wake.descriptor, Int32(EV_READ))
        do {
            try startFirstWatcher()
        } catch {
            destroy()
            throw error
        }
        // Known only now that libev's epoll set holds the wake-up eventfd (see below).
        backendFD = Self.backendDescriptor(expected: expected, holding: wake.descriptor)
        if backendFD >= 0 { InternalDescriptors.insert(backendFD) }
    }

    /// Starts the wake-up watcher and has libev register it now (libev calls `epoll_ctl` for a
    /// new watcher inside its next `ev_run`), so that a refusal throws here instead of leaving a
    /// loop that never wakes. `EINTR` is retried; another error twice more, then thrown.
    private func startFirstWatcher() throws(EvRunLoopError) {
        try checkOwnDescriptor(wake.descriptor, call: "EvRunLoop")
        ev_io_start(loop, wakeWatcher)
        var attempts = 0
        while true {
            ev_run(loop, Int32(EVRUN_NOWAIT))
            guard let failure = failedWatchers.first else { break }
            attempts += 1
            if failure.errno != EINTR && attempts >= 3 || attempts >= Self.retryLimit {
                throw Self.creationError("epoll_ctl", failure.errno)
            }
            restartFailedWatchers()
        }
        rearmFailures = 0
    }

    /// The error for a failed creation call: out of descriptors, or the call and `errno` named.
    static func creationError(_ call: String, _ error: Int32) -> EvRunLoopError {
        error == EMFILE || error == ENFILE
            ? .outOfFileDescriptors : .backendUnavailable("\(call) failed: \(describe(errno: error))")
    }

    func now() -> MonotonicTime { .now() }

    /// Planned → asleep → awake (R22): blocks in `ev_run` until a wake-up, the planned deadline
    /// or a watched event. libev returns on its own every minute or so, and after a failed
    /// `epoll_wait`; that is not a wake-up (R30), so it blocks again. A deadline moved from
    /// another thread that needs this thread (the timerfd's first arming) is armed here and the
    /// sleep goes on.
    func sleep() -> WakeReasons {
        reasons.pointee = 0
        repeat {
            if needsRepair { repair() }
            // No readiness of the running mode waits for a handler now, so nothing rests for one.
            if let descriptors, descriptors.restingCount > 0 { rearmWatchers() }
            readWakeKick()
            // Requests already waiting: libev would only report them.
            if !wake.beginSleep() {
                // A mode with an EvLibevSource sleeps in the libraries' loop, which embeds this one.
                if let library = watchedLibrary { sleepInLibraryLoop(library) } else { ev_run(loop, Int32(EVRUN_ONCE)) }
            }
            takeWakeRequests(wake.wokeUp())
            if reasons.pointee == 0 { checkPollFailures() }
        } while reasons.pointee == 0
        advanceUnwatchedLibraryClock()
        wake.endPlan()
        if fallbackTimerActive { stopFallbackTimer() }
        let woke = WakeReasons(rawValue: reasons.pointee)
        if woke.contains(.deadline) && sleepMayBePrecise.load(ordering: .acquiring) { finishDeadlineWakeUp() }
        return woke
    }

    /// Looks without blocking (R20.9). `ev_run` only when libev could have something to report
    /// that the engine does not learn otherwise: the main queue's eventfd, a watcher to repair.
    /// Callers' descriptors are asked directly, from their ``DescriptorSet`` (its own epoll set,
    /// one `epoll_wait` instead of libev's and then the set's); a wake-up or a signal is a
    /// request bit; the timerfd matters to no poll (the engine compares timers with the clock).
    func poll() -> WakeReasons {
        reasons.pointee = 0
        if let library = watchedLibrary {
            readBeforeEnteringLibev()
            pollLibraryLoop(library)
        }
        if needsRepair || mainQueueWatcher != nil {
            readBeforeEnteringLibev()
            repair()
            ev_run(loop, Int32(EVRUN_NOWAIT))
        } else if let descriptors = descriptors.map(Unmanaged.passUnretained) {
            // Borrowed: only the teardown, never a poll, lets the set go.
            descriptors._withUnsafeGuaranteedRef { if !$0.isEmpty { noteReady(from: $0) } }
        }
        takeWakeRequests(wake.takeRequests())
        advanceUnwatchedLibraryClock()
        // A fallback timer serves sleeps only, in the loop each sleeps in: the next one arms it again.
        if fallbackTimerActive {
            stopFallbackTimer()
            deadlineUnarmed = true
        }
        return WakeReasons(rawValue: reasons.pointee)
    }

    /// Reads the eventfd if it woke the loop since it was last read. A wake-up's read waits until
    /// the loop next enters libev (its next wait, or a poll that enters `ev_run`), so that the
    /// callouts the wake-up is for run one system call sooner. Until then no requester writes
    /// it (they write only while the loop sleeps), and libev, entered only after this read,
    /// does not find the old write and return at once. Read before ``WakeSignal/beginSleep()``:
    /// a request made after the read is either seen there or, made later, writes again.
    @inline(__always)
    private func readWakeKick() {
        guard wakeKickUnread.pointee != 0 else { return }
        wakeKickUnread.pointee = 0
        WakeSignal.drain(wake.descriptor)
    }

    /// Reads the eventfd and the timerfd if the last wait left them unread, before a poll
    /// enters libev: else libev would report them again.
    @inline(never)
    private func readBeforeEnteringLibev() {
        readWakeKick()
        if deadlineExpiredUnread { withDeadline { readExpiredDeadline(&$0) } }
    }

    /// Where ``wakeKickUnread`` lies from the start of the wake-up watcher.
    private static let wakeKickUnreadOffset = MemoryLayout<ev_io>.stride + MemoryLayout<UInt32>.size

    /// Has libev's next poll check for watchers pending before it blocks. libev makes a started
    /// watcher's `epoll_ctl` inside its next `ev_run`, after its first look at the pending
    /// queue, and blocks even with the watcher's `EV_ERROR` pending; its release callback,
    /// called just before it polls, then writes the eventfd, so the poll returns at once. Set
    /// for that one poll only, so that the common wait calls no callback.
    func checkNextPollForPendingWatchers() {
        ev_set_loop_release_cb(loop, { loop in
            guard let loop else { return }
            EvBackend.with(loop) { $0.kickIfWatchersPending() }
        }, nil)
    }

    private func kickIfWatchersPending() {
        ev_set_loop_release_cb(loop, nil, nil)
        if ev_pending_count(loop) != 0 { _ = wake.kick() }
    }

    /// Ends the current or next ``sleep()`` at once. Safe from any thread.
    func wakeUp() {
        guard !destroyed, !wake.request(WakeSignal.wakeUp) else { return }
        retryWakeUp()
    }

    /// The eventfd refused the write (a hard error): the request stays set; tries again for a
    /// while, then stops rather than leave the loop asleep with work for it.
    @inline(never)
    private func retryWakeUp() {
        for _ in 0..<Self.retryLimit {
            sched_yield()
            if wake.kick() { return }
        }
        fatalError("EvRunLoop.wakeUp(): cannot write the loop's eventfd: \(describe(errno: errno))")
    }

    /// Destroys the libev loop and closes every descriptor. Idempotent.
    func destroy() {
        guard !destroyed else { return }
        destroyed = true
        for token in (watcherTables?.watchers.indices).map(Array.init) ?? [] where watcher(token) != nil { removeWatcher(token) }
        if fallbackTimerActive { stopFallbackTimer() }
        destroyLibraryLoop()
        closeDescriptorSet()
        if let mainQueueWatcher {
            ev_io_stop(loop, mainQueueWatcher)
            mainQueueWatcher.deallocate()
        }
        if let deadlineWatcher { ev_io_stop(loop, deadlineWatcher) }
        ev_io_stop(loop, wakeWatcher)
        if let fallbackTimer { ev_timer_stop(loop, fallbackTimer) }
        let timerFD = withDeadline { state in
            defer { state.timerFD = -1 }
            return state.timerFD
        }
        for fd in [backendFD, wake.descriptor, timerFD] { InternalDescriptors.remove(fd) }
        ev_loop_destroy(loop)
        if timerFD >= 0 { close(timerFD) }
        wake.closeDescriptor()
        UnsafeMutableRawPointer(wakeWatcher).deallocate()  // and `reasons` and `wakeKickUnread`, allocated with it
        deadlineWatcher?.deallocate()
        fallbackTimer?.deallocate()
    }

    deinit { destroy() }

    /// Whether the calling thread is the process's main thread (on Linux its id is the pid).
    static var isMainThread: Bool { clibev_gettid() == getpid() }

    /// `body` with the backend of `loop`, borrowed: a callback runs inside its `ev_run`, while
    /// the loop's thread holds the backend, so it needs no retain and release of its own.
    @inline(__always)
    static func with<Result>(_ loop: OpaquePointer, _ body: (EvBackend) -> Result) -> Result {
        Unmanaged<EvBackend>.fromOpaque(ev_userdata(loop))._withUnsafeGuaranteedRef(body)
    }

    /// Handles the requests taken from ``wake``: a wake-up, signals that arrived, a deadline
    /// moved from another thread that this thread must arm.
    @inline(__always)
    private func takeWakeRequests(_ requests: UInt32) {
        guard requests != 0 else { return }
        if requests & WakeSignal.wakeUp != 0 { reasons.pointee |= WakeReasons.wakeUp.rawValue }
        if requests & WakeSignal.signalArrived != 0 { collectSignals() }
        if requests & WakeSignal.deadlineNeedsLoop != 0 { armRequestedDeadline() }
    }
}

/// `body`'s result, calling it again while it fails with `EINTR`.
func retryingEINTR(_ body: () -> Int32) -> Int32 {
    var result = body()
    while result < 0 && errno == EINTR { result = body() }
    return result
}

/// `strerror` with the errno name's number: "Too many open files (errno 24)".
func describe(errno error: Int32) -> String {
    "\(String(cString: strerror(error))) (errno \(error))"
}
