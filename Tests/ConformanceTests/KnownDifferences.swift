/// Every known difference between the real CFRunLoop (Swift's libFoundation.so on Linux) and
/// RunLoopKit, with the reason — the one place they are listed. The random generator keeps
/// clear of each (`ProgramGenerator`), `risked(by:)` recognises the programs that could show
/// one (the shrinker keeps only programs it clears), and `KnownDifferenceTests` shows each one
/// still holds on this machine, so an entry that stops being true is noticed.
enum KnownDifference: String, CaseIterable, Sendable {
    // MARK: RunLoopKit differs on purpose (README, "Where RunLoopKit differs from CF on purpose")

    /// CF lets a version-0 source be in several loops; RunLoopKit stops with a message. The
    /// harness uses one loop per program.
    case sourceInOneLoopOnly
    /// Running `.common`: CF logs and returns `finished`; RunLoopKit stops with a message (R10).
    /// Never generated.
    case runningCommonStops
    /// A timer or observer added to a second loop: CF ignores it; RunLoopKit stops (R39, R53).
    /// The harness uses one loop per program.
    case itemInSecondLoopStops
    /// Tolerance: CF on Linux ignores it; RunLoopKit coalesces wake-ups within it (R46). The
    /// harness never sets a tolerance.
    case toleranceHonoured
    /// `handledSource` can be lost in CF: `__CFRunLoopDoSources0` keeps only the last collected
    /// source's result, so when an earlier perform invalidates a later collected source, or runs
    /// a nested run that performs it, the iteration counts as "no source": it does not poll but
    /// waits (BeforeWaiting, a sleep). RunLoopKit counts the iteration as handled if any source
    /// was performed (README). Generator: source callouts never run the loop or invalidate
    /// another source.
    case lostHandledSource

    // MARK: CF artifacts found by this harness

    /// CF on Linux handles one ready descriptor per iteration (`__CFRunLoopServiceFileDescriptors`
    /// takes one event from the mode's edge-triggered epoll set): when two of the loop's wake-up
    /// eventfd (written by `CFRunLoopStop` / `CFRunLoopWakeUp`), the mode's timerfd and a
    /// version-1 source's port are ready, the iteration handles only the one that became ready
    /// first, so due timers fire (or the port source is handled) an iteration later, or, if the
    /// run then ends, in a later run; a wake-up left unread makes a later wait in any mode return
    /// at once, taking the place of a ready port source. RunLoopKit fires every due timer after
    /// every wait (R40) and then handles one ready version-1 source (R38). Generator: a program
    /// either has due timers, or wakes the loop (stop, wake-up, sleeping runs), or makes port
    /// sources ready (the ports world: no timer due, every run polls), never two of these.
    case oneWakeReasonPerIteration
    /// Which of several ready version-1 sources of the running mode is handled first. CF: the one
    /// that became ready first in that mode's epoll set, which holds the source's port all the
    /// time, whatever mode runs (a port added to a mode while ready counts from then). RunLoopKit
    /// watches a source only while one of its modes runs (R37), so it handles first the one it
    /// noticed first: for sources watched when they became ready that is CF's order, but sources
    /// that became ready while unwatched are all noticed when their mode runs, in no fixed order
    /// among themselves. R38 fixes no order. Generator: two port sources that may share a mode
    /// (`.common` counts as sharing every mode) are never both made ready.
    case readyVersion1SourcesUnwatchedInNoFixedOrder
    /// CF ignores `CFRunLoopWakeUp` (and the wake of `CFRunLoopStop`) from the moment a wait ends
    /// until the next iteration begins (`__CFRunLoopSetIgnoreWakeUps`): AfterWaiting observers,
    /// timers, version-1 sources, the last blocks step, Exit. RunLoopKit keeps such a wake-up, so
    /// its next sleep returns at once (R30: "at most once"). Generator: every sleeping wait
    /// follows a stop in BeforeWaiting (the guard), so a kept wake-up changes nothing visible.
    case wakeUpIgnoredAfterWaiting
    /// A timer date already past is clamped to "now" by `CFRunLoopTimerCreate` and
    /// `CFRunLoopTimerSetNextFireDate` (`_fireTSR = now`): past timers fire in the order their
    /// dates were set, not by date, and a repeating one's grid starts when its date was set.
    /// RunLoopKit keeps the date (R40, R42). Generator: dates come from a counter that grows in
    /// execution order, and `query` does not report the next date of a timer that fired.
    case pastFireDatesClampedToNow
    /// `CFRunLoopAddCommonMode` does not create the mode unless common items must be added to it,
    /// so `CFRunLoopCopyAllModes` does not list it; RunLoopKit creates it, as R7 says ("made
    /// common"). Generator: only modes that already hold something are made common.
    case addCommonModeCreatesMode
    /// `CFRunLoopPerformBlock(rl, kCFRunLoopCommonModes, …)` creates a real mode named
    /// "kCFRunLoopCommonModes" (it "ensures the mode exists" without special-casing the
    /// pseudo-mode), which `CFRunLoopCopyAllModes` then lists. A CF bug. Generator: no mode
    /// query after a block for `.common`.
    case commonBlockCreatesMode
    /// `CFRunLoopAddCommonMode` adds the common items to the new mode in CFSet (hash) order, so
    /// common observers of equal order are called there in no fixed order; RunLoopKit adds them
    /// in the order they were made common (R49). Generator: observer orders are all different.
    case commonItemsInHashOrder
    /// A due timer removed from the running mode by an earlier callout of the same timers step
    /// still fires in CF if it is still in another mode of the loop: `__CFRunLoopDoTimer` checks
    /// only `rlt->_runLoop == rl`. RunLoopKit fires it only if it is still in the running mode
    /// (R40: "when its mode runs"). A CF bug. Generator: with due timers, scripts never remove
    /// a timer.
    case timerRemovedFromRunningModeStillFires
    /// A timer given a new date while its callout runs is left out when its modes' timerfds are
    /// re-armed (`__CFArmNextTimerInMode` skips firing timers), and after the callout CF re-arms
    /// only the running mode: in its other modes the honoured date is not armed, so it fires
    /// there only once something else re-arms that mode's timer. RunLoopKit fires it wherever
    /// it is due (R44). A CF bug. Generator: a timer's date is never set while it may be firing
    /// (by its own script, or by any script if its own script runs the loop).
    case timerRedatedWhileFiringNotArmedInOtherModes
    /// A stop's wake-up can be taken by another run: when a callout calls `CFRunLoopStop` and
    /// then runs the loop again, the nested run's wait reads the wake-up, and the stopped outer
    /// run then goes to sleep — until its timeout, or for good. RunLoopKit does not let a
    /// stopped run sleep (R27: it returns at the end of its current iteration). A CF bug.
    /// Generator: after a stop, every sleep is a guarded one (whose guard stops it again).
    case stoppedRunSleepsAfterANestedRunTookItsWakeUp
    /// `__CFRunLoopDoBlocks` detaches the whole block list while it runs blocks: a run nested in
    /// a block does not see blocks that were pending when that blocks step began, even for its
    /// own mode (they run later, in the outer run). RunLoopKit runs them in the nested run, as
    /// R54 says. Generator: block callouts never run the loop.
    case blockListDetached

