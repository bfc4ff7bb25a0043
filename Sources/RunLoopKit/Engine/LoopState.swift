/// Everything a run loop knows, guarded by ``EvRunLoop/state``.
///
/// Item membership is recorded twice on purpose: each item lists its own modes (under its own
/// lock), and each mode keeps only counts and the structures a run needs — the timer heap, the
/// sorted observers — so that nothing in a run walks all items of a mode.
struct LoopState {
    /// The modes other than the default one (R7), which is ``defaultMode``: a loop that only
    /// ever uses the default mode has no table (an empty dictionary allocates nothing).
    var otherModes: [ModeKey: ModeState] = [:]
    /// R11: the common set besides the default mode, which always is in it (``isCommon(_:)``),
    /// in the order the modes were made common; never shrinks. Holds no storage for two modes.
    var otherCommonModes = ModeList()
    /// The common items (R12) and the version-1 sources (R37, R38), made at the first of them
    /// (see ``ItemTables``; LoopState's properties of the same names read and change them).
    var tables: ItemTables?
    /// Every source in any mode (for teardown's cancel callouts, R4).
    var sources = BoundSources()
    /// The libev watchers of version-1 sources, kept in step with the running mode (loop thread).
    var watches = WatchSet()
    /// Signalled version-0 sources bound to this loop and not yet performed (R33, R35).
    let signalled = SignalledSources()
    /// The runs in progress, innermost last (R9, R27, R58).
    var runs = RunStack()
    /// How many of the runs' frames hold a version-1 source (``RunFrame/heldSource1``).
    var heldSource1Count = 0
    /// True while the main loop drains libdispatch's main queue (R60).
    var isServicingMainQueue = false
    /// Set when the owning thread exits (R4).
    var isDead = false
    /// The timeout of the run whose sleep was planned last (see ``EvRunLoop/timerLeft(_:_:)``).
    var plannedRunDeadline = MonotonicTime.distantFuture
    /// Tie-breaker for equal timer fire dates (see ``nextSequence()``).
    var sequence: UInt64 = 0
    /// Stop waiters and exit hooks, made when the first registers (see ``madeWaiters()``).
    var waiters: LoopWaiters?

    init() {
        defaultMode = ModeState(.default)
    }

    /// The default mode's state, kept apart so the commonest lookup hashes nothing.
    let defaultMode: ModeState

    /// The state of `mode`, creating the mode if asked (R7).
    mutating func modeState(_ mode: EvRunLoop.Mode) -> ModeState {
        if mode == .default { return defaultMode }
        if let existing = otherModes[ModeKey(mode)] { return existing }
        let created = ModeState(mode)
        otherModes[ModeKey(mode)] = created
        return created
    }

    /// The state of `mode` if it exists.
    func existingModeState(_ mode: EvRunLoop.Mode) -> ModeState? {
        mode == .default ? defaultMode : otherModes[ModeKey(mode)]
    }

    /// Every mode that exists, the default one first.
    var allModeStates: [ModeState] { [defaultMode] + otherModes.values }

    /// Whether `mode` is in the common set (R11).
    func isCommon(_ mode: EvRunLoop.Mode) -> Bool {
        mode == .default || otherCommonModes.contains(mode)
    }

    /// The mode other than the default one that a run last entered (modes are never removed, so
    /// it stays valid): a run switching to the same mode again, as nested runs of a tracking
    /// mode do, skips hashing its name.
    private var lastRunMode: ModeState?

    /// ``existingModeState(_:)`` for entering a run.
    mutating func modeStateForRun(_ mode: EvRunLoop.Mode) -> ModeState? {
        if mode == .default { return defaultMode }
        if let last = lastRunMode, last.mode == mode { return last }
        lastRunMode = otherModes[ModeKey(mode)]
        return lastRunMode
    }


    /// ``waiters``, made now if it was not.
    mutating func madeWaiters() -> LoopWaiters {
        if let waiters { return waiters }
        let made = LoopWaiters()
        waiters = made
        return made
    }

    /// The modes an item added to `mode` lands in: the common set for `.common` (R12).
    func expand(_ mode: EvRunLoop.Mode) -> ModeList {
        guard mode == .common else { return [mode] }
        var modes: ModeList = [.default]
        for other in otherCommonModes { modes.append(other) }
        return modes
    }
}

/// One run in progress (CF's per-run data): its mode and its own stop mark (R27).
struct RunFrame {
    let mode: EvRunLoop.Mode
    var isStopped = false
    /// Only a wait of the library's own stopped the run (``EvRunLoop/stopInnermostRun(quietly:)``):
    /// its `stopped` is no stop to the tasks in ``EvRunLoop/waitUntilStopped()``.
    var isStoppedQuietly = false
    /// The source the iteration took as its wait returned, for its R20.11 (C70).
    var heldSource1: HeldSource1?
}

/// The contents of one mode that a run needs.
///
/// `@unchecked Sendable`: every field is read and written only while the owning loop's lock is
/// held; a run keeps a reference to its mode's state (modes are never removed) only to skip the
/// lookup by name, and touches it under the lock.
final class ModeState: @unchecked Sendable {
    let mode: EvRunLoop.Mode
    // Unchecked for the reason given at `timers`: the loop's lock already excludes every other access.
    @exclusivity(unchecked) private(set) var sourceCount = 0
    @exclusivity(unchecked) private(set) var timerCount = 0

    /// Counts sources joining (`delta` > 0) or leaving the mode. Under the loop's lock. Returns
    /// whether the mode went from having none to having some or back: the caller then calls
    /// ``EvRunLoop/notePassViewChanged()``.
    func changeSourceCount(by delta: Int) -> Bool {
        let had = sourceCount > 0
        sourceCount += delta
        return had != (sourceCount > 0)
    }

    /// ``EvLibevSource``s in the mode: while one is, the libev libraries' callbacks run (R37).
    @exclusivity(unchecked) var libevSourceCount = 0

    /// Counts a timer joining the mode, as ``changeSourceCount(by:)``.
    func timerJoined() -> Bool {
        timerCount += 1
        return timerCount == 1
    }

    /// Counts a timer leaving the mode, as ``changeSourceCount(by:)``. The heap entry it leaves
    /// is stale; the caller compacts the heap when stale entries outnumber live ones.
    func timerLeft() -> Bool {
        timerCount -= 1
        return timerCount == 0
    }
    /// Read and written only under the loop's lock, like every field here, so the run time's
    /// exclusivity check (a thread-local access set, several accesses per iteration) would only
    /// repeat what the lock guarantees.
    @exclusivity(unchecked) var timers = TimerHeap()
    /// The version-1 sources of this mode that need a libev watcher while it runs (R37).
    var watchedSources: [ObjectIdentifier: EvSource1Core] = [:]
    /// Its version-1 sources that are ready, the one ready longest first (R38).
    @exclusivity(unchecked) var readySources = ReadyQueue()
    /// Sorted by (order, time added) (R49).
    var observers: [(sequence: UInt64, observer: EvObserver)] = []
    /// Every activity an observer of this mode asks for: phases outside it skip the list.
    var observedActivities: EvRunLoop.Activity = []

    init(_ mode: EvRunLoop.Mode) { self.mode = mode }
}

extension LoopState {
    /// Puts `source` on the signalled list unless it is there already. Under the loop's lock.
    func enqueueSignalled(_ source: EvSource) {
        signalled.insert(source)
    }

    /// Takes `source` off the signalled list if it is there (the last entry fills its place).
    /// Under the loop's lock.
    func dequeueSignalled(_ source: EvSource) {
        signalled.remove(source)
    }
}
