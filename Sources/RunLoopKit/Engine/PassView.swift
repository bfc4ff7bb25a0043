/// What a run knows without the loop's lock: whether its mode has timers, when the earliest of
/// them can be due, whether it has any source or timer (R16), whether the version-1 watchers
/// are in step with it (R37), and whether it holds an ``EvLibevSource``. Read under the lock,
/// and valid while ``EvRunLoop/passViewChanges`` stays at `changesSeen`: each of these changes
/// under the lock and bumps that count with it, so a run that took the lock since a change
/// (every pass that sleeps does) sees it, and a change concurrent with a step is as if made just
/// after it. A timers step of a mode with no timers or none due yet, the end-of-pass check of a
/// mode that cannot be empty, and a poll with the watchers in step then skip the lock.
struct PassView {
    var changesSeen = UInt64.max
    var hasTimers = true
    /// No timer of the mode is due before this date: the heap's earliest entry's deadline when
    /// read (a stale entry's too, which only makes it earlier), or ``unknownDueDate``. A timer
    /// pushed before the heap's earliest entry bumps the count (R40, R44); later pushes and
    /// removals leave this a lower bound. ``EvRunLoop/fireDueTimers(_:_:at:_:)`` moves it under the lock.
    var timersDueFrom = PassView.unknownDueDate
    var hasItems = false
    var watchersInStep = false
    /// The mode holds an ``EvLibevSource``: its waits run the libev libraries' prepare and check
    /// callbacks, a poll's too.
    var hasLibevSources = false

    /// "Look under the lock": before every date.
    static let unknownDueDate = MonotonicTime(nanoseconds: .min)
}

extension EvRunLoop {
    /// `view`, brought up to date if something it holds changed since it was taken.
    @inline(__always)
    func refreshed(_ view: inout PassView, _ run: RunContext) -> PassView {
        let changes = passViewChanges.load(ordering: .acquiring)
        if changes != view.changesSeen {
            // Read after the count: a change made meanwhile bumps it again and is read next time.
            let modeState = run.modeState
            view = state.withLock { state in
                PassView(
                    changesSeen: changes, hasTimers: modeState.timerCount > 0,
                    timersDueFrom: modeState.timers.topDeadline ?? .distantFuture,
                    hasItems: modeState.sourceCount > 0 || modeState.timerCount > 0,
                    watchersInStep: state.watches.isInStep(with: run.mode),
                    hasLibevSources: modeState.libevSourceCount > 0)
            }
        }
        return view
    }

    /// Something a ``PassView`` holds changed. Under the lock.
    func notePassViewChanged() {
        passViewChanges.wrappingAdd(1, ordering: .releasing)
    }
}
