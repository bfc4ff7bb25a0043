import CLibev
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
/// It owns an `ev_loop` with exactly three descriptors — the backend's epoll fd, libev's
/// eventfd behind the `ev_async` used by ``wakeUp()``, and one `timerfd` that holds the deadline
/// (the running mode's next timer or the run's timeout, whichever is first). A timerfd instead of
/// an `ev_timer` because libev's epoll backend rounds its timeouts up to whole milliseconds;
/// the timerfd fires to the microsecond and can be re-armed from any thread. A loop that watches
/// callers' descriptors has a fourth: the epoll set of its ``DescriptorSet``.
///
/// Thread rules: ``wait(until:poll:)`` and ``destroy()`` run on the loop's thread only;
/// ``wakeUp()`` and ``setDeadline(_:)`` may be called from any thread, but the caller serialises
/// them against ``destroy()`` (EvRunLoop holds its lock around them).
final class EvBackend {
    let loop: OpaquePointer
    private let async: UnsafeMutablePointer<ev_async>
    private let deadlineWatcher: UnsafeMutablePointer<ev_io>
    private let timerFD: Int32
    /// Set by the watcher callbacks during `ev_run`; read and cleared by `wait`.
    let reasons: UnsafeMutablePointer<UInt32>
    private var destroyed = false
    /// Watchers of version-1 sources, by token (see EvBackend+Watchers.swift).
    var watchers: [Int: Watcher] = [:]
    var nextWatcherToken = 0
    /// Callers' descriptors, watched in a set of the loop's own (made at first use).
    var descriptors: DescriptorSet?
    var descriptorsWatcher: UnsafeMutablePointer<ev_io>?
    /// The main loop's watcher of libdispatch's main-queue eventfd (see EvBackend+MainQueue.swift).
    var mainQueueWatcher: UnsafeMutablePointer<ev_io>?
    /// Tokens whose watchers fired during the last wait, with what fired.
    var ready: [(token: Int, events: Int32)] = []

    /// Creates the libev loop and its watchers.
    ///
    /// - Throws: ``EvRunLoopError/backendUnavailable(_:)`` when libev cannot create a backend,
    ///   or ``EvRunLoopError/outOfFileDescriptors`` when the process has no descriptor left.
    init() throws(EvRunLoopError) {
        let flags = UInt32(EVFLAG_NOSIGMASK) | UInt32(EVFLAG_NOENV) | UInt32(EVBACKEND_EPOLL)
        guard let loop = ev_loop_new(flags) else {
            throw errno == EMFILE || errno == ENFILE ? .outOfFileDescriptors : .backendUnavailable("ev_loop_new failed (errno \(errno))")
        }
        let timerFD = timerfd_create(CLOCK_MONOTONIC, Int32(TFD_NONBLOCK | TFD_CLOEXEC))
        if timerFD < 0 {
            let error = errno
            ev_loop_destroy(loop)
            throw error == EMFILE || error == ENFILE ? .outOfFileDescriptors : .backendUnavailable("timerfd_create failed (errno \(error))")
        }
        self.loop = loop
        self.timerFD = timerFD
        reasons = .allocate(capacity: 1)
        reasons.initialize(to: 0)
        async = .allocate(capacity: 1)
        deadlineWatcher = .allocate(capacity: 1)

        clibev_async_init(async) { _, watcher, _ in
            clibev_get_data(watcher).assumingMemoryBound(to: UInt32.self).pointee |= WakeReasons.wakeUp.rawValue
        }
        clibev_set_data(async, reasons)
        ev_async_start(loop, async)

        ev_set_userdata(loop, Unmanaged.passUnretained(self).toOpaque())
        clibev_io_init(deadlineWatcher, { _, watcher, _ in
            guard let watcher else { return }
            var expirations: UInt64 = 0
            _ = read(watcher.pointee.fd, &expirations, 8)
            clibev_get_data(watcher).assumingMemoryBound(to: UInt32.self).pointee |= WakeReasons.deadline.rawValue
        }, timerFD, Int32(EV_READ))
        clibev_set_data(deadlineWatcher, reasons)
        ev_io_start(loop, deadlineWatcher)

        // ev_async_start creates libev's eventfd lazily; the loop's descriptors must all exist now,
        // so that running out of them is reported here and not at the first wake-up.
        if !clibev_is_active(async).boolValue {
            destroy()
            throw .outOfFileDescriptors
        }
    }

    /// Sleeps until ``wakeUp()`` is called or the deadline set with ``setDeadline(_:)`` passes
    /// (R22); with `poll`, only looks and returns at once (R20.9).
    func wait(poll: Bool) -> WakeReasons {
        reasons.pointee = 0
        if poll {
            ev_run(loop, Int32(EVRUN_NOWAIT))
        } else {
            // libev returns on its own every minute or so; that is not a wake-up (R30).
            while reasons.pointee == 0 { ev_run(loop, Int32(EVRUN_ONCE)) }
        }
        return WakeReasons(rawValue: reasons.pointee)
    }

    /// Ends the current or next ``wait(poll:)`` at once. Safe from any thread.
    func wakeUp() {
        if !destroyed { ev_async_send(loop, async) }
    }

    /// Arms the deadline (absolute, `CLOCK_MONOTONIC`); ``MonotonicTime/distantFuture`` disarms it.
    func setDeadline(_ deadline: MonotonicTime) {
        guard !destroyed else { return }
        var spec = itimerspec()
        if deadline != .distantFuture {
            let ns = max(deadline.nanoseconds, 1)  // zero would disarm; the past fires at once
            spec.it_value.tv_sec = Int(ns / 1_000_000_000)
            spec.it_value.tv_nsec = Int(ns % 1_000_000_000)
        }
        timerfd_settime(timerFD, Int32(TFD_TIMER_ABSTIME), &spec, nil)
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
        ev_io_stop(loop, deadlineWatcher)
        ev_async_stop(loop, async)
        ev_loop_destroy(loop)
        close(timerFD)
        async.deallocate()
        deadlineWatcher.deallocate()
        reasons.deallocate()
    }

    deinit { destroy() }

    /// Whether the calling thread is the process's main thread (on Linux its id is the pid).
    static var isMainThread: Bool { clibev_gettid() == getpid() }
}

extension Int32 {
    fileprivate var boolValue: Bool { self != 0 }
}
