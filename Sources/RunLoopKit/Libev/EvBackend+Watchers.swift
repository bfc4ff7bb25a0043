import CLibev
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Watchers for version-1 sources: a caller's descriptor in the loop's ``DescriptorSet`` per
/// file-descriptor source, and a signal routed to this loop by ``SignalRouting`` per signal
/// source. Each is identified by a token;
/// when one reports during a wait, the token and the events are queued for
/// ``EvBackend/takeReady(_:)``. All on the loop's thread.
extension EvBackend {
    /// The watchers' tables, in an object made with the first watcher: a loop with no version-1
    /// source carries one pointer instead of three fields. Read with none, they are empty.
    /// Loop's thread only, like the backend: its fields skip the run time's exclusivity check.
    final class WatcherTables {
        /// Watchers of version-1 sources, indexed by token (slot 0 is no token's): an event
        /// finds its watcher with no hashing.
        @exclusivity(unchecked) var watchers: [WatcherKind?] = [nil]
        /// Tokens of removed watchers, given to the next ones, so ``watchers`` and the engine's
        /// tables indexed by token stay as long as the most watchers the loop had at once.
        @exclusivity(unchecked) var freeTokens: [Int] = []
        /// Started signal watchers: the tokens watching each signal.
        @exclusivity(unchecked) var signalTokens: [Int32: Set<Int>] = [:]
        /// The libev libraries' loop, made for the first ``EvLibevSource``.
        @exclusivity(unchecked) var library: LibraryLoop?
        /// ``library`` while one of its version-1 watchers is started: the loop sleeps in it.
        @exclusivity(unchecked) var watchedLibrary: LibraryLoop?
    }

    func madeWatcherTables() -> WatcherTables {
        if let watcherTables { return watcherTables }
        let made = WatcherTables()
        watcherTables = made
        return made
    }

    /// The watcher `token` names, if it exists.
    @inline(__always)
    func watcher(_ token: Int) -> WatcherKind? {
        // Borrowed: the tables, once made, live as long as the backend.
        guard let tables = watcherTables.map(Unmanaged.passUnretained) else { return nil }
        return tables._withUnsafeGuaranteedRef { token < $0.watchers.count ? $0.watchers[token] : nil }
    }

    /// Started signal watchers: the tokens watching each signal.
    var signalTokens: [Int32: Set<Int>] {
        get { watcherTables?.signalTokens ?? [:] }
        _modify { yield &madeWatcherTables().signalTokens }
    }

    /// The libraries' loop while a mode with an ``EvLibevSource`` runs: the loop sleeps in it.
    var watchedLibrary: LibraryLoop? { watcherTables?.watchedLibrary }

    /// Readiness bits as libev reports them (the same as ``ReadinessBits``).
    static let readable = Int32(EV_READ)
    static let writable = Int32(EV_WRITE)
    static let failed = Int32(EV_ERROR)

    /// A stopped watcher for a descriptor's readiness or a Unix signal. A signal must be routed
    /// to this loop (``route(_:)``) while its watcher is started.
    func addWatcher(_ kind: WatcherKind) -> Int {
        let tables = madeWatcherTables()
        guard let token = tables.freeTokens.popLast() else {
            tables.watchers.append(kind)
            return tables.watchers.count - 1
        }
        tables.watchers[token] = kind
        return token
    }

    /// Routes `signal` to this loop from now on (any thread; see ``SignalRouting``).
    func route(_ signal: Int32) { SignalRouting.route(signal, to: wake) }

    /// Stops routing `signal` here and restores its earlier disposition (any thread).
    func unroute(_ signal: Int32) { SignalRouting.unroute(signal) }

    /// Whether a delivery of `signal` ends the wait (see ``SignalRouting/setWakesLoop(_:_:wake:)``).
    func setSignal(_ signal: Int32, wakesLoop: Bool) { SignalRouting.setWakesLoop(signal, wakesLoop, wake: wake) }

    /// Starts watching. A descriptor that cannot be watched (closed behind the source's back, or
    /// its number reused for another file, say) is reported as ``failed`` instead.
    func startWatcher(_ token: Int) {
        switch watcher(token) {
        case .descriptor(let fd, let events, let file):
            guard let descriptors = descriptorSet() else {
                noteReady(token, Self.failed)
                return
            }
            for failed in descriptors.add(token: token, fd: fd, events: events, file: file) { noteReady(failed, Self.failed) }
            refreshHasReady()
        case .signal(let signal):
            signalTokens[signal, default: []].insert(token)
            // Delivered before the watcher started (added from another thread): report it now.
            if SignalRouting.takePending(signal) { noteReady(token, Self.readable) }
        case .libraryLoop:
            let library = madeLibraryLoop("EvRunLoop.run(mode:timeout:returnAfterSourceHandled:)")
            library.tokens.append(token)
            watcherTables?.watchedLibrary = library
            // Callbacks held while no mode with the source ran (R37): their turn now.
            if library.holdsEvents {
                libraryEventsArrived = true
                hasReady = true
            }
        case nil: break
        }
    }

    /// A descriptor's watcher keeps its entry in the descriptor set, which holds what it reports
    /// until it starts again (see ``DescriptorSet/park(token:fd:)``); other watchers stop.
    func parkWatcher(_ token: Int) {
        guard case .descriptor(let fd, _, _) = watcher(token) else { return stopWatcher(token) }
        for failed in descriptors?.park(token: token, fd: fd) ?? [] { noteReady(failed, Self.failed) }
        refreshHasReady()
    }

