import CLibev
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// What ended one wait of the libev layer.
struct WakeReasons: OptionSet, Sendable {
    let rawValue: UInt32
    /// `wakeUp()` (the `ev_async`) was triggered.
    static let wakeUp = WakeReasons(rawValue: 1 << 0)
    /// The deadline passed (the timerfd became readable).
    static let deadline = WakeReasons(rawValue: 1 << 1)
    /// A watcher of a version-1 source reported readiness (see ``EvBackend/takeReady()``).
    static let watcher = WakeReasons(rawValue: 1 << 2)
    /// libdispatch's main queue has work (main loop only).
    static let mainQueue = WakeReasons(rawValue: 1 << 3)
}

/// The libev layer: the one type that touches libev (architecture.md "Only the files that wrap
/// libev import CLibev").
///
/// It owns an `ev_loop` with at most three descriptors — the backend's epoll fd, the eventfd of
/// its ``WakeSignal`` behind ``wakeUp()``, and, from the first sleep with a deadline, one
/// `timerfd` that holds the deadline (the running mode's next timer or the run's timeout,
/// whichever is first). A timerfd instead of an `ev_timer` because libev's epoll backend rounds
/// its timeouts up to whole milliseconds; the timerfd fires to the microsecond and can be
/// re-armed from any thread. It is made lazily because libev sizes each loop's descriptor table
/// by the highest number the loop watches: a loop that never sleeps with a deadline (a thread's
/// loop touched and parked, say) watches one descriptor numbered like raw libev's, not two
/// numbered half as high again. A loop that watches callers' descriptors has one more: the epoll
/// set of its ``DescriptorSet``. None of them can be watched as a caller's descriptor (see
/// ``isInternalDescriptor(_:)``).
///
/// Failures never end in libev's `abort`: creating the loop's first two descriptors throws; a
/// `timerfd` that cannot be made when first needed is stood in for like one that cannot be
/// armed (below), and made at a later deadline; libev's system-error
/// hook (`ev_set_syserr_cb`) reports a failed `epoll_wait`, which is retried; a watcher whose
/// `epoll_ctl` failed (libev stops it and passes `EV_ERROR`) is started again before the next
/// wait, which first polls so the retry's result is known before the loop blocks; a `timerfd`
/// that could not be armed is backed by an `ev_timer`. A failure that persists stops the
/// process with a message naming RunLoopKit's call.
///
/// Thread rules: ``wait(poll:)`` and ``destroy()`` run on the loop's thread only;
/// ``wakeUp()`` and ``setDeadline(_:)`` may be called from any thread, but the caller serialises
/// them against ``destroy()`` (EvRunLoop holds its lock around them).
///
/// The mutable fields that every iteration touches are `@exclusivity(unchecked)`: the rules
/// above already serialise every access to them, and the run time's dynamic check (a
/// thread-local access set, about 100 instructions an access) cost several hundred
/// instructions per wake-up.
final class EvBackend {
    let loop: OpaquePointer
    /// Wakes the loop from other threads and from signal handlers (``SignalRouting``).
    let wake: WakeSignal
    private let wakeWatcher: UnsafeMutablePointer<ev_io>
    /// The timerfd's watcher, made with the timerfd (``makeTimerDescriptor(_:)``).
    @exclusivity(unchecked) var deadlineWatcher: UnsafeMutablePointer<ev_io>?
    /// Stands in for the timerfd while it cannot be armed or made (see ``setDeadline(_:)``),
    /// allocated at its first use: a loop that never needs it costs no allocation for it.
    @exclusivity(unchecked) var fallbackTimer: UnsafeMutablePointer<ev_timer>?
    /// libev's epoll descriptor, or -1 if it could not be told (see ``backendDescriptor(expected:holding:)``).
    private var backendFD: Int32 = -1
    // The flags below fill the padding after `backendFD` rather than a word each (32 bytes of
    // heap a loop, the object's allocation going down a size class).
    private(set) var destroyed = false
    /// An internal watcher was started since the last `ev_run`: libev calls `epoll_ctl` for it
    /// only inside the next one, so that one must not block (see ``wait(poll:)``).
    @exclusivity(unchecked) var hasUnflushedWatchers = false
    /// Arming the timerfd failed (a ``WakeSignal/deadlineChanged`` request was taken, or the
    /// loop's own ``setDeadline(_:)`` failed): ``armFallbackIfNeeded()`` retries or stands in
    /// before the next wait.
    @exclusivity(unchecked) var deadlineUnarmed = false
    @exclusivity(unchecked) var fallbackTimerActive = false
    /// Set by the watcher callbacks during `ev_run`; read and cleared by `wait`. In the same
    /// allocation as ``wakeWatcher``, just after it (one heap block instead of two: 32 bytes a loop).
    let reasons: UnsafeMutablePointer<UInt32>
    /// The watchers of version-1 sources, made with the first (see ``WatcherTables``).
    var watcherTables: WatcherTables?
    /// Callers' descriptors, watched in a set of the loop's own (made at first use).
    @exclusivity(unchecked) var descriptors: DescriptorSet?
    var descriptorsWatcher: UnsafeMutablePointer<ev_io>?
    /// The main loop's watcher of libdispatch's main-queue eventfd (see EvBackend+MainQueue.swift).
    @exclusivity(unchecked) var mainQueueWatcher: UnsafeMutablePointer<ev_io>?
    /// Tokens whose watchers fired during the last wait, with what fired.
    @exclusivity(unchecked) var ready: [(token: Int, events: Int32)] = []
    /// Internal watchers libev stopped with `EV_ERROR` (their `epoll_ctl` failed), with `errno`.
    @exclusivity(unchecked) var failedWatchers: [(watcher: UnsafeMutablePointer<ev_io>, errno: Int32)] = []
    /// Re-arms of internal watchers that failed again, in a row.
    @exclusivity(unchecked) var rearmFailures = 0
    /// `epoll_wait` failures reported by libev, in a row.
    @exclusivity(unchecked) var pollFailures = 0
    var seenSystemErrors = 0
    /// The deadline last asked for and what the timerfd holds (see ``DeadlineState``).
    let deadline = Locked<DeadlineState>(DeadlineState())
    /// ``DeadlineState/settled`` as of the last change under `deadline`'s lock, read without it
    /// by ``setDeadline(_:)`` to skip an unchanged request (see there).
    let settled = Atomic<Int64>(DeadlineState().settled)
    /// Something the next wait must repair or flush before it may block or skip `ev_run`: a
    /// failed watcher, an unflushed one, an unarmed deadline, an active fallback timer. Plain
    /// fields of the loop's thread, so the usual wait (nothing to repair) reads no atomic and
    /// calls nothing before `ev_run`.
    var needsRepair: Bool {
        hasUnflushedWatchers || deadlineUnarmed || fallbackTimerActive || !failedWatchers.isEmpty || rearmFailures != 0
    }