    /// Why the entry is here, for reports.
    var reason: String {
        switch self {
        case .sourceInOneLoopOnly: "RunLoopKit on purpose: a source belongs to one loop"
        case .runningCommonStops: "RunLoopKit on purpose: running .common stops with a message"
        case .itemInSecondLoopStops: "RunLoopKit on purpose: a timer or observer in a second loop stops with a message"
        case .toleranceHonoured: "RunLoopKit on purpose: tolerance coalesces wake-ups"
        case .lostHandledSource: "CF bug, RunLoopKit on purpose: handledSource kept if any source ran"
        case .oneWakeReasonPerIteration: "CF artifact: one ready descriptor per iteration (wake-up, timers or a port source)"
        case .wakeUpIgnoredAfterWaiting: "CF artifact: wake-ups ignored between wait and next iteration"
        case .pastFireDatesClampedToNow: "CF artifact: past fire dates clamped to the time they are set"
        case .addCommonModeCreatesMode: "R7 vs CF: a mode made common exists in RunLoopKit only"
        case .commonBlockCreatesMode: "CF bug: a block for kCFRunLoopCommonModes creates a mode of that name"
        case .commonItemsInHashOrder: "CF artifact: items made common join a new common mode in hash order"
        case .timerRemovedFromRunningModeStillFires: "CF bug: a timer removed from the running mode during the timers step still fires"
        case .timerRedatedWhileFiringNotArmedInOtherModes: "CF bug: a timer re-dated in its own callout is not armed in its other modes"
        case .stoppedRunSleepsAfterANestedRunTookItsWakeUp: "CF bug: a stopped run sleeps if a nested run took the stop's wake-up"
        case .blockListDetached: "CF artifact: a run nested in a block does not see pending blocks"
        case .readyVersion1SourcesUnwatchedInNoFixedOrder:
            "R37, RunLoopKit on purpose: version-1 sources that became ready while unwatched are handled in no fixed order"
        }
    }
}

