import CLibev
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The libev libraries' loop (``LibraryLoop``): made for the first ``EvLibevSource``, slept in
/// while a mode holding one runs, its libraries' callbacks run in the version-1 step. Loop's
/// thread only.
extension EvBackend {
    /// The libraries' loop, made now if it was not; stops with a message naming `call` if it
    /// cannot be made (no descriptor left for its epoll set, say).
    func madeLibraryLoop(_ call: StaticString) -> LibraryLoop {
        if let library = watcherTables?.library { return library }
        // libev does not tell its epoll descriptor: note the lowest free number (as for this loop's).
        let expected = dup(wake.descriptor)
        if expected >= 0 { close(expected) }
        guard let library = LibraryLoop() else {
            fatalError("\(call): cannot make the libev loop for EvLibevSource: ev_loop_new (epoll_create1) failed: \(describe(errno: errno))")
        }
        ev_set_userdata(library.loop, Unmanaged.passUnretained(self).toOpaque())
        ev_set_invoke_pending_cb(library.loop) { loop in
            guard let loop else { return }
            EvBackend.of(loop).libraryEventsPending()
        }
        ev_set_loop_release_cb(library.loop, { loop in
            guard let loop else { return }
            EvBackend.of(loop).enteringLibraryPoll()
        }, { loop in
            guard let loop else { return }
            EvBackend.of(loop).isInLibevPoll.store(false, ordering: .relaxed)
        })
        clibev_cleanup_init(library.cleanup) { _, _, _ in
            fatalError("EvLibevSource: ev_loop_destroy was called on its libev loop; only RunLoopKit destroys it, when the loop's thread exits")
        }
        ev_cleanup_start(library.loop, library.cleanup)
        clibev_embed_init(library.embed, loop)
        ev_embed_start(library.loop, library.embed)
        madeWatcherTables().library = library
        // The embedding's epoll_ctl is made in the next ev_run: make it now, so a refusal stops here.
        pollLibraryLoop(library)
        require(
            clibev_is_active(library.embedIO) != 0,
            "\(call): epoll_ctl refused the run loop's epoll descriptor in the libev loop for EvLibevSource: \(describe(errno: failedWatchers.last?.errno ?? 0))")
        library.backendFD = Self.backendDescriptor(expected: expected, holding: library.embedIO.pointee.fd)
        if library.backendFD >= 0 { InternalDescriptors.insert(library.backendFD) }
        return library
    }

    /// The libraries' loop's invoke-pending callback, inside its `ev_run` (or `ev_loop_destroy`):
    /// runs the loop's own watchers at once and leaves the libraries' pending; they run in the
    /// version-1 step (R38). `ev_clear_pending` leaves a placeholder behind, which
    /// `ev_pending_count` still counts: what is pending beyond the placeholders is the libraries'.
    func libraryEventsPending() {
        guard let library = watcherTables?.library else { return }
        if clibev_is_pending(library.cleanup) != 0 {
            fatalError("EvLibevSource: ev_loop_destroy was called on its libev loop; only RunLoopKit destroys it, when the loop's thread exits")
        }
        require(
            library.runDepth > 0,
            "EvLibevSource: ev_run was called on its libev loop; RunLoopKit runs it (run the EvRunLoop instead)")
        library.hookRan = true
        var own = runOwn(library.embedIO, library) + runOwn(clibev_embed_prepare(library.embed), library)
        own += runOwn(clibev_embed_fork(library.embed), library)
        if library.holdsFallbackTimer, let fallbackTimer { own += runOwn(fallbackTimer, library) }
        library.placeholders += own
        let pending = ev_pending_count(library.loop)
        if pending > library.placeholders {
            library.holdsEvents = true
            if let token = library.tokens.first { noteReady(token, Self.readable) }
        } else if pending != 0 {
            ev_invoke_pending(library.loop)  // placeholders only: libev's no-op callback for each
            library.placeholders = 0
        }
        library.pendingAfterHook = ev_pending_count(library.loop)
        // The wait is over (a wake-up the embedded loop ran, the libraries' events): no poll.
        if reasons.pointee != 0 { ev_break(library.loop, Int32(EVBREAK_ONE)) }
    }