    func stopWatcher(_ token: Int) {
        switch watcher(token) {
        case .descriptor(let fd, _, _):
            for failed in descriptors?.remove(token: token, fd: fd) ?? [] { noteReady(failed, Self.failed) }
            refreshHasReady()
        case .signal(let signal):
            signalTokens[signal]?.remove(token)
            if signalTokens[signal]?.isEmpty == true { signalTokens.removeValue(forKey: signal) }
        case .libraryLoop:
            guard let library = watcherTables?.library else { break }
            library.tokens.removeAll { $0 == token }
            if library.tokens.isEmpty { watcherTables?.watchedLibrary = nil }
        case nil: break
        }
    }

    /// Reports the signals delivered since the last look to every started watcher of each.
    @inline(never)
    func collectSignals() {
        for (signal, tokens) in signalTokens where SignalRouting.takePending(signal) {
            for token in tokens { noteReady(token, Self.readable) }
        }
    }

    func removeWatcher(_ token: Int) {
        stopWatcher(token)
        if let index = readyIndex(of: token) {
            ready.remove(at: index)
            readyCount -= 1
        }
        if let tables = watcherTables, token < tables.watchers.count, tables.watchers[token] != nil {
            tables.watchers[token] = nil
            tables.freeTokens.append(token)
        }
        refreshHasReady()
    }

    /// Brings ``hasReady`` up to date after ``ready``, the descriptors watched or the libev
    /// libraries' news (``libraryEventsArrived``) changed.
    func refreshHasReady() {
        hasReady = readyCount != 0 || libraryEventsArrived || descriptors?.hasAlwaysReady == true
    }

    /// Notes what an always-ready descriptor reports (see ``DescriptorSet``); returns whether
    /// a watcher fired since the last ``takeReady(_:)``.
    func gatherReady() -> Bool {
        if let descriptors, descriptors.hasAlwaysReady { noteReady(from: descriptors) }
        if readyCount == 0 { refreshHasReady() }
        return readyCount != 0
    }

    /// Hands `body` each watcher that fired since the last call, with what fired, and forgets
    /// them. Descriptors come in the order the kernel reported them, which is the order they
    /// became ready. `body` must not call the backend.
    func takeReady(_ body: (_ token: Int, _ events: Int32) -> Void) {
        for index in 0..<readyCount { body(ready[index].token, ready[index].events) }
        readyCount = 0
        refreshHasReady()
    }

    /// A descriptor's entry rests while its readiness waits for a handler (see
    /// ``DescriptorSet``): the handler is about to run, so it reports again. With `verify`,
    /// returns whether the number still names the source's file.
    func readinessTaken(_ token: Int, verify: Bool) -> Bool {
        guard case .descriptor(let fd, _, let file) = watcher(token) else { return true }
        // Borrowed: only the teardown lets the set go. Not watched now (a nested run of another
        // mode stopped it): asked directly.
        guard let taken = descriptors.map(Unmanaged.passUnretained)?._withUnsafeGuaranteedRef({
            $0.taken(token: token, fd: fd, verify: verify)
        }) else { return !verify || file.isNamed(by: fd) }
        for failed in taken.failed where failed != token { noteReady(failed, Self.failed) }
        return taken.stillNamed
    }

    func holdReadiness(_ token: Int) {
        guard case .descriptor(let fd, _, _) = watcher(token), let descriptors else { return }
        descriptors.hold(fd: fd)
    }

    /// Every resting descriptor entry reports again (see ``DescriptorSet/rearmResting()``).
    func rearmWatchers() {
        guard let descriptors else { return }
        for failed in descriptors.rearmResting() { noteReady(failed, Self.failed) }
    }

    /// The loop's descriptor set, made and watched by libev at first use; `nil` when the
    /// process is out of descriptors.
    private func descriptorSet() -> DescriptorSet? {
        if let descriptors { return descriptors }
        guard let descriptors = DescriptorSet() else { return nil }
        let watcher = UnsafeMutablePointer<ev_io>.allocate(capacity: 1)
        clibev_io_init(watcher, { loop, watcher, revents in
            guard let loop, let watcher else { return }
            EvBackend.with(loop) { backend in
                if revents & EvBackend.failed != 0 { return backend.internalWatcherFailed(watcher) }
                if let descriptors = backend.descriptors { backend.noteReady(from: descriptors) }
            }
        }, descriptors.descriptor, Int32(EV_READ))
        startInternalWatcher(watcher, call: "EvRunLoop.add(_:forMode:)")
        self.descriptors = descriptors
        descriptorsWatcher = watcher
        return descriptors
    }

    /// Stops watching the descriptor set and closes it (teardown).
    func closeDescriptorSet() {
        guard let watcher = descriptorsWatcher else { return }
        stopInternalWatcher(watcher)
        watcher.deallocate()
        descriptorsWatcher = nil
        descriptors = nil
    }

    /// Notes what the descriptor set reports ready now (its `epoll_wait` never blocks). Not
    /// inlined into the poll: inlined, its rare paths cost every poll retains of their own.
    @inline(never)
    func noteReady(from descriptors: DescriptorSet) {
        descriptors.collect(into: self)
    }

    func noteReady(_ token: Int, _ events: Int32) {
        if let index = readyIndex(of: token) {
            ready[index].events |= events
        } else if readyCount < ready.count {
            ready[readyCount] = (token, events)
            readyCount += 1
        } else {
            ready.append((token, events))
            readyCount += 1
        }
        hasReady = true
        reasons.pointee |= WakeReasons.watcher.rawValue
        if events & Self.failed != 0 { stopWatcher(token) }  // e.g. the fd was closed: no busy loop
    }

    /// Where `token` is among the ``readyCount`` entries of ``ready``.
    @inline(__always)
    private func readyIndex(of token: Int) -> Int? {
        var index = 0
        while index < readyCount {
            if ready[index].token == token { return index }
            index += 1
        }
        return nil
    }
}
