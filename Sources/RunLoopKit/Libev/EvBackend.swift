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
    /// Set by the watcher callbacks during `ev_run`; read and cleared by `wait`.
    let reasons: UnsafeMutablePointer<UInt32>
    private var destroyed = false
    /// Watchers of version-1 sources, by token (see EvBackend+Watchers.swift).
    var watchers: [Int: Watcher] = [:]
    var nextWatcherToken = 0
    /// Started signal watchers: the tokens watching each signal.
    var signalTokens: [Int32: Set<Int>] = [:]
    /// Callers' descriptors, watched in a set of the loop's own (made at first use).
    @exclusivity(unchecked) var descriptors: DescriptorSet?
    var descriptorsWatcher: UnsafeMutablePointer<ev_io>?
    /// The main loop's watcher of libdispatch's main-queue eventfd (see EvBackend+MainQueue.swift).
    var mainQueueWatcher: UnsafeMutablePointer<ev_io>?
    /// Tokens whose watchers fired during the last wait, with what fired.
    @exclusivity(unchecked) var ready: [(token: Int, events: Int32)] = []
    /// Internal watchers libev stopped with `EV_ERROR` (their `epoll_ctl` failed), with `errno`.
    @exclusivity(unchecked) var failedWatchers: [(watcher: UnsafeMutablePointer<ev_io>, errno: Int32)] = []
    /// An internal watcher was started since the last `ev_run`: libev calls `epoll_ctl` for it
    /// only inside the next one, so that one must not block (see ``wait(poll:)``).
    @exclusivity(unchecked) var hasUnflushedWatchers = false
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
    /// Arming the timerfd failed (a ``WakeSignal/deadlineChanged`` request was taken, or the
    /// loop's own ``setDeadline(_:)`` failed): ``armFallbackIfNeeded()`` retries or stands in
    /// before the next wait.
    @exclusivity(unchecked) var deadlineUnarmed = false
    @exclusivity(unchecked) var fallbackTimerActive = false
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
        reasons = .allocate(capacity: 1)
        reasons.initialize(to: 0)
        wakeWatcher = .allocate(capacity: 1)
        InternalDescriptors.insert([wake.descriptor])

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
        if backendFD >= 0 { InternalDescriptors.insert([backendFD]) }
    }

    /// libev's epoll descriptor: `expected` (the lowest free number just before `ev_loop_new`)
    /// if the epoll instance behind that number watches this loop's wake-up eventfd `wake`, which
    /// only libev's epoll set of this loop can (no source may watch a loop's own descriptor).
    /// Another thread may have taken that number in between (another loop's epoll set, say): then
    /// -1, and this loop's epoll descriptor stays unknown to ``InternalDescriptors`` rather than
    /// a number that belongs to someone else being refused to every caller.
    ///
    /// Without a heap allocation (a stack buffer, bytes parsed by hand): every loop makes this
    /// call, and what its thread allocates and frees here would stay resident in that thread's
    /// malloc arena.
    private static func backendDescriptor(expected: Int32, holding wake: Int32) -> Int32 {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 512) { buffer -> Int32 in
            // "/proc/self/fdinfo/<expected>", NUL-terminated.
            var length = 0
            let prefix: StaticString = "/proc/self/fdinfo/"
            prefix.withUTF8Buffer { bytes in
                for byte in bytes { buffer[length] = byte; length += 1 }
            }
            length += writeDecimal(expected, into: UnsafeMutableBufferPointer(rebasing: buffer[length...]))
            buffer[length] = 0
            let file = buffer.withMemoryRebound(to: CChar.self) { open($0.baseAddress!, O_RDONLY | O_CLOEXEC) }
            guard file >= 0 else { return -1 }
            defer { close(file) }
            // One read: libev's set watches one descriptor yet, well within the buffer. A set
            // that someone else's thread made at this number may be cut short: then the
            // eventfd is not found, and -1 is the safe answer.
            var count = read(file, buffer.baseAddress, buffer.count)
            while count < 0 && errno == EINTR { count = read(file, buffer.baseAddress, buffer.count) }
            guard count > 0 else { return -1 }
            // An epoll instance lists each watched descriptor as "tfd: <spaces><number> events: …".
            let tag: StaticString = "tfd:"
            var lineStart = 0
            while lineStart < count {
                var lineEnd = lineStart
                while lineEnd < count && buffer[lineEnd] != UInt8(ascii: "\n") { lineEnd += 1 }
                let isTarget = lineEnd - lineStart > tag.utf8CodeUnitCount
                    && tag.withUTF8Buffer { tagBytes in tagBytes.indices.allSatisfy { buffer[lineStart + $0] == tagBytes[$0] } }
                if isTarget {
                    var index = lineStart + tag.utf8CodeUnitCount
                    while index < lineEnd && buffer[index] == UInt8(ascii: " ") { index += 1 }
                    var number: Int32 = 0
                    var digits = 0
                    while index < lineEnd, buffer[index] >= UInt8(ascii: "0"), buffer[index] <= UInt8(ascii: "9"), digits < 10 {
                        number = number &* 10 &+ Int32(buffer[index] - UInt8(ascii: "0"))
                        index += 1
                        digits += 1
                    }
                    if digits > 0 && number == wake { return expected }
                }
                lineStart = lineEnd + 1
            }
            return -1
        }
    }

    /// Writes `value` (not negative) in decimal at the start of `buffer`; returns how many bytes.
    private static func writeDecimal(_ value: Int32, into buffer: UnsafeMutableBufferPointer<UInt8>) -> Int {
        var digits = 0
        var rest = value
        repeat {
            digits += 1
            rest /= 10
        } while rest > 0
        rest = value
        for index in stride(from: digits - 1, through: 0, by: -1) {
            buffer[index] = UInt8(ascii: "0") + UInt8(rest % 10)
            rest /= 10
        }
        return digits
    }

    /// The error for a failed creation call: out of descriptors, or the call and `errno` named.
    private static func creationError(_ call: String, _ error: Int32) -> EvRunLoopError {
        error == EMFILE || error == ENFILE
            ? .outOfFileDescriptors : .backendUnavailable("\(call) failed: \(describe(errno: error))")
    }

    /// Sleeps until ``wakeUp()`` is called or the deadline set with ``setDeadline(_:)`` passes
    /// (R22); with `poll`, only looks and returns at once (R20.9).
    ///
    /// A poll enters `ev_run` only when libev could have something to report: a caller's
    /// descriptor watched in the ``DescriptorSet``, the main queue's eventfd, a watcher to
    /// flush or repair, the fallback timer. Otherwise the poll's answers come from the request
    /// bits alone, as `ev_run` would give them: a wake-up or a signal is a request bit
    /// (the eventfd only wakes a sleeping loop, and a count left in it ends the next sleep's
    /// `ev_run` with nothing taken, which ``wait(poll:)`` sleeps again after), and the timerfd
    /// matters to no poll (the engine compares timers with the clock; an expired timerfd left
    /// unread still holds its date, which is what ``DeadlineState/armed`` says).
    func wait(poll: Bool) -> WakeReasons {
        reasons.pointee = 0
        if poll {
            if needsRepair || descriptors?.isEmpty == false || mainQueueWatcher != nil {
                repair()
                ev_run(loop, Int32(EVRUN_NOWAIT))
                hasUnflushedWatchers = false
            }
            takeWakeRequests(wake.takeRequests())
        } else {
            // libev returns on its own every minute or so; that is not a wake-up (R30).
            while true {
                if needsRepair { repair() }
                let flushing = hasUnflushedWatchers
                hasUnflushedWatchers = false
                let block = !wake.beginSleep() && !flushing
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

    /// Arms the deadline (absolute, `CLOCK_MONOTONIC`); ``MonotonicTime/distantFuture`` disarms it.
    /// A deadline the timerfd already holds costs no system call. If the timerfd refuses, the
    /// loop's next wait stands in for it with an `ev_timer`, so no wait sleeps past `deadline`.
    func setDeadline(_ deadline: MonotonicTime) {
        guard !destroyed else { return }
        // The loop's own sleeps ask for the same deadline again and again (no timer: always
        // distantFuture): then the lock is not taken either. Relaxed is enough: callers are
        // serialised by EvRunLoop's lock, so each sees what the one before stored; the only
        // store outside that lock is the loop's thread marking the timerfd disarmed once it
        // expired and was read (or the fallback's), and a caller on another thread never asks
        // for the date already asked for (EvRunLoop re-arms from other threads only for an
        // earlier one, R44), while the loop's thread sees its own store.
        if deadline.nanoseconds != DeadlineState.unsettled && settled.load(ordering: .relaxed) == deadline.nanoseconds { return }
        let armed = self.deadline.withLock { state in
            state.requested = deadline
            return arm(deadline, &state)
        }
        guard !armed else { return }
        // A request bit: the loop (asleep or about to sleep) does not block, takes it, and stands
        // in for the timerfd before its next wait. From the loop's own thread it is taken before
        // any sleep too (``WakeSignal/beginSleep()`` sees it).
        wake.request(WakeSignal.deadlineChanged)
    }

    /// Sets the timerfd to `deadline` unless it holds it already (caller holds `deadline`'s
    /// lock and passes its state). Returns false when `timerfd_settime` failed; what the timerfd
    /// holds is then unknown, so the next call sets it whatever it asks for. Returns false too
    /// for a first finite deadline, before the timerfd is made: only the loop's thread makes it
    /// and gives it to libev (``armFallbackIfNeeded()``).
    func arm(_ deadline: MonotonicTime, _ state: inout DeadlineState) -> Bool {
        defer { settled.store(state.settled, ordering: .relaxed) }
        if state.armed == deadline { return true }  // also "no timerfd yet" for distantFuture
        guard state.timerFD >= 0 else { return false }
        var spec = itimerspec()
        if deadline != .distantFuture {
            let ns = max(deadline.nanoseconds, 1)  // zero would disarm; the past fires at once
            spec.it_value.tv_sec = Int(ns / 1_000_000_000)
            spec.it_value.tv_nsec = Int(ns % 1_000_000_000)
        }
        let armed = retryingEINTR { timerfd_settime(state.timerFD, Int32(TFD_TIMER_ABSTIME), &spec, nil) } == 0
        state.armed = armed ? deadline : nil
        return armed
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
        InternalDescriptors.remove([backendFD, wake.descriptor, timerFD].filter { $0 >= 0 })
        ev_loop_destroy(loop)
        if timerFD >= 0 { close(timerFD) }
        wake.closeDescriptor()
        wakeWatcher.deallocate()
        deadlineWatcher?.deallocate()
        fallbackTimer?.deallocate()
        reasons.deallocate()
    }

    deinit { destroy() }

    /// Whether the calling thread is the process's main thread (on Linux its id is the pid).
    static var isMainThread: Bool { clibev_gettid() == getpid() }

    static func of(_ loop: OpaquePointer) -> EvBackend {
        Unmanaged<EvBackend>.fromOpaque(ev_userdata(loop)).takeUnretainedValue()
    }

    /// Handles the requests taken from ``wake``: a wake-up, signals that arrived, a deadline
    /// the timerfd refused.
    private func takeWakeRequests(_ requests: UInt32) {
        guard requests != 0 else { return }
        if requests & WakeSignal.wakeUp != 0 { reasons.pointee |= WakeReasons.wakeUp.rawValue }
        if requests & WakeSignal.signalArrived != 0 { collectSignals() }
        if requests & WakeSignal.deadlineChanged != 0 { deadlineUnarmed = true }
    }
}

/// The deadline as ``EvBackend/setDeadline(_:)`` asked for it and as the timerfd holds it, under
/// ``EvBackend/deadline``'s lock (any thread may arm, R44, C75).
struct DeadlineState {
    /// The deadline last asked for.
    var requested: MonotonicTime = .distantFuture
    /// What the timerfd holds: ``MonotonicTime/distantFuture`` when disarmed (as made, or after
    /// it expired and was read: it is one-shot), `nil` when unknown (`timerfd_settime` failed).
    /// An expired timerfd not read yet still holds its date: it is readable, as it would be
    /// if armed again for that date. No timerfd yet counts as disarmed.
    var armed: MonotonicTime? = .distantFuture
    /// The timerfd, or -1 until the first finite deadline made it (see
    /// ``EvBackend/makeTimerDescriptor(_:)``).
    var timerFD: Int32 = -1

    /// ``settled`` when the timerfd does not hold what was asked for (or that is unknown). A
    /// request for this date itself (the far past, saturated) always takes the lock.
    static let unsettled = Int64.min

    /// The deadline in nanoseconds when the timerfd holds exactly what was last asked for, else
    /// ``unsettled``.
    var settled: Int64 { armed == requested ? requested.nanoseconds : Self.unsettled }
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
