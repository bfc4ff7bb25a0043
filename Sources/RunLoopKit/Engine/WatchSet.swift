/// Which libev watchers exist for a loop's version-1 sources and which run now.
///
/// A file-descriptor source is watched only while one of its modes runs (R37); a signal source
/// is watched for as long as it is in the loop, so the process's signal disposition does not
/// flicker with the running mode, but its deliveries wake the loop only while one of its modes
/// runs. Changes made from other threads only mark the set stale; the loop's thread brings the
/// watchers in step before it next waits (libev is not thread-safe).
///
/// A source that joins or leaves a mode is noted (``noteChanged(_:)``): while the same mode runs,
/// the next sync looks at the noted sources alone, so a server's connection set-up and tear-down
/// costs the same with ten connections on the loop as with ten thousand (W19). A mode switch, or
/// a noted signal source, brings every watcher in step.
///
/// The tables are in an object made when the first watcher is, because most loops have no
/// version-1 source; reading them with none gives empty ones.
struct WatchSet {
    /// The mode the started watchers belong to; `nil` forces a resync of every watcher.
    private(set) var syncedMode: EvRunLoop.Mode?
    /// Sources were noted since the last sync (see ``noteChanged(_:)``).
    private(set) var hasChanges = false
    /// A source left its last mode with readiness not yet handled, which went with it: the
    /// next resync has the watchers report again what is ready (``LoopWaiter/rearmWatchers()``).
    var droppedReadiness = false
    /// Sources changed while none could be noted (see ``noteChanged(_:)``): the next resync looks
    /// at every watcher for sources that left the loop.
    private var changesGivenUp = false
    private var tables: Tables?

    /// A source's watcher.
    struct Watch {
        let token: Int
        var isStarted = false
        /// The last resync that wanted it started (see ``beginResync()``).
        var wantedBy: UInt64 = 0
    }

    /// `@unchecked Sendable`: used only under the owning loop's lock, like the set; read for
    /// every handled readiness, so the run time's exclusivity check, which would only repeat
    /// what the lock guarantees, is left out.
    private final class Tables: @unchecked Sendable {
        /// The watcher of each source that has one: a sync hashes each source it looks at once.
        @exclusivity(unchecked) var watches: [ObjectIdentifier: Watch] = [:]
        /// Indexed by token (tokens are small, see ``LoopWaiter/addWatcher(_:)``): each event
        /// finds its source with no hashing.
        @exclusivity(unchecked) var owners: [EvSource1Core?] = []
        @exclusivity(unchecked) var changed: Set<ObjectIdentifier> = []
        @exclusivity(unchecked) var sourcesVisited: UInt64 = 0
        @exclusivity(unchecked) var resyncs: UInt64 = 0
    }

    private mutating func madeTables() -> Tables {
        if let tables { return tables }
        let made = Tables()
        tables = made
        return made
    }

    /// How many sources have a watcher.
    var count: Int { tables?.watches.count ?? 0 }

    /// The token of the watcher of source `id`, if it has one.
    func token(of id: ObjectIdentifier) -> Int? { tables?.watches[id]?.token }

    /// Whether the watcher of source `id` is started.
    func isStarted(_ id: ObjectIdentifier) -> Bool { tables?.watches[id]?.isStarted ?? false }

    /// Notes a new watcher, `token`, of `source`, started.
    mutating func addStarted(_ id: ObjectIdentifier, token: Int, of source: EvSource1Core) {
        let tables = madeTables()
        tables.watches[id] = Watch(token: token, isStarted: true, wantedBy: tables.resyncs)
        if token >= tables.owners.count { tables.owners += repeatElement(nil, count: token + 1 - tables.owners.count) }
        tables.owners[token] = source
    }

    /// Marks the watcher of `id` started; returns its token, or `nil` when it has none.
    mutating func markStarted(_ id: ObjectIdentifier) -> Int? {
        guard let tables, let index = tables.watches.index(forKey: id) else { return nil }
        tables.watches.values[index].isStarted = true
        return tables.watches.values[index].token
    }

