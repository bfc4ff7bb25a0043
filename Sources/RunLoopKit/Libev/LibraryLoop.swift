import CLibev
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The libev loop that libev libraries attach to through ``EvLibevSource``: a second `ev_loop`
/// of the run loop, on its thread, made for its first such source and destroyed with it.
///
/// Why not the run loop's own `ev_loop`: libev has one watcher set per loop, and its epoll
/// backend is level-triggered. A library's descriptor that is ready while a mode without the
/// source runs (R37: its callbacks wait) would be reported by every poll of a shared set, and the
/// loop would spin. Here the libraries' watchers have a set of their own. While a mode that holds
/// an ``EvLibevSource`` runs, the loop sleeps in this loop's `ev_run`, which embeds the run
/// loop's own (`ev_embed`: that loop's epoll descriptor is watched here, and its watcher changes
/// are made before a wait here), so every wake-up still ends the sleep. While another mode runs,
/// the loop sleeps in its own `ev_run`, and the libraries' descriptors and timers wait in their
/// set, as CF's per-mode epoll sets make them wait.
///
/// The libraries' callbacks for events run outside `ev_run`: the invoke-pending callback
/// (``eventsPending()``) runs this loop's own watchers at once and leaves the libraries'
/// pending, for `ev_invoke_pending` in the version-1 step (EvBackend+LibraryLoop.swift). Only
/// what libev runs before it polls (prepare and fork watchers) runs there, as libev runs it,
/// and cleanup watchers run as the loop is destroyed. Its userdata is this object. Loop's
/// thread only, like the backend: the fields the waits touch skip the run time's exclusivity
/// check, as the backend's do.
final class LibraryLoop {
    let loop: OpaquePointer
    /// The run loop's wait, which owns this object (so never gone while it is used).
    unowned(unsafe) let backend: EvBackend
    /// Embeds the run loop's own `ev_loop`; its watchers are this loop's own (the prepare one
    /// stopped, see EvBackend+LibraryLoop.swift).
    let embed: UnsafeMutablePointer<ev_embed>
    let embedIO: UnsafeMutablePointer<ev_io>
    let embedPrepare: UnsafeMutablePointer<ev_prepare>
    let embedFork: UnsafeMutablePointer<ev_fork>
    /// Reports `ev_loop_destroy` on this loop, which only RunLoopKit may call.
    let cleanup: UnsafeMutablePointer<ev_cleanup>
    /// This loop's epoll descriptor, -1 if it could not be told.
    @exclusivity(unchecked) var backendFD: Int32 = -1
    /// The version-1 watchers started: one per ``EvLibevSource`` of the running mode (R37).
    @exclusivity(unchecked) var tokens: [Int] = []
    /// RunLoopKit's `ev_run` calls on this loop in progress (a callback may run a nested run).
    @exclusivity(unchecked) var runDepth = 0
    /// Placeholders that `ev_clear_pending` left in libev's pending array: `ev_pending_count`
    /// counts them until the next `ev_invoke_pending` calls libev's no-op callback for them.
    @exclusivity(unchecked) var placeholders: UInt32 = 0
    /// `ev_pending_count` as the invoke-pending callback left it: more at the poll means an event
    /// came in between (an `EV_ERROR` from the `epoll_ctl` libev just made).
    @exclusivity(unchecked) var pendingAfterHook: UInt32 = 0
    /// The libraries' watchers have events whose callbacks have not run yet.
    @exclusivity(unchecked) var holdsEvents = false
    /// Whether the current `ev_run` went through the invoke-pending callback and the release
    /// callback (the poll, which `ev_iteration` counts).
    @exclusivity(unchecked) var hookRan = false
    /// Whether the current `ev_run` polled yet: before, the invoke-pending callback runs the
    /// prepare and fork watchers libev queued for that point.
    @exclusivity(unchecked) var polled = false
    /// Polls the release callback saw, to compare with libev's own count (`ev_iteration`).
    @exclusivity(unchecked) var pollsSeen: UInt32 = 0
    /// Set while ``destroy()`` destroys the loop: libev runs the libraries' cleanup watchers.
    @exclusivity(unchecked) var isDestroying = false
    /// The next poll lists the descriptors this loop watches (after library code ran).
    @exclusivity(unchecked) var auditDue = false
    /// Batches of the libraries' callbacks run; every ``auditInterval``th is audited.
    @exclusivity(unchecked) var batches: UInt32 = 0
    static let auditInterval: UInt32 = 1024
    /// The backend's deadline fallback timer runs here, not in the run loop's own `ev_loop`.
    @exclusivity(unchecked) var holdsFallbackTimer = false
    /// Restarts of the embedding watcher in a row (its `epoll_ctl` failed).
    @exclusivity(unchecked) var embedFailures = 0
    /// `ev_loop_fork` was called: this `ev_run` makes both epoll sets again, and the poll
    /// learns their new numbers (EvBackend+EpollDescriptor.swift).
    @exclusivity(unchecked) var epollSetsRemade = false

    /// How the libraries' `ev_loop` is made (epoll, no environment, no signal mask, signals
    /// through a `signalfd`, which an `ev_signal` then adds to its epoll set, where the audit
    /// sees it).
    static let flags = UInt32(EVFLAG_NOSIGMASK) | UInt32(EVFLAG_NOENV) | UInt32(EVFLAG_NOTIMERFD)
        | UInt32(EVFLAG_SIGNALFD) | UInt32(EVBACKEND_EPOLL)

