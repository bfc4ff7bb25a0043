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
/// are made before each poll), so every wake-up still ends the sleep. While another mode runs,
/// the loop sleeps in its own `ev_run`, and the libraries' descriptors and timers wait in their
/// set, as CF's per-mode epoll sets make them wait.
///
/// The libraries' callbacks never run inside `ev_run`: the invoke-pending callback runs this
/// loop's own watchers at once and leaves the libraries' pending, for `ev_invoke_pending` in the
/// version-1 step (EvBackend+LibraryLoop.swift). Loop's thread only, like the backend.
final class LibraryLoop {
    let loop: OpaquePointer
    /// Embeds the run loop's own `ev_loop`; its `io`, `prepare` and `fork` are this loop's watchers.
    let embed: UnsafeMutablePointer<ev_embed>
    /// Reports `ev_loop_destroy` on this loop, which only RunLoopKit may call.
    let cleanup: UnsafeMutablePointer<ev_cleanup>
    /// This loop's epoll descriptor, -1 if it could not be told.
    var backendFD: Int32 = -1
    /// The version-1 watchers started: one per ``EvLibevSource`` of the running mode (R37).
    var tokens: [Int] = []
    /// RunLoopKit's `ev_run` calls on this loop in progress (a callback may run a nested run).
    var runDepth = 0
    /// Placeholders that `ev_clear_pending` left in libev's pending array: `ev_pending_count`
    /// counts them until the next `ev_invoke_pending` calls libev's no-op callback for them.
    var placeholders: UInt32 = 0
    /// `ev_pending_count` as the invoke-pending callback left it: more at the poll means an event
    /// came in between (an `EV_ERROR` from the `epoll_ctl` libev just made).
    var pendingAfterHook: UInt32 = 0
    /// The libraries' watchers have events whose callbacks have not run yet.
    var holdsEvents = false
    /// Whether the current `ev_run` went through the invoke-pending callback and the release
    /// callback (the poll, which `ev_iteration` counts).
    var hookRan = false
    var polled = false
    /// The next poll lists the descriptors this loop watches (after library code ran).
    var auditDue = false
    /// Batches of the libraries' callbacks run; every ``auditInterval``th is audited.
    var batches: UInt32 = 0
    static let auditInterval: UInt32 = 256
    /// The loop's deadline fallback timer runs here, not in the run loop's own `ev_loop`.
    var holdsFallbackTimer = false
    /// Restarts of the embedding watcher in a row (its `epoll_ctl` failed).
    var embedFailures = 0

    /// The loop's own watchers in it: the embedding's.
    var embedIO: UnsafeMutablePointer<ev_io> { clibev_embed_io(embed) }

    /// A new loop (epoll, no environment, no signal mask, signals through a `signalfd`, which an
    /// `ev_signal` then adds to its epoll set, where the audit sees it) with its watchers
    /// allocated, not started.
    init?() {
        let flags = UInt32(EVFLAG_NOSIGMASK) | UInt32(EVFLAG_NOENV) | UInt32(EVFLAG_NOTIMERFD)
            | UInt32(EVFLAG_SIGNALFD) | UInt32(EVBACKEND_EPOLL)
        guard let loop = ev_loop_new(flags) else { return nil }
        self.loop = loop
        embed = .allocate(capacity: 1)
        cleanup = .allocate(capacity: 1)
    }

    /// Stops the loop's watchers and destroys it; libraries' watchers left in it are abandoned
    /// (libev frees nothing of theirs).
    func destroy() {
        ev_cleanup_stop(loop, cleanup)
        ev_embed_stop(loop, embed)
        InternalDescriptors.remove(backendFD)
        ev_loop_destroy(loop)
        embed.deallocate()
        cleanup.deallocate()
    }
}