    /// How often a failing `epoll_ctl` re-arm or `epoll_wait` is retried before the process stops.
    static let retryLimit = 64

    /// Creates the libev loop and its watchers.
    ///
    /// - Throws: ``EvRunLoopError/outOfFileDescriptors`` when the process has no descriptor
    ///   left for the loop's epoll set or its eventfd, or ``EvRunLoopError/backendUnavailable(_:)`` (naming
    ///   the call and the error) when the kernel refuses otherwise.
    init() throws(EvRunLoopError) {
        SystemErrorHook.install()
        guard let wake = WakeSignal() else { throw Self.creationError("eventfd", errno) }
        // libev does not tell its epoll descriptor; epoll_create1 takes the lowest free number,
        // so note that number just before (checked in backendDescriptor(expected:)).
        let expected = dup(wake.descriptor)
        guard expected >= 0 else {
            let error = errno
            wake.closeDescriptor()
            throw Self.creationError("ev_loop_new (epoll_create1)", error)
        }
        close(expected)
        // NOTIMERFD: libev would make a timerfd of its own (for time jumps, at the first
        // ev_periodic); the loop's descriptors stay its epoll set, eventfd and timerfd.
        let flags = UInt32(EVFLAG_NOSIGMASK) | UInt32(EVFLAG_NOENV) | UInt32(EVFLAG_NOTIMERFD) | UInt32(EVBACKEND_EPOLL)
        guard let loop = ev_loop_new(flags) else {
            let error = errno
            wake.closeDescriptor()
            throw Self.creationError("ev_loop_new (epoll_create1)", error)
        }
        self.loop = loop
        self.wake = wake
        let watcherAndReasons = UnsafeMutableRawPointer.allocate(
            byteCount: MemoryLayout<ev_io>.stride + MemoryLayout<UInt32>.size, alignment: MemoryLayout<ev_io>.alignment)
        wakeWatcher = watcherAndReasons.bindMemory(to: ev_io.self, capacity: 1)
        reasons = (watcherAndReasons + MemoryLayout<ev_io>.stride).bindMemory(to: UInt32.self, capacity: 1)
        reasons.initialize(to: 0)
        InternalDescriptors.insert(wake.descriptor)

        ev_set_userdata(loop, Unmanaged.passUnretained(self).toOpaque())
        clibev_io_init(wakeWatcher, { loop, watcher, revents in
            guard let loop, let watcher else { return }
            if revents & EvBackend.failed != 0 { return EvBackend.of(loop).internalWatcherFailed(watcher) }
            // The watcher holds the eventfd: no lookup of the backend, no retain and release of it.
            WakeSignal.drain(watcher.pointee.fd)
        }, wake.descriptor, Int32(EV_READ))
        startInternalWatcher(wakeWatcher)

        // libev calls epoll_ctl for new watchers inside its next ev_run: make that happen now, so
        // that a refusal is reported here and not as a loop that never wakes.
        // EINTR is retried; another error (ENOMEM, ENOSPC) twice more, then thrown.
        var attempts = 0
        while true {
            ev_run(loop, Int32(EVRUN_NOWAIT))
            hasUnflushedWatchers = false
            guard let failure = failedWatchers.first else { break }
            attempts += 1
            if failure.errno != EINTR && attempts >= 3 || attempts >= Self.retryLimit {
                destroy()
                throw Self.creationError("epoll_ctl", failure.errno)
            }
            restartFailedWatchers()
        }
        rearmFailures = 0
        // Known only now that libev's epoll set holds the wake-up eventfd (see below).
        backendFD = Self.backendDescriptor(expected: expected, holding: wake.descriptor)
        if backendFD >= 0 { InternalDescriptors.insert(backendFD) }
    }

