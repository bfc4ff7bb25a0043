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
    private var tables: Tables?

    /// `@unchecked Sendable`: used only under the owning loop's lock, like the set; read for
    /// every handled readiness, so the run time's exclusivity check, which would only repeat
    /// what the lock guarantees, is left out.
    private final class Tables: @unchecked Sendable {
        @exclusivity(unchecked) var tokens: [ObjectIdentifier: Int] = [:]
        /// Indexed by token (tokens are small, see ``LoopWaiter/addWatcher(_:)``): each event
        /// finds its source with no hashing.
        @exclusivity(unchecked) var owners: [EvSource1Core?] = []
        @exclusivity(unchecked) var started: Set<ObjectIdentifier> = []
        @exclusivity(unchecked) var changed: Set<ObjectIdentifier> = []
        @exclusivity(unchecked) var sourcesVisited: UInt64 = 0
    }

    private mutating func madeTables() -> Tables {
        if let tables { return tables }
        let made = Tables()
        tables = made
        return made
    }

    /// Backend watcher token per source, and the source per token.
    var tokens: [ObjectIdentifier: Int] {
        get { tables?.tokens ?? [:] }
        _modify { yield &madeTables().tokens }
    }

    /// The source whose watcher `token` is.
    @inline(__always)
    func owner(of token: Int) -> EvSource1Core? {
        // Borrowed: the tables, once made, live as long as the set.
        guard let tables = tables.map(Unmanaged.passUnretained) else { return nil }
        return tables._withUnsafeGuaranteedRef { token < $0.owners.count ? $0.owners[token] : nil }
    }

    mutating func setOwner(_ source: EvSource1Core?, of token: Int) {
        let tables = madeTables()
        if token >= tables.owners.count {
            guard source != nil else { return }
            tables.owners += repeatElement(nil, count: token + 1 - tables.owners.count)
        }
        tables.owners[token] = source
    }

    /// The sources whose watchers run now.
    var started: Set<ObjectIdentifier> {
        get { tables?.started ?? [] }
        _modify { yield &madeTables().started }
    }

    /// How many sources the syncs looked at so far (what a sync costs, for tests: W19).
    var sourcesVisited: UInt64 {
        get { tables?.sourcesVisited ?? 0 }
        _modify { yield &madeTables().sourcesVisited }
    }

    /// Whether the started watchers are those of `mode`'s sources.
    @inline(__always)
    func isInStep(with mode: EvRunLoop.Mode) -> Bool { syncedMode == mode && !hasChanges }

    /// The source `id` joined or left a mode, or the loop: the next sync looks at it. Noted
    /// sources beyond the watched ones' count (a loop whose thread does not run it meanwhile)
    /// give way to a resync of every watcher, which then costs no more than they did.
    mutating func noteChanged(_ id: ObjectIdentifier) {
        guard syncedMode != nil else { return }
        let tables = madeTables()
        guard tables.changed.count < max(64, tables.tokens.count) else { return resyncAll() }
        tables.changed.insert(id)
        hasChanges = true
    }

    /// Every watcher is brought in step at the next sync.
    mutating func resyncAll() {
        syncedMode = nil
        hasChanges = false
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

    private func resyncWatchers(for mode: Mode, _ state: inout LoopState) {
        var wanted = state.existingModeState(mode)?.watchedSources ?? [:]
        var signalsWakingMode: [Int32: Bool] = [:]
        for (id, source) in state.source1s {
            guard case .signal(let signal) = source.kind else { continue }
            wanted[id] = source
            let inMode = source.state.withLock { $0.modes.contains(mode) }
            signalsWakingMode[signal, default: false] = signalsWakingMode[signal, default: false] || inMode
        }
        state.watches.sourcesVisited &+= UInt64(wanted.count + state.watches.started.count + state.watches.tokens.count)
        // Caught all the time, but a delivery for another mode's source waits unwoken (R37).
        for (signal, wakes) in signalsWakingMode { waiter.setSignal(signal, wakesLoop: wakes) }
        for id in state.watches.started where wanted[id] == nil {
            if let token = state.watches.tokens[id] { waiter.parkWatcher(token) }
            state.watches.started.remove(id)
        }
        for (id, token) in state.watches.tokens where state.source1s[id] == nil {
            waiter.removeWatcher(token)
            state.watches.tokens.removeValue(forKey: id)
            state.watches.setOwner(nil, of: token)
        }
        for (id, source) in wanted where !state.watches.started.contains(id) {
            startWatcher(id, source, &state)
        }
        state.watches.synced(mode)
        notePassViewChanged()  // runs of other modes now find theirs out of step
        rearmIfReadinessDropped(&state)
    }

    /// The running mode's watchers were in step but for the noted sources: brings those in step
    /// alone (W19). A noted signal source needs the signals' wake-ups worked out again, which
    /// looks at every source: rare (a server adds its signal sources once).
    private func syncChangedWatchers(for mode: Mode, _ state: inout LoopState) {
        let changed = state.watches.takeChanged()
        state.watches.sourcesVisited &+= UInt64(changed.count)
        let modeState = state.existingModeState(mode)
        var starting: [(ObjectIdentifier, EvSource1Core)] = []
        for id in changed {
            let source = state.source1s[id] ?? state.watches.tokens[id].flatMap { state.watches.owner(of: $0) }
            if case .signal = source?.kind { return resyncWatchers(for: mode, &state) }
        }
        // Stopped and removed first, as a resync does: a new source on the number of a source that
        // left is then not taken for a watcher of a file since closed.
        for id in changed {
            let isBound = state.source1s[id] != nil
            if modeState?.watchedSources[id] == nil || !isBound, state.watches.started.remove(id) != nil, let token = state.watches.tokens[id] {
                if isBound { waiter.parkWatcher(token) } else { waiter.stopWatcher(token) }
            }
            if !isBound, let token = state.watches.tokens.removeValue(forKey: id) {
                waiter.removeWatcher(token)
                state.watches.setOwner(nil, of: token)
            }
            if isBound, let source = modeState?.watchedSources[id], !state.watches.started.contains(id) { starting.append((id, source)) }
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
        if state.source1s[id] != nil && !state.watches.started.contains(id) { startWatcher(id, source, &state) }
    }

    private func startWatcher(_ id: ObjectIdentifier, _ source: EvSource1Core, _ state: inout LoopState) {
        let token = state.watches.tokens[id] ?? makeWatcher(for: source)
        state.watches.tokens[id] = token
        state.watches.setOwner(source, of: token)
        waiter.startWatcher(token)
        state.watches.started.insert(id)
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