    /// Runs `watcher`, one of the libraries' loop's own, if it is pending; returns 1 if it was
    /// (one placeholder left behind), else 0.
    private func runOwn<Watcher>(_ watcher: UnsafeMutablePointer<Watcher>, _ library: LibraryLoop) -> UInt32 {
        let events = ev_clear_pending(library.loop, watcher)
        guard events != 0 else { return 0 }
        ev_invoke(library.loop, watcher, events)
        return 1
    }

    /// The libraries' loop's release callback, just before it blocks in `epoll_wait`.
    private func enteringLibraryPoll() {
        isInLibevPoll.store(true, ordering: .relaxed)
        guard let library = watcherTables?.library else { return }
        library.polled = true
        if library.auditDue { auditLibraryDescriptors(library) }
        // Pending since the invoke-pending callback: libev would block with them; return at once.
        if ev_pending_count(library.loop) != library.pendingAfterHook { _ = wake.kick() }
    }

    /// The sleep while a mode with an ``EvLibevSource`` runs: `ev_run` of the libraries' loop,
    /// which embeds this one. Then checks that its callbacks are still RunLoopKit's.
    func sleepInLibraryLoop(_ library: LibraryLoop) {
        library.hookRan = false
        library.polled = false
        let iteration = ev_iteration(library.loop)
        library.runDepth += 1
        ev_run(library.loop, Int32(EVRUN_ONCE))
        library.runDepth -= 1
        require(
            library.hookRan,
            "EvLibevSource: the invoke-pending callback of its libev loop was replaced (ev_set_invoke_pending_cb); RunLoopKit's decides when the libraries' callbacks run")
        // libev counts an iteration just before its poll; a break before it polls nothing.
        require(
            library.polled || ev_iteration(library.loop) == iteration,
            "EvLibevSource: the release callback of its libev loop was replaced (ev_set_loop_release_cb); RunLoopKit's must see each poll")
        if clibev_is_active(library.embedIO) == 0 { restartEmbedding(library) }
    }

    /// Looks at the libraries' loop without blocking (a poll while a mode with the source runs).
    func pollLibraryLoop(_ library: LibraryLoop) {
        library.runDepth += 1
        ev_run(library.loop, Int32(EVRUN_NOWAIT))
        library.runDepth -= 1
    }

    /// libev stopped the embedding's watcher after its `epoll_ctl` failed (`ENOMEM`, `ENOSPC`):
    /// without it no wake-up would end a sleep in the libraries' loop. Started again, a few times.
    private func restartEmbedding(_ library: LibraryLoop) {
        library.embedFailures += 1
        require(
            library.embedFailures <= Self.retryLimit,
            "EvRunLoop.run(mode:timeout:returnAfterSourceHandled:): epoll_ctl keeps refusing the run loop's epoll descriptor in the libev loop for EvLibevSource")
        failedWatchers.removeAll { $0.watcher == library.embedIO }
        ev_embed_stop(library.loop, library.embed)
        ev_embed_start(library.loop, library.embed)
    }

    /// The libraries' loop for `call` (made if needed) while `body` runs library code; then
    /// checks what library code may not do.
    func withLibraryLoop<Result, Failure: Error>(
        _ call: StaticString, _ body: (OpaquePointer) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        let library = madeLibraryLoop(call)
        defer {
            checkLibraryCode(library, call)
            library.auditDue = true  // the watchers it started reach epoll_ctl at the next poll
        }
        return try body(library.loop)
    }

    /// The version-1 step (R38): the libraries' pending callbacks run, in libev's order.
    func runLibraryCallbacks() {
        guard let library = watcherTables?.library else { return }
        library.holdsEvents = false
        ev_invoke_pending(library.loop)
        library.placeholders = 0
        checkLibraryCode(library, "EvLibevSource (a libev library's callback)")
        library.batches &+= 1
        if library.batches % LibraryLoop.auditInterval == 0 { library.auditDue = true }
    }

    /// Destroys the libraries' loop (teardown, after the detach handlers ran).
    func destroyLibraryLoop() {
        guard let library = watcherTables?.library else { return }
        watcherTables?.watchedLibrary = nil
        watcherTables?.library = nil
        library.destroy()
    }
}