    /// The error for a failed creation call: out of descriptors, or the call and `errno` named.
    private static func creationError(_ call: String, _ error: Int32) -> EvRunLoopError {
        error == EMFILE || error == ENFILE
            ? .outOfFileDescriptors : .backendUnavailable("\(call) failed: \(describe(errno: error))")
    }

    /// Sleeps until ``wakeUp()`` is called or the deadline set with ``setDeadline(_:)`` passes
    /// (R22); with `poll`, only looks and returns at once (R20.9).
    ///
    /// A poll enters `ev_run` only when libev could have something to report: the main queue's
    /// eventfd, a watcher to flush or repair, the fallback timer. Callers' descriptors are asked
    /// directly, from their ``DescriptorSet``. Otherwise the poll's answers come from the request
    /// bits alone, as `ev_run` would give them: a wake-up or a signal is a request bit
    /// (the eventfd only wakes a sleeping loop, and a count left in it ends the next sleep's
    /// `ev_run` with nothing taken, which ``wait(poll:)`` sleeps again after), and the timerfd
    /// matters to no poll (the engine compares timers with the clock; an expired timerfd left
    /// unread still holds its date, which is what ``DeadlineState/armed`` says).
    ///
    /// A sleep that only a request or the deadline can end (no caller's descriptor, no main
    /// queue: see ``wordSleepPlan()``) blocks on the ``WakeSignal``'s word with `futex_wait`, not
    /// in `ev_run`, until a millisecond before the deadline: a wake-up then makes two system
    /// calls instead of three (`epoll_wait`, the eventfd's `write` and `read`) and runs none of
    /// libev's dispatch. The last millisecond is slept in `epoll_wait` until the timerfd. A
    /// deadline set from another thread meanwhile (R44) brings it back to plan again.
    func wait(poll: Bool) -> WakeReasons {
        reasons.pointee = 0
        if poll {
            if needsRepair || mainQueueWatcher != nil {
                repair()
                ev_run(loop, Int32(EVRUN_NOWAIT))
                hasUnflushedWatchers = false
            } else if let descriptors, !descriptors.isEmpty {
                // Only callers' descriptors can be ready: their set answers without libev, one
                // epoll_wait instead of libev's on its own set and then the descriptor set's.
                for (token, events) in descriptors.collect() { noteReady(token, events) }
            }
            takeWakeRequests(wake.takeRequests())
        } else {
            // libev returns on its own every minute or so; that is not a wake-up (R30).
            while true {
                if needsRepair { repair() }
                let flushing = hasUnflushedWatchers
                hasUnflushedWatchers = false
                if !flushing, let plan = wordSleepPlan() {
                    if !wake.beginSleep(onWord: true) {
                        // Pairs with WakeSignal.deadlineSet(): a deadline set from another
                        // thread is seen here, or that thread sees the loop on the word.
                        atomicMemoryFence(ordering: .sequentiallyConsistent)
                        if settled.load(ordering: .relaxed) == plan.deadline { wake.sleepOnWord(until: plan.until) }
                    }
                    // A timeout is no reason: the next round sleeps in epoll_wait until the timerfd.
                    takeWakeRequests(wake.endSleep())
                    if reasons.pointee != 0 { break }
                    continue
                }
                let block = !wake.beginSleep(onWord: false) && !flushing
                ev_run(loop, Int32(block ? EVRUN_ONCE : EVRUN_NOWAIT))
                takeWakeRequests(wake.endSleep())
                if reasons.pointee != 0 {
                    pollFailures = 0
                    break
                }
                if block { checkPollFailures() }
            }
        }
        if fallbackTimerActive, let fallbackTimer {
            ev_timer_stop(loop, fallbackTimer)
            fallbackTimerActive = false
        }
        return WakeReasons(rawValue: reasons.pointee)
    }