    /// Marks the watcher of `id` stopped; returns its token if it was started.
    mutating func markStopped(_ id: ObjectIdentifier) -> Int? {
        guard let tables, let index = tables.watches.index(forKey: id), tables.watches.values[index].isStarted else { return nil }
        tables.watches.values[index].isStarted = false
        return tables.watches.values[index].token
    }

    /// Forgets the watcher of `id`; returns its token.
    mutating func remove(_ id: ObjectIdentifier) -> Int? {
        guard let tables, let watch = tables.watches.removeValue(forKey: id) else { return nil }
        tables.owners[watch.token] = nil
        return watch.token
    }

    /// The source whose watcher `token` is.
    @inline(__always)
    func owner(of token: Int) -> EvSource1Core? {
        // Borrowed: the tables, once made, live as long as the set.
        guard let tables = tables.map(Unmanaged.passUnretained) else { return nil }
        return tables._withUnsafeGuaranteedRef { token < $0.owners.count ? $0.owners[token] : nil }
    }

    /// How many sources the syncs looked at so far (what a sync costs, for tests: W19).
    var sourcesVisited: UInt64 {
        get { tables?.sourcesVisited ?? 0 }
        _modify { yield &madeTables().sourcesVisited }
    }

    /// A resync begins: the sources it wants are marked with the number returned
    /// (``markWanted(_:by:)``), and ``stopUnwanted(_:_:)`` then stops the others' watchers
    /// without looking each up.
    mutating func beginResync() -> UInt64 {
        let tables = madeTables()
        tables.resyncs &+= 1
        return tables.resyncs
    }

    /// What ``markWanted(_:by:)`` leaves to do for a source.
    enum WantedWatch {
        /// Its watcher is started already.
        case started
        /// Its watcher, `token`, is marked started: the backend is to start it.
        case toStart(Int)
        /// It has no watcher yet.
        case none
    }

    /// Marks source `id` wanted by `resync`, and its watcher started.
    mutating func markWanted(_ id: ObjectIdentifier, by resync: UInt64) -> WantedWatch {
        guard let tables, let index = tables.watches.index(forKey: id) else { return .none }
        tables.watches.values[index].wantedBy = resync
        guard !tables.watches.values[index].isStarted else { return .started }
        tables.watches.values[index].isStarted = true
        return .toStart(tables.watches.values[index].token)
    }

    /// Marks stopped every started watcher that `resync` did not want, and passes its token on.
    mutating func stopUnwanted(_ resync: UInt64, _ stop: (Int) -> Void) {
        guard let tables else { return }
        var index = tables.watches.startIndex
        while index != tables.watches.endIndex {
            if tables.watches.values[index].isStarted && tables.watches.values[index].wantedBy != resync {
                tables.watches.values[index].isStarted = false
                stop(tables.watches.values[index].token)
            }
            tables.watches.formIndex(after: &index)
        }
    }

    /// The sources that may have left the loop since the last sync: those noted, or every
    /// source with a watcher when the notes were given up.
    mutating func takeMayHaveLeft() -> [ObjectIdentifier] {
        defer { changesGivenUp = false }
        return changesGivenUp ? Array(tables?.watches.keys ?? [:].keys) : Array(takeChanged())
    }

    /// Whether the started watchers are those of `mode`'s sources.
    @inline(__always)
    func isInStep(with mode: EvRunLoop.Mode) -> Bool { syncedMode == mode && !hasChanges }

    /// The source `id` joined or left a mode, or the loop: the next sync looks at it. Noted
    /// sources beyond the watched ones' count (a loop whose thread does not run it meanwhile)
    /// give way to a resync of every watcher, which then costs no more than they did.
    mutating func noteChanged(_ id: ObjectIdentifier) {
        guard syncedMode != nil else {
            changesGivenUp = true  // a resync comes next: it looks at every watcher
            return
        }
        let tables = madeTables()
        guard tables.changed.count < max(64, tables.watches.count) else { return resyncAll() }
        tables.changed.insert(id)
        hasChanges = true
    }