extension KnownDifference {
    /// The known differences `program` could run into, judged from the program alone: empty for
    /// every generated program and every program the shrinker keeps. A script runs at some
    /// callout after the operation that attached it, so what it needs must come from earlier
    /// top-level operations, and what it does counts as done anywhere later.
    static func risked(by program: [Op]) -> Set<KnownDifference> {
        var risked: Set<KnownDifference> = []
        var kinds: [Int: ItemKind] = [:]
        var direct: Set<String> = ["default"]  // modes surely created by earlier top-level operations
        var commonBlock = false, queriesModes = false, hasDueTimers = false, wakes = false, scriptRemovesTimer = false
        var sleepsUnguarded = false, wakesUp = false, makesPortsReady = false, lastPastDate = -Double.infinity
        var observerOrders: [Int: Int] = [:]
        var portModes: [Int: Set<String>] = [:], readiedPorts: Set<Int> = []
        var redatedByScripts: Set<Int> = [], redatedByOwnScript: Set<Int> = [], runFromOwnScript: Set<Int> = []

        func dated(_ date: FireDate) {
            if date != .future { hasDueTimers = true }
            // Dates of the counter grow; an explicit past date must not come before an earlier one.
            if case .at(let seconds) = date, seconds < 0 {
                if seconds <= lastPastDate { risked.insert(.pastFireDatesClampedToNow) }
                lastPastDate = seconds
            }
        }

        func visit(_ op: Op, owner: ItemKind?, ownerID: Int?, topLevel: Bool) {
            func created(_ modes: [String]) { if topLevel { direct.formUnion(modes) } }
            switch op {
            case .addTimer(let id, let date, _, let modes):
                kinds[id] = .timer
                created(modes)
                dated(date)
            case .setFireDate(let id, let date):
                dated(date)
                if !topLevel { redatedByScripts.insert(id) }
                if !topLevel, id == ownerID { redatedByOwnScript.insert(id) }
            case .addSource(let id, _, let modes):
                kinds[id] = .source
                created(modes)
            case .addPortSource(let id, _, let modes):
                kinds[id] = .portSource
                created(modes)
                portModes[id, default: []].formUnion(modes)
            case .makeReady(let id):
                makesPortsReady = true
                readiedPorts.insert(id)
            case .addObserver(let id, _, let order, _, let modes):
                kinds[id] = .observer
                created(modes)
                if let other = observerOrders[order], other != id { risked.insert(.commonItemsInHashOrder) }
                observerOrders[order] = id
            case .add(let id, let mode):
                // Creates the mode only if the item is still valid, which may have changed. Noted
                // for any id: a script may name a port source created after it was attached.
                portModes[id, default: []].insert(mode)
            case .performBlock(let id, let modes):
                kinds[id] = .block
                created(modes)
                if modes.contains("common") { commonBlock = true }
            case .addCommonMode(let mode):
                if !direct.contains(mode) { risked.insert(.addCommonModeCreatesMode) }
            case .queryModes:
                queriesModes = true
            case .invalidate(let id):
                if owner == .source, kinds[id] == .source { risked.insert(.lostHandledSource) }
            case .run(_, let timeout, _):
                if timeout != .zero { wakes = true }
                if timeout != .zero && timeout != .guarded { sleepsUnguarded = true }
                if owner == .timer, let ownerID { runFromOwnScript.insert(ownerID) }
                if owner == .source { risked.insert(.lostHandledSource) }
                if owner == .block { risked.insert(.blockListDetached) }
            case .runDefaultUntilDone:
                wakes = true
                sleepsUnguarded = true
            case .stop, .wakeUp:
                wakes = true
                wakesUp = true
            case .onOtherThread(let ops):
                wakes = true
                wakesUp = true
                for case .makeReady(let id) in ops {
                    makesPortsReady = true
                    readiedPorts.insert(id)
                }
            case .onCallout(let id, let script):
                for scripted in script { visit(scripted, owner: kinds[id], ownerID: id, topLevel: false) }
            case .remove(let id, _):
                if !topLevel, kinds[id] == .timer { scriptRemovesTimer = true }
            case .signal, .query:
                break
            }
        }
        for op in program { visit(op, owner: nil, ownerID: nil, topLevel: true) }
        if hasDueTimers && wakes || makesPortsReady && (hasDueTimers || wakes) { risked.insert(.oneWakeReasonPerIteration) }
        if commonBlock && queriesModes { risked.insert(.commonBlockCreatesMode) }
        if sleepsUnguarded && wakesUp { risked.formUnion([.wakeUpIgnoredAfterWaiting, .stoppedRunSleepsAfterANestedRunTookItsWakeUp]) }
        let readied = readiedPorts.sorted()
        for (index, port) in readied.enumerated() {
            for other in readied[..<index] where mayShareAMode(portModes[port] ?? [], portModes[other] ?? []) {
                risked.insert(.readyVersion1SourcesUnwatchedInNoFixedOrder)
            }
        }
        if hasDueTimers && scriptRemovesTimer { risked.insert(.timerRemovedFromRunningModeStillFires) }
        if hasDueTimers && !(redatedByOwnScript.isEmpty && redatedByScripts.isDisjoint(with: runFromOwnScript)) {
            risked.insert(.timerRedatedWhileFiringNotArmedInOtherModes)
        }
        return risked
    }

    /// Whether items that were ever put in `first` and in `second` (mode names, `"common"`
    /// meaning whichever modes are common) may have been in one mode at the same time.
    static func mayShareAMode(_ first: Set<String>, _ second: Set<String>) -> Bool {
        guard !first.isEmpty, !second.isEmpty else { return false }
        return first.contains("common") || second.contains("common") || !first.isDisjoint(with: second)
    }
}
