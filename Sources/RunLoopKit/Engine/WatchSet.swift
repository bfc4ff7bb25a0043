/// Which libev watchers exist for a loop's version-1 sources and which run now.
///
/// A file-descriptor source is watched only while one of its modes runs (R37); a signal source
/// is watched for as long as it is in the loop, so the process's signal disposition does not
/// flicker with the running mode, but its deliveries wake the loop only while one of its modes
/// runs. Changes made from other threads only mark the set stale; the loop's thread brings the
/// watchers in step before it next waits (libev is not thread-safe).
///
/// The tables are in an object made when the first watcher is, because most loops have no
/// version-1 source; reading them with none gives empty ones.
struct WatchSet {
    /// The mode the started watchers belong to; `nil` forces a resync.
    var syncedMode: EvRunLoop.Mode?
    /// A source left its last mode with readiness not yet handled, which went with it: the
    /// next resync has the watchers report again what is ready (``LoopWaiter/rearmWatchers()``).
    var droppedReadiness = false
    private var tables: Tables?

    /// `@unchecked Sendable`: used only under the owning loop's lock, like the set; read for
    /// every handled readiness, so the run time's exclusivity check, which would only repeat
    /// what the lock guarantees, is left out.
    private final class Tables: @unchecked Sendable {
        @exclusivity(unchecked) var tokens: [ObjectIdentifier: Int] = [:]
        @exclusivity(unchecked) var owners: [Int: EvSource1Core] = [:]
        @exclusivity(unchecked) var started: Set<ObjectIdentifier> = []
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

    var owners: [Int: EvSource1Core] {
        get { tables?.owners ?? [:] }
        _modify { yield &madeTables().owners }
    }

    /// The sources whose watchers run now.
    var started: Set<ObjectIdentifier> {
        get { tables?.started ?? [] }
        _modify { yield &madeTables().started }
    }
}

extension EvRunLoop {
    /// Starts the watchers of `mode`'s sources and stops the others (loop thread, lock held).
    /// Inlined up to the check that they already are, which is what every pass but the first
    /// of a run finds.
    @inline(__always)
    func syncWatchers(for mode: Mode, _ state: inout LoopState) {
        guard state.watches.syncedMode != mode else { return }
        resyncWatchers(for: mode, &state)
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
        // Caught all the time, but a delivery for another mode's source waits unwoken (R37).
        for (signal, wakes) in signalsWakingMode { waiter.setSignal(signal, wakesLoop: wakes) }
        for id in state.watches.started where wanted[id] == nil {
            if let token = state.watches.tokens[id] { waiter.stopWatcher(token) }
            state.watches.started.remove(id)
        }
        for (id, token) in state.watches.tokens where state.source1s[id] == nil {
            waiter.removeWatcher(token)
            state.watches.tokens.removeValue(forKey: id)
            state.watches.owners.removeValue(forKey: token)
        }
        for (id, source) in wanted where !state.watches.started.contains(id) {
            startWatcher(id, source, &state)
        }
        state.watches.syncedMode = mode
        notePassViewChanged()  // runs of other modes now find theirs out of step
        if state.watches.droppedReadiness {
            state.watches.droppedReadiness = false
            waiter.rearmWatchers()
        }
    }

    /// Starts the watchers of signal sources at once (loop thread), so a signal sent right after
    /// ``add(_:forMode:)-(EvVersion1Source,_)`` returns is caught, not fatal.
    func startSignalWatchers(_ state: inout LoopState) {
        for (id, source) in state.source1s where !state.watches.started.contains(id) {
            if case .signal = source.kind { startWatcher(id, source, &state) }
        }
    }

    private func startWatcher(_ id: ObjectIdentifier, _ source: EvSource1Core, _ state: inout LoopState) {
        let token = state.watches.tokens[id] ?? makeWatcher(for: source)
        state.watches.tokens[id] = token
        state.watches.owners[token] = source
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
        let fired = waiter.takeReady()
        let libraryEvents = waiter.takeLibraryEvents()
        guard !fired.isEmpty || libraryEvents else { return }
        state.withLock { state in
            for (token, events) in fired {
                guard let source = state.watches.owners[token] else { continue }
                markReady(source, events: events, &state)
            }
            if libraryEvents { markLibevSourcesReady(&state) }
        }
    }
}