    /// The sources noted since the last sync, unless they were given up.
    var changed: Set<ObjectIdentifier> { tables?.changed ?? [] }

    /// Every watcher is brought in step at the next sync.
    mutating func resyncAll() {
        syncedMode = nil
        hasChanges = false
        changesGivenUp = true
        tables?.changed.removeAll()
    }

    /// The sources noted since the last sync, forgotten here.
    mutating func takeChanged() -> Set<ObjectIdentifier> {
        hasChanges = false
        guard let tables else { return [] }
        defer { tables.changed.removeAll(keepingCapacity: true) }
        return tables.changed
    }

    /// Every watcher is in step with `mode`.
    mutating func synced(_ mode: EvRunLoop.Mode) {
        syncedMode = mode
        hasChanges = false
        tables?.changed.removeAll()
    }
}

extension EvRunLoop {
    /// Starts the watchers of `mode`'s sources and stops the others (loop thread, lock held).
    /// Inlined up to the check that they already are, which is what every pass but the first
    /// of a run finds.
    @inline(__always)
    func syncWatchers(for mode: Mode, _ state: inout LoopState) {
        guard !state.watches.isInStep(with: mode) else { return }
        if state.watches.syncedMode == mode {
            syncChangedWatchers(for: mode, &state)
        } else {
            resyncWatchers(for: mode, &state)
        }
    }

    /// A watcher a resync starts once the others are stopped (a struct: an array of tuples is
    /// destroyed element by element through the run time's generic code).
    private struct WatcherToStart {
        let id: ObjectIdentifier
        let source: EvSource1Core
        let watch: WatchSet.WantedWatch
    }

    private func resyncWatchers(for mode: Mode, _ state: inout LoopState) {
        // The mode's sources and every signal source are marked wanted; the other started
        // watchers are then stopped in one walk, with no lookup each.
        let resync = state.watches.beginResync()
        let watched = state.existingModeState(mode)?.watchedSources ?? [:]
        var starting: [WatcherToStart] = []
        for (id, source) in watched {
            let watch = state.watches.markWanted(id, by: resync)
            if case .started = watch { continue }
            starting.append(WatcherToStart(id: id, source: source, watch: watch))
        }
        var signalsWakingMode: [Int32: Bool] = [:]
        for (id, source) in state.signalSource1s {
            guard case .signal(let signal) = source.kind else { continue }
            let watch = state.watches.markWanted(id, by: resync)
            if case .started = watch {} else { starting.append(WatcherToStart(id: id, source: source, watch: watch)) }
            let inMode = source.state.withLock { $0.modes.contains(mode) }
            signalsWakingMode[signal, default: false] = signalsWakingMode[signal, default: false] || inMode
        }
        let mayHaveLeft = state.watches.takeMayHaveLeft()
        state.watches.sourcesVisited &+= UInt64(watched.count + state.watches.count + mayHaveLeft.count)
        // Caught all the time, but a delivery for another mode's source waits unwoken (R37).
        for (signal, wakes) in signalsWakingMode { waiter.setSignal(signal, wakesLoop: wakes) }
        // Removed and stopped before any starts: a new source on the number of a source that left
        // is then not taken for a watcher of a file since closed.
        for id in mayHaveLeft where state.source1s[id] == nil {
            if let token = state.watches.remove(id) { waiter.removeWatcher(token) }
        }
        state.watches.stopUnwanted(resync) { token in waiter.parkWatcher(token) }
        for next in starting {
            if case .toStart(let token) = next.watch {
                waiter.startWatcher(token)
            } else {
                startNewWatcher(next.id, next.source, &state)
            }
        }
        state.watches.synced(mode)
        notePassViewChanged()  // runs of other modes now find theirs out of step
        rearmIfReadinessDropped(&state)
    }