    /// Takes `loop`, made with ``flags``, for `backend`'s libraries: installs its callbacks and
    /// makes its watchers, not started.
    init(loop: OpaquePointer, for backend: EvBackend) {
        self.loop = loop
        self.backend = backend
        embed = .allocate(capacity: 1)
        embedIO = clibev_embed_io(embed)
        embedPrepare = clibev_embed_prepare(embed)
        embedFork = clibev_embed_fork(embed)
        cleanup = .allocate(capacity: 1)
        ev_set_userdata(loop, Unmanaged.passUnretained(self).toOpaque())
        // Called several times a wait: this object without a retain and release each time.
        ev_set_invoke_pending_cb(loop) { loop in
            guard let loop else { return }
            Unmanaged<LibraryLoop>.fromOpaque(ev_userdata(loop))._withUnsafeGuaranteedRef { $0.eventsPending() }
        }
        ev_set_loop_release_cb(loop, { loop in
            guard let loop else { return }
            Unmanaged<LibraryLoop>.fromOpaque(ev_userdata(loop))._withUnsafeGuaranteedRef { $0.enteringPoll() }
        }, nil)
        clibev_cleanup_init(cleanup) { _, _, _ in
            fatalError("EvLibevSource: ev_loop_destroy was called on its libev loop; only RunLoopKit destroys it, when the loop's thread exits")
        }
    }

    /// The invoke-pending callback, inside this loop's `ev_run` (or `ev_loop_destroy`): runs the
    /// loop's own watchers at once and leaves the libraries' pending; they run in the version-1
    /// step (R38). `ev_clear_pending` leaves a placeholder behind, which `ev_pending_count`
    /// still counts: what is pending beyond the placeholders and the loop's own watchers is the
    /// libraries'.
    private func eventsPending() {
        if isDestroying {
            // The libraries' cleanup watchers, which libev runs as it destroys the loop.
            ev_invoke_pending(loop)
            return
        }
        if clibev_is_pending(cleanup) != 0 {
            fatalError("EvLibevSource: ev_loop_destroy was called on its libev loop; only RunLoopKit destroys it, when the loop's thread exits")
        }
        require(runDepth > 0, "EvLibevSource: ev_run was called on its libev loop; RunLoopKit runs it (run the EvRunLoop instead)")
        // `ev_run` first runs what is pending from before (events fed since): those are events,
        // for the version-1 step; later looks before the poll find prepare and fork watchers.
        let isFirstLook = !hookRan
        hookRan = true
        let pending = ev_pending_count(loop)
        if pending != placeholders {
            if clibev_is_pending(embedFork) != 0 && !epollSetsRemade { backend.releaseEpollNumbers(self) }
            let fallback = holdsFallbackTimer ? backend.fallbackTimer : nil
            let own = Self.pendingCount(embedIO) + Self.pendingCount(embedPrepare) + Self.pendingCount(embedFork)
                + (fallback.map(Self.pendingCount) ?? 0)
            var callbacksRan = own != 0
            if pending == placeholders + own {
                // Only the loop's own: libev runs them, and drops the placeholders.
                ev_invoke_pending(loop)
                placeholders = 0
            } else if !polled && !holdsEvents && !isFirstLook {
                // Before the poll, with no earlier events waiting for the version-1 step.
                backend.runLibraryCallbacksBeforePoll(self)
                callbacksRan = true
            } else {
                if own != 0 {
                    placeholders += runOwn(embedIO) + runOwn(embedPrepare) + runOwn(embedFork)
                    if let fallback { placeholders += runOwn(fallback) }
                }
                holdsEvents = true
                backend.libraryEventsArrived = true
                backend.hasReady = true
                backend.reasons.pointee |= WakeReasons.watcher.rawValue
            }
            // Callbacks that ran may have fed more (the embedded loop's run): count again.
            pendingAfterHook = callbacksRan ? ev_pending_count(loop) : pending
        } else {
            pendingAfterHook = pending
        }
        // The wait is over (a wake-up the embedded loop ran, the libraries' events): no poll.
        if backend.reasons.pointee != 0 { ev_break(loop, Int32(EVBREAK_ONE)) }
    }

    /// The release callback, just before this loop blocks in `epoll_wait`.
    private func enteringPoll() {
        polled = true
        pollsSeen &+= 1
        if epollSetsRemade { backend.claimEpollNumbers(self) }
        // Every ev_run invokes the pending callbacks before it polls: checked before it blocks.
        backend.requireOwnInvokePending(self)
        if auditDue { backend.auditLibraryDescriptors(self) }
        // Pending since the invoke-pending callback: libev would block with them; return at once.
        if ev_pending_count(loop) != pendingAfterHook { _ = backend.wake.kick() }
    }

    /// 1 if `watcher` is pending, else 0.
    private static func pendingCount<Watcher>(_ watcher: UnsafeMutablePointer<Watcher>) -> UInt32 {
        clibev_is_pending(watcher) != 0 ? 1 : 0
    }

    /// Runs `watcher`, one of this loop's own, if it is pending; returns 1 if it was (one
    /// placeholder left behind), else 0.
    private func runOwn<Watcher>(_ watcher: UnsafeMutablePointer<Watcher>) -> UInt32 {
        let events = ev_clear_pending(loop, watcher)
        guard events != 0 else { return 0 }
        ev_invoke(loop, watcher, events)
        return 1
    }

    /// Stops the loop's watchers and destroys it; libraries' watchers left in it are abandoned
    /// (libev frees nothing of theirs).
    func destroy() {
        ev_cleanup_stop(loop, cleanup)
        ev_embed_stop(loop, embed)
        InternalDescriptors.remove(backendFD)
        isDestroying = true
        ev_loop_destroy(loop)
        embed.deallocate()
        cleanup.deallocate()
    }
}
