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
        let wakeDescriptor = wake.descriptor
        let (expected, made, error) = Self.descriptorNumbering.withLock { _ in
            let expected = Self.lowestFreeDescriptor(duplicating: wakeDescriptor)
            let made = ev_loop_new(LibraryLoop.flags)
            return (expected, made, errno)
        }
        guard let made else {
            fatalError("\(call): cannot make the libev loop for EvLibevSource: ev_loop_new (epoll_create1) failed: \(describe(errno: error))")
        }
        let library = LibraryLoop(loop: made, for: self)
        ev_cleanup_start(library.loop, library.cleanup)
        clibev_embed_init(library.embed, loop)
        startEmbedding(library)
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

    /// The sleep while a mode with an ``EvLibevSource`` runs: `ev_run` of the libraries' loop,
    /// which embeds this one.
    @inline(never)
    func sleepInLibraryLoop(_ library: LibraryLoop) {
        reifyOwnWatchers()
        if reasons.pointee != 0 { return }  // the reify ran this loop's watchers: the wait is over
        // A library's I/O collect interval would have libev sleep before the poll, deaf to wake-ups.
        ev_set_io_collect_interval(library.loop, 0)
        runLibraryLoop(library, Int32(EVRUN_ONCE))
        if clibev_is_active(library.embedIO) == 0 { restartEmbedding(library) }
    }

    /// Looks at the libraries' loop without blocking (a poll while a mode with the source runs).
    @inline(never)
    func pollLibraryLoop(_ library: LibraryLoop) {
        reifyOwnWatchers()
        runLibraryLoop(library, Int32(EVRUN_NOWAIT))
    }

    /// One `ev_run` of the libraries' loop; then checks that its callbacks are still RunLoopKit's
    /// (every `ev_run` invokes the pending callbacks, and calls the release callback if it polls).
    private func runLibraryLoop(_ library: LibraryLoop, _ flags: Int32) {
        library.hookRan = false
        library.polled = false
        let iteration = ev_iteration(library.loop)
        let pollsSeen = library.pollsSeen
        library.runDepth += 1
        ev_run(library.loop, flags)
        library.runDepth -= 1
        requireOwnInvokePending(library)
        // libev counts an iteration just before each poll (a nested run's too), and calls the
        // release callback then.
        require(
            ev_iteration(library.loop) &- iteration == library.pollsSeen &- pollsSeen,
            "EvLibevSource: the release callback of its libev loop was replaced (ev_set_loop_release_cb); RunLoopKit's must see each poll")
    }

    /// Stops unless RunLoopKit's invoke-pending callback ran in this `ev_run` of the libraries' loop.
    func requireOwnInvokePending(_ library: LibraryLoop) {
        require(
            library.hookRan,
            "EvLibevSource: the invoke-pending callback of its libev loop was replaced (ev_set_invoke_pending_cb); RunLoopKit's decides when the libraries' callbacks run")
    }

    /// Has libev make the `epoll_ctl` calls for this loop's own watchers started or stopped since
    /// the last time, before a wait in the libraries' loop, which sees this loop only through
    /// its epoll descriptor.
    private func reifyOwnWatchers() {
        guard ownWatchersChanged else { return }
        ownWatchersChanged = false
        ev_run(loop, Int32(EVRUN_NOWAIT))
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
        startEmbedding(library)
    }

    /// Starts the embedding without its prepare watcher, which would reify this loop's watcher
    /// changes before every poll of the libraries' loop: they all come from this backend
    /// (start/stopInternalWatcher), which marks them, and the sleep reifies only then.
    private func startEmbedding(_ library: LibraryLoop) {
        ev_embed_start(library.loop, library.embed)
        ev_prepare_stop(library.loop, library.embedPrepare)
        ownWatchersChanged = true
    }

    /// The libraries' loop for `call` (made if needed) while `body` runs library code; then
    /// checks what library code may not do.
    func withLibraryLoop<Result, Failure: Error>(
        _ call: StaticString, _ body: (OpaquePointer) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        let library = madeLibraryLoop(call)
        // Its clock stood still while modes without the sources ran: a timer started now is
        // timed from now, as on a libev loop that keeps running.
        ev_now_update(library.loop)
        defer {
            checkLibraryCode(library, call)
            library.auditDue = true  // the watchers it started reach epoll_ctl at the next poll
        }
        return try body(library.loop)
    }

    /// After a wait or a poll of a mode without an ``EvLibevSource``: the libraries' loop does not
    /// iterate, so its clock is moved on here, as a running libev loop's moves at each poll;
    /// library code called from this iteration's callouts times its watchers from it.
    @inline(__always)
    func advanceUnwatchedLibraryClock() {
        guard let tables = watcherTables, tables.watchedLibrary == nil, let library = tables.library else { return }
        ev_now_update(library.loop)
    }

    /// Whether the libraries' watchers have events the engine has not heard of; clears that.
    func takeLibraryEvents() -> Bool {
        guard libraryEventsArrived else { return false }
        libraryEventsArrived = false
        refreshHasReady()
        return true
    }

    /// The version-1 step (R38): the libraries' pending callbacks run, in libev's order.
    func runLibraryCallbacks() {
        guard let library = watcherTables?.library else { return }
        library.holdsEvents = false
        if libraryEventsArrived {
            libraryEventsArrived = false
            refreshHasReady()
        }
        ev_invoke_pending(library.loop)
        library.placeholders = 0
        library.pendingAfterHook = 0
        checkLibraryCode(library, "EvLibevSource (a libev library's callback)")
        library.batches &+= 1
        if library.batches % LibraryLoop.auditInterval == 0 { library.auditDue = true }
    }

    /// Runs the libraries' callbacks pending before this loop's poll: the prepare and fork
    /// watchers libev just queued. libev runs them there, before it blocks; held back for the
    /// version-1 step, a prepare watcher, queued again by every wait, would never let the loop
    /// block. A run nested in one of them that waited has ended this sleep's phase and moved its
    /// deadline: this sleep ends too, and the engine plans the next.
    func runLibraryCallbacksBeforePoll(_ library: LibraryLoop) {
        let wasSleeping = wake.isSleeping
        if let owner {
            owner.libraryCalloutInWait { ev_invoke_pending(library.loop) }
        } else {
            ev_invoke_pending(library.loop)
        }
        library.polled = false
        library.placeholders = 0
        // A library's ev_break there would skip the poll, and the wait would enter ev_run again
        // and again; RunLoopKit's own break, if the wait is over, follows (eventsPending).
        ev_break(library.loop, Int32(EVBREAK_CANCEL))
        ev_set_io_collect_interval(library.loop, 0)  // as in sleepInLibraryLoop(_:), for this poll
        checkLibraryCode(library, "EvLibevSource (a libev library's callback)")
        library.batches &+= 1
        if library.batches % LibraryLoop.auditInterval == 0 { library.auditDue = true }
        if wasSleeping && !wake.isSleeping { reasons.pointee |= WakeReasons.wakeUp.rawValue }
    }

    /// Destroys the libraries' loop (teardown, after the detach handlers ran).
    func destroyLibraryLoop() {
        guard let library = watcherTables?.library else { return }
        watcherTables?.watchedLibrary = nil
        watcherTables?.library = nil
        library.destroy()
    }
}