    /// The running mode's watchers were in step but for the noted sources: brings those in step
    /// alone (W19). A noted signal source needs the signals' wake-ups worked out again, which
    /// looks at every source: rare (a server adds its signal sources once).
    private func syncChangedWatchers(for mode: Mode, _ state: inout LoopState) {
        for id in state.watches.changed {
            let source = state.source1s[id] ?? state.watches.token(of: id).flatMap { state.watches.owner(of: $0) }
            if case .signal = source?.kind { return resyncWatchers(for: mode, &state) }
        }
        let changed = state.watches.takeChanged()
        state.watches.sourcesVisited &+= UInt64(changed.count)
        let modeState = state.existingModeState(mode)
        var starting: [(ObjectIdentifier, EvSource1Core)] = []
        // Stopped and removed first, as a resync does: a new source on the number of a source that
        // left is then not taken for a watcher of a file since closed.
        for id in changed {
            let isBound = state.source1s[id] != nil
            if modeState?.watchedSources[id] == nil || !isBound, let token = state.watches.markStopped(id) {
                if isBound { waiter.parkWatcher(token) } else { waiter.stopWatcher(token) }
            }
            if !isBound, let token = state.watches.remove(id) { waiter.removeWatcher(token) }
            if isBound, let source = modeState?.watchedSources[id], !state.watches.isStarted(id) { starting.append((id, source)) }
        }
        for (id, source) in starting { startWatcher(id, source, &state) }
        notePassViewChanged()  // in step again: polls of this mode need not take the lock
        rearmIfReadinessDropped(&state)
    }

    private func rearmIfReadinessDropped(_ state: inout LoopState) {
        guard state.watches.droppedReadiness else { return }
        state.watches.droppedReadiness = false
        waiter.rearmWatchers()
    }

    /// Starts the watcher of a signal source at once (loop thread), so a signal sent right after
    /// ``add(_:forMode:)-(EvVersion1Source,_)`` returns is caught, not fatal.
    func startSignalWatcher(_ source: EvSource1Core, _ state: inout LoopState) {
        guard case .signal = source.kind else { return }
        let id = ObjectIdentifier(source)
        if state.source1s[id] != nil && !state.watches.isStarted(id) { startWatcher(id, source, &state) }
    }

    private func startWatcher(_ id: ObjectIdentifier, _ source: EvSource1Core, _ state: inout LoopState) {
        if let token = state.watches.markStarted(id) {
            waiter.startWatcher(token)
        } else {
            startNewWatcher(id, source, &state)
        }
    }

    private func startNewWatcher(_ id: ObjectIdentifier, _ source: EvSource1Core, _ state: inout LoopState) {
        let token = makeWatcher(for: source)
        state.watches.addStarted(id, token: token, of: source)
        waiter.startWatcher(token)
    }

    private func makeWatcher(for source: EvSource1Core) -> Int {
        switch source.kind {
        case .fileDescriptor(let fd, let events, let file): waiter.addWatcher(.descriptor(fd: fd, events: events, file: file))
        case .signal(let signal): waiter.addWatcher(.signal(signal))
        case .libev: waiter.addWatcher(.libraryLoop)
        case .port: preconditionFailure("ports have no watcher")
        }
    }

    /// Moves what the watchers reported during the last wait into the ready set (loop thread).
    @inline(never)
    func collectReadiness() {
        if let libevWaiter {
            libevWaiter._withUnsafeGuaranteedRef { collectReadiness(from: $0) }
        } else {
            collectReadiness(from: waiter)
        }
    }

    @inline(__always)
    private func collectReadiness<Waiter: LoopWaiter>(from waiter: Waiter) {
        let fired = waiter.gatherReady()
        let libraryEvents = waiter.takeLibraryEvents()
        guard fired || libraryEvents else { return }
        state.withLock { state in
            if fired {
                waiter.takeReady { token, events in
                    guard let source = state.watches.owner(of: token) else { return }
                    markReady(source, events: events, fromWatcher: token, &state)
                }
            }
            if libraryEvents { markLibevSourcesReady(&state) }
        }
    }
}