    /// How a sleep may block on the wake-up word instead of in `epoll_wait` (see ``WakeSignal``),
    /// or `nil` if it must not: when nothing that only epoll reports can end it — no caller's
    /// descriptor, no main queue watched, nothing to repair — and the deadline (`deadline`, as
    /// ``settled`` reads) is more than ``wordSleepMargin`` away or absent. It then blocks on the
    /// word `until` that margin before the deadline (`nil`: no deadline), and the last stretch is
    /// slept in `epoll_wait` for the timerfd: a futex's timeout is stretched by the thread's timer
    /// slack (50 µs by default), the timerfd's is not. Signals arrive as request bits, so signal
    /// sources do not need epoll.
    @inline(__always)
    private func wordSleepPlan() -> (deadline: Int64, until: Int64?)? {
        if let descriptors, !descriptors.isEmpty { return nil }
        if let mainQueueWatcher, clibev_is_active(mainQueueWatcher) != 0 { return nil }
        if needsRepair { return nil }
        let deadline = settled.load(ordering: .relaxed)
        if deadline == MonotonicTime.distantFuture.nanoseconds { return (deadline, nil) }
        // DeadlineState.unsettled (Int64.min) is in the past too.
        let now = MonotonicTime.now().nanoseconds
        guard deadline > now && deadline - now > Self.wordSleepMargin else { return nil }
        return (deadline, deadline - Self.wordSleepMargin)
    }

    /// How long before its deadline a sleep leaves the wake-up word for `epoll_wait` and the
    /// timerfd (see ``wordSleepPlan()``): well above the timer slack and a virtual machine's
    /// usual lateness, so the futex's timeout falls before the deadline.
    static let wordSleepMargin: Int64 = 1_000_000

    /// Restarts failed watchers and stands in for an unarmed deadline (see EvBackend+Failures.swift).
    private func repair() {
        restartFailedWatchers()
        armFallbackIfNeeded()
    }

    /// Ends the current or next ``wait(poll:)`` at once. Safe from any thread.
    func wakeUp() {
        guard !destroyed, !wake.request(WakeSignal.wakeUp) else { return }
        // The eventfd refused the write (a hard error): the request stays set; try again for a
        // while, then stop rather than leave the loop asleep with work for it.
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
        for token in Array(watchers.keys) { removeWatcher(token) }
        closeDescriptorSet()
        if let mainQueueWatcher {
            ev_io_stop(loop, mainQueueWatcher)
            mainQueueWatcher.deallocate()
        }
        if let deadlineWatcher { ev_io_stop(loop, deadlineWatcher) }
        ev_io_stop(loop, wakeWatcher)
        if let fallbackTimer { ev_timer_stop(loop, fallbackTimer) }
        let timerFD = deadline.withLock { state in
            defer { state.timerFD = -1 }
            return state.timerFD
        }
        for fd in [backendFD, wake.descriptor, timerFD] { InternalDescriptors.remove(fd) }
        ev_loop_destroy(loop)
        if timerFD >= 0 { close(timerFD) }
        wake.closeDescriptor()
        UnsafeMutableRawPointer(wakeWatcher).deallocate()  // and `reasons`, allocated with it
        deadlineWatcher?.deallocate()
        fallbackTimer?.deallocate()
    }

    deinit { destroy() }

    /// Whether the calling thread is the process's main thread (on Linux its id is the pid).
    static var isMainThread: Bool { clibev_gettid() == getpid() }

    static func of(_ loop: OpaquePointer) -> EvBackend {
        Unmanaged<EvBackend>.fromOpaque(ev_userdata(loop)).takeUnretainedValue()
    }

    /// Handles the requests taken from ``wake``: a wake-up, signals that arrived, a deadline
    /// the timerfd refused. ``WakeSignal/deadlineMoved`` asks for nothing more: the wait goes
    /// round and sleeps until the new deadline.
    private func takeWakeRequests(_ requests: UInt32) {
        guard requests != 0 else { return }
        if requests & WakeSignal.wakeUp != 0 { reasons.pointee |= WakeReasons.wakeUp.rawValue }
        if requests & WakeSignal.signalArrived != 0 { collectSignals() }
        if requests & WakeSignal.deadlineChanged != 0 { deadlineUnarmed = true }
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
