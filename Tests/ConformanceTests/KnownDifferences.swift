/// Every known difference between the real CFRunLoop (Swift's libFoundation.so on Linux) and
/// RunLoopKit, with the reason — the one list of them. The README's table "Where RunLoopKit
/// differs from CF on purpose" and the DocC page DifferencesFromCF.md hold the same entries under
/// the same short `title`s (`DifferenceListTests` checks them). The random generator keeps clear of each
/// (`ProgramGenerator`), `risked(by:)` recognises the programs that could show one (the shrinker
/// keeps only programs it clears), and `KnownDifferenceTests` shows each one still holds on this
/// machine, so an entry that stops being true is noticed. Everything else matches CF.
enum KnownDifference: String, CaseIterable, Sendable {
    // MARK: RunLoopKit differs on purpose (README, "Where RunLoopKit differs from CF on purpose")

    /// CF lets a version-0 source be in several loops; RunLoopKit stops with a message. The
    /// harness uses one loop per program.
    case sourceInOneLoopOnly
    /// Running `.common`: CF logs and returns `finished`; RunLoopKit stops with a message (R10).
    /// Never generated.
    case runningCommonStops
    /// A perform-block for an empty list of modes: CF queues it for ever, never run (it matches
    /// no mode); RunLoopKit stops with a message naming the call. Never generated.
    case blockForNoModeStops
    /// C4: CF has no call that runs another thread's loop, and Foundation's `run(mode:before:)`
    /// on another thread's `RunLoop` returns false; RunLoopKit stops with a message (R5). The
    /// harness runs every loop on its own thread.
    case runningAnotherThreadsLoopStops
    /// C72: CF makes a negative interval zero, a one-shot; RunLoopKit stops with a message
    /// (R47). Never generated.
    case negativeIntervalStops
    /// C72, W17: CF truncates a positive interval under 1 ns to zero while the timer still
    /// repeats, and halts the process at its first fire; RunLoopKit makes it 1 ns (R47). Never
    /// generated.
    case intervalUnderANanosecondIsOne
    /// C55: CF's `CFRunLoopIsWaiting` is true for the instant of a poll pass's non-blocking
    /// check; RunLoopKit's `isWaiting` never is in a polling iteration (R23). The harness does not
    /// ask.
    case pollNeverWaits
    /// A timer or observer added to a second loop: CF ignores it while it is in a mode of the
    /// first, and accepts one that is only a common item there (removed from every mode by name);
    /// RunLoopKit stops while it belongs to the first, common items included (R39, R53). The
    /// harness uses one loop per program.
    case itemInSecondLoopStops
    /// Tolerance: CF on Linux ignores it; RunLoopKit coalesces wake-ups within it (R46). The
    /// harness never sets a tolerance.
    case toleranceHonoured
    /// `handledSource` can be lost in CF: `__CFRunLoopDoSources0` keeps only the last collected
    /// source's result, so when an earlier perform invalidates a later collected source, or runs
    /// a nested run that performs it, the iteration counts as "no source": it does not poll but
    /// waits (BeforeWaiting, a sleep). RunLoopKit counts the iteration as handled if any source
    /// was performed (README). Generator: source callouts never invalidate another source, and
    /// run the loop only in programs with one version-0 source.
    case lostHandledSource
    /// W1: CF keeps each mode's timers in a sorted array (O(n) add and move); RunLoopKit in a
    /// heap, O(log n). Cost only, the order is the same.
    case timersInAHeap
    /// W2: CF has an eventfd per loop plus an epoll fd and a timerfd per mode, never freed;
    /// RunLoopKit three descriptors per loop whatever the modes (a fourth once it watches a
    /// caller's descriptor).
    case fixedDescriptorsPerLoop
    /// W3, W16: CF arms a libdispatch timer on a global queue for every run with a finite
    /// timeout, which wakes the loop from another thread; RunLoopKit's timeout is the deadline of
    /// the loop's own wait. The same result for one run, without the thread hop; in CF an outer
    /// run's timer that expires during a nested run also wakes the nested run for one more pass.
    case timeoutInTheWait
    /// W13, R31: Foundation's `RunLoop.run()` repeats runs until the mode is empty, so it ignores
    /// a stop; RunLoopKit's `run()` follows CFRunLoopRun and returns when stopped.
    case runReturnsWhenStopped
    /// W13, C126: Foundation on Linux has no public wake-up, observers or sources (underscored
    /// SPI only, with mis-numbered activities); RunLoopKit's are public, typed and `Sendable`.
    case publicWakeUpObserversAndSources
    /// C5, C6: a loop whose thread exited keeps, in CF, its modes, timers and observers as long as
    /// something references the loop (only its sources go); RunLoopKit tears it down (R4): the
    /// timers and observers are detached (still valid, free to join another loop) and only the
    /// default mode is left, so a dead loop holds nothing alive.
    case deadLoopKeepsNothing
    /// C69, W12: CF reads 8 bytes from a version-1 source's descriptor before its perform, so
    /// only eventfd-like descriptors work; `EvFileDescriptorSource` reports readiness and leaves
    /// the reading to its handler (the harness's port callout drains the eventfd itself, so the
    /// traces are the same).
    case descriptorLeftToTheHandler
    /// W9: CF recognises the common pseudo-mode by pointer only, so a mode named
    /// "kCFRunLoopCommonModes" that is not the constant is a real mode; RunLoopKit compares
    /// modes by name, so that name is `.common`. Generator: never names it.
    case commonModesNameIsThePseudoMode
    /// W10, C65: CF keeps a mode's sources in a hash set by context equality, so a second source
    /// with the same info and callouts cannot join a mode holding the first (and is never
    /// performed there); RunLoopKit's sources are distinct objects. The harness gives every
    /// source its own info.
    case sourcesNeverMerge
    /// W6: CF does not disarm a mode's timerfd when its last timer is removed or invalidated, so
    /// the loop wakes once at the old date for nothing (an extra AfterWaiting and pass); a
    /// one-shot timer that fires in one of its modes leaves the others armed so too. RunLoopKit
    /// arms only live timers. Generator: every timer date is long past or a day ahead, and
    /// timers are due only in programs whose runs all poll.
    case removedTimerNeverWakes

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
    /// A timer date already past is clamped to "now" by `CFRunLoopTimerCreate` and
    /// `CFRunLoopTimerSetNextFireDate` (`_fireTSR = now`): past timers fire in the order their
    /// dates were set, not by date, and a repeating one's grid starts when its date was set.
    /// RunLoopKit keeps the date (R40, R42). Generator: dates come from a counter that grows in
    /// execution order, `query` does not report the next date of a timer that fired, and next to
    /// a quick timer (whose next date is "now" in CF) no other timer is ever due.
    case pastFireDatesClampedToNow
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
    /// A run nested in a timer's callout, in another mode of that timer, wakes once for nothing
    /// in CF: each mode has its own timerfd, and the other mode's is still armed for the firing
    /// timer's passed date, which nothing re-arms until the callout returns (every arming skips
    /// a firing timer, C81), so the nested run's first sleep ends at once with nothing due (an
    /// extra BeforeWaiting, AfterWaiting and pass). RunLoopKit computes the loop's one deadline
    /// for each sleep from the running mode's timers, leaving out the firing one (R22, R59), so
    /// the nested run sleeps until its timeout. Generator: timers are due only in programs whose
    /// runs all poll.
    case firingTimerNeverWakesRunNestedInItsCallout
    /// A stop's wake-up can be taken by another run: when a callout calls `CFRunLoopStop` and
    /// then runs the loop again, the nested run's wait reads the wake-up, and the stopped outer
    /// run then goes to sleep — until its timeout, or for good. RunLoopKit does not let a
    /// stopped run sleep (R27: it returns at the end of its current iteration). A CF bug.
    /// Generator: after a stop, every sleep is a guarded one (whose guard stops it again).
    case stoppedRunSleepsAfterANestedRunTookItsWakeUp
    /// `__CFRunLoopDoBlocks` detaches the whole block list while it runs blocks: a run nested in
    /// a block does not see blocks that were pending when that blocks step began, even for its
    /// own mode (they run later, in the outer run). RunLoopKit runs them in the nested run, as
    /// R54 says. Generator: block callouts run the loop only in programs with one block.
    case blockListDetached
    /// `CFRunLoopSourceInvalidate` and `CFRunLoopObserverInvalidate` reach the common items only
    /// through the loops the item is in: a common source or observer removed by name from every
    /// mode, then invalidated, stays a common item, so `CFRunLoopContains…` with the pseudo-mode
    /// answers true for a dead item (nothing else shows it: adding an invalid item does nothing).
    /// A one-shot observer that left its last mode in its callout is invalidated so after it.
    /// RunLoopKit's invalidation forgets it (R36, R45). Generator: no source or observer is both
    /// invalidated (one-shot observers count as invalidated) and asked about with the pseudo-mode.
    case invalidatedItemIsNoCommonItem
    /// C70: CF's wait reads the ready port's descriptor before AfterWaiting; a callout there that
    /// takes the port out of the running mode leaves CF's iteration nothing to perform, and the
    /// readiness is gone, read by the wait. RunLoopKit puts it back: it is handled when one of
    /// the port's modes next runs (R37, R38). Generator: no AfterWaiting observer's script removes
    /// a port source.
    case portTakenOutAfterTheWaitKeepsItsReadiness

    /// The entry's short title, the same in the README's table of differences (and in every
    /// other document listed in `DifferenceListTests.listings`).
    var title: String {
        switch self {
        case .sourceInOneLoopOnly: "A source belongs to one loop"
        case .runningCommonStops: "Running the common pseudo-mode stops"
        case .blockForNoModeStops: "A block for no mode stops"
        case .runningAnotherThreadsLoopStops: "Running another thread's loop stops"
        case .negativeIntervalStops: "A negative timer interval stops"
        case .intervalUnderANanosecondIsOne: "An interval under a nanosecond is a nanosecond"
        case .pollNeverWaits: "A poll is never waiting"
        case .itemInSecondLoopStops: "A timer or observer in a second loop stops"
        case .toleranceHonoured: "Timer tolerance is honoured"
        case .lostHandledSource: "handledSource is never lost"
        case .timersInAHeap: "Timers in a heap"
        case .fixedDescriptorsPerLoop: "Three descriptors per loop"
        case .timeoutInTheWait: "The timeout is part of the wait"
        case .runReturnsWhenStopped: "run() returns when stopped"
        case .publicWakeUpObserversAndSources: "Public wake-up, observers and sources"
        case .deadLoopKeepsNothing: "A dead loop keeps nothing"
        case .descriptorLeftToTheHandler: "An fd source's handler reads the descriptor"
        case .commonModesNameIsThePseudoMode: "The name kCFRunLoopCommonModes is the common pseudo-mode"
        case .sourcesNeverMerge: "Two sources never merge"
        case .removedTimerNeverWakes: "A removed timer never wakes the loop"
        case .oneWakeReasonPerIteration: "Every wake reason is handled in one iteration"
        case .readyVersion1SourcesUnwatchedInNoFixedOrder: "Version-1 sources ready while unwatched come in no fixed order"
        case .pastFireDatesClampedToNow: "Past fire dates are kept"
        case .commonBlockCreatesMode: "A block for the common modes creates no mode"
        case .commonItemsInHashOrder: "Common items join a new common mode in the order they were added"
        case .timerRemovedFromRunningModeStillFires: "A timer removed from the running mode does not fire"
        case .timerRedatedWhileFiringNotArmedInOtherModes: "A timer that moves itself fires in all its modes"
        case .firingTimerNeverWakesRunNestedInItsCallout: "A firing timer never wakes a run nested in its callout"
        case .stoppedRunSleepsAfterANestedRunTookItsWakeUp: "A stopped run never sleeps"
        case .blockListDetached: "A run nested in a block sees the pending blocks"
        case .invalidatedItemIsNoCommonItem: "An invalidated item is no common item"
        case .portTakenOutAfterTheWaitKeepsItsReadiness: "A port taken out of the running mode after the wait keeps its readiness"
        }
    }

    /// Why the entry is here, for reports.
    var reason: String {
        switch self {
        case .sourceInOneLoopOnly: "RunLoopKit on purpose: a source belongs to one loop"
        case .runningCommonStops: "RunLoopKit on purpose: running .common stops with a message"
        case .blockForNoModeStops: "RunLoopKit on purpose: a block for no mode stops with a message"
        case .runningAnotherThreadsLoopStops: "RunLoopKit on purpose: running another thread's loop stops with a message"
        case .negativeIntervalStops: "RunLoopKit on purpose: a negative timer interval stops with a message"
        case .intervalUnderANanosecondIsOne: "W17, CF bug: an interval under 1 ns halts the process at the first fire"
        case .pollNeverWaits: "RunLoopKit on purpose: isWaiting is never true in a polling iteration"
        case .itemInSecondLoopStops: "RunLoopKit on purpose: a timer or observer in a second loop stops with a message"
        case .toleranceHonoured: "RunLoopKit on purpose: tolerance coalesces wake-ups"
        case .lostHandledSource: "CF bug, RunLoopKit on purpose: handledSource kept if any source ran"
        case .timersInAHeap: "W1, RunLoopKit on purpose: O(log n) timers"
        case .fixedDescriptorsPerLoop: "W2, RunLoopKit on purpose: descriptors per loop, not per mode"
        case .timeoutInTheWait: "W3, RunLoopKit on purpose: no libdispatch timer per run"
        case .runReturnsWhenStopped: "W13, RunLoopKit on purpose: run() follows CFRunLoopRun, not Foundation"
        case .publicWakeUpObserversAndSources: "W13, RunLoopKit on purpose: public API where Foundation has SPI"
        case .deadLoopKeepsNothing: "C5, C6, RunLoopKit on purpose: a dead loop is torn down"
        case .descriptorLeftToTheHandler: "C69, W12, RunLoopKit on purpose: fd sources do not eat data"
        case .commonModesNameIsThePseudoMode: "W9, RunLoopKit on purpose: modes compare by name"
        case .sourcesNeverMerge: "W10, RunLoopKit on purpose: sources are objects"
        case .removedTimerNeverWakes: "W6, RunLoopKit on purpose: no wake-up for a removed timer"
        case .oneWakeReasonPerIteration: "CF artifact: one ready descriptor per iteration (wake-up, timers or a port source)"
        case .pastFireDatesClampedToNow: "CF artifact: past fire dates clamped to the time they are set"
        case .commonBlockCreatesMode: "CF bug: a block for kCFRunLoopCommonModes creates a mode of that name"
        case .commonItemsInHashOrder: "CF artifact: items made common join a new common mode in hash order"
        case .timerRemovedFromRunningModeStillFires: "CF bug: a timer removed from the running mode during the timers step still fires"
        case .timerRedatedWhileFiringNotArmedInOtherModes: "CF bug: a timer re-dated in its own callout is not armed in its other modes"
        case .firingTimerNeverWakesRunNestedInItsCallout:
            "CF artifact: a mode's timerfd stays armed for a firing timer's passed date, waking a run nested in its callout"
        case .stoppedRunSleepsAfterANestedRunTookItsWakeUp: "CF bug: a stopped run sleeps if a nested run took the stop's wake-up"
        case .blockListDetached: "CF artifact: a run nested in a block does not see pending blocks"
        case .invalidatedItemIsNoCommonItem: "CF artifact: a source or observer invalidated while in no mode stays a common item"
        case .portTakenOutAfterTheWaitKeepsItsReadiness: "CF bug: a port taken out of the running mode after the wait read it loses its readiness"
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
        var commonBlock = false, queriesModes = false, hasDueTimers = false, wakes = false, scriptRemovesTimer = false
        var sleepsUnguarded = false, wakesUp = false, makesPortsReady = false, lastPastDate = -Double.infinity
        var observerOrders: [Int: Int] = [:]
        var portModes: [Int: Set<String>] = [:], readiedPorts: Set<Int> = []
        var redatedByScripts: Set<Int> = [], redatedByOwnScript: Set<Int> = [], runFromOwnScript: Set<Int> = []
        var timerModes: [Int: Set<String>] = [:]
        var nearTimers: Set<Int> = [], removesNearTimer = false
        var runsInASource = false, runsInABlock = false
        var askedAsCommon: Set<Int> = [], invalidated: Set<Int> = []
        var quickTimers: Set<Int> = [], dueDated: Set<Int> = []
        var scriptRemovesPort = false, afterWaitingObservers: Set<Int> = []
        var sleeps = false, oneShotTimers: Set<Int> = [], sleepsInOwnScript: Set<Int> = []

        func dated(_ date: FireDate, _ id: Int) {
            if date != .future {
                hasDueTimers = true
                dueDated.insert(id)
            }
            // Dates of the counter grow; an explicit past date must not come before an earlier one.
            if case .at(let seconds) = date, seconds < 0 {
                if seconds <= lastPastDate { risked.insert(.pastFireDatesClampedToNow) }
                lastPastDate = seconds
            }
        }

        func named(_ modes: [String]) {
            if modes.contains("kCFRunLoopCommonModes") { risked.insert(.commonModesNameIsThePseudoMode) }
        }

        func visit(_ op: Op, owner: ItemKind?, ownerID: Int?, topLevel: Bool) {
            switch op {
            case .addTimer(_, _, _, let modes), .addSource(_, _, let modes), .addPortSource(_, _, let modes),
                .addObserver(_, _, _, _, let modes), .performBlock(_, let modes):
                named(modes)
            case .add(_, let mode), .remove(_, let mode), .addCommonMode(let mode), .run(let mode, _, _),
                .contains(_, let mode), .nextTimerFireDate(let mode):
                named([mode])
            default:
                break
            }
            switch op {
            case .addTimer(let id, let date, let interval, let modes):
                kinds[id] = .timer
                timerModes[id, default: []].formUnion(modes)
                if interval > 0 && interval < 1 { quickTimers.insert(id) }
                if interval == 0 { oneShotTimers.insert(id) }
                dated(date, id)
                if date == .soon || date.isAhead { nearTimers.insert(id) }
            case .setFireDate(let id, let date):
                dated(date, id)
                if date == .soon || date.isAhead { nearTimers.insert(id) }
                if !topLevel { redatedByScripts.insert(id) }
                if !topLevel, id == ownerID { redatedByOwnScript.insert(id) }
            case .addSource(let id, _, _):
                kinds[id] = .source
            case .addPortSource(let id, _, let modes):
                kinds[id] = .portSource
                portModes[id, default: []].formUnion(modes)
            case .makeReady(let id):
                makesPortsReady = true
                readiedPorts.insert(id)
            case .addObserver(let id, let activities, let order, let repeats, _):
                kinds[id] = .observer
                if activities & Activity.afterWaiting != 0 { afterWaitingObservers.insert(id) }
                if !repeats { invalidated.insert(id) }  // after its first callout
                if let other = observerOrders[order], other != id { risked.insert(.commonItemsInHashOrder) }
                observerOrders[order] = id
            case .add(let id, let mode):
                // Noted for any id: a script may name an item created after it was attached.
                portModes[id, default: []].insert(mode)
                timerModes[id, default: []].insert(mode)
            case .performBlock(let id, let modes):
                kinds[id] = .block
                if modes.contains("common") { commonBlock = true }
            case .queryModes:
                queriesModes = true
            case .invalidate(let id):
                invalidated.insert(id)
                if owner == .source, kinds[id] == .source { risked.insert(.lostHandledSource) }
                if nearTimers.contains(id) { removesNearTimer = true }
            case .run(_, let timeout, _):
                if timeout != .zero {
                    wakes = true
                    sleeps = true
                    if let ownerID { sleepsInOwnScript.insert(ownerID) }
                }
                // An `untilAsleep` run is stopped only once it sleeps: no stopped run sleeps on.
                if timeout != .zero && timeout != .guarded && timeout != .untilAsleep { sleepsUnguarded = true }
                if owner == .timer, let ownerID { runFromOwnScript.insert(ownerID) }
                if owner == .source { runsInASource = true }
                if owner == .block { runsInABlock = true }
            case .runDefaultUntilDone:
                wakes = true
                sleeps = true
                sleepsUnguarded = true
                if let ownerID { sleepsInOwnScript.insert(ownerID) }
            case .stop, .wakeUp:
                wakes = true
                wakesUp = true
            case .onOtherThread(let ops), .fromOtherThread(let ops):
                wakes = true
                wakesUp = true
                for op in ops {
                    switch op {
                    case .makeReady(let id):
                        makesPortsReady = true
                        readiedPorts.insert(id)
                    case .setFireDate(let id, let date):
                        dated(date, id)
                    case .invalidate:
                        visit(op, owner: owner, ownerID: ownerID, topLevel: topLevel)
                    default:
                        break
                    }
                }
            case .onCallout(let id, let script):
                for scripted in script { visit(scripted, owner: kinds[id], ownerID: id, topLevel: false) }
            case .remove(let id, _):
                if !topLevel, kinds[id] == .timer { scriptRemovesTimer = true }
                // An AfterWaiting observer's script; it may name a port made after it was attached.
                if !topLevel, let ownerID, afterWaitingObservers.contains(ownerID), kinds[id] == .portSource || kinds[id] == nil {
                    scriptRemovesPort = true
                }
                if nearTimers.contains(id) { removesNearTimer = true }
            case .contains(let id, let mode):
                if mode == "common" { askedAsCommon.insert(id) }
            case .signal, .query, .addCommonMode, .nextTimerFireDate:
                break
            }
        }
        for op in program { visit(op, owner: nil, ownerID: nil, topLevel: true) }
        if hasDueTimers && wakes || makesPortsReady && (hasDueTimers || wakes) { risked.insert(.oneWakeReasonPerIteration) }
        if commonBlock && queriesModes { risked.insert(.commonBlockCreatesMode) }
        // A quick timer's next date is "now" in CF and on its grid in RunLoopKit: it may be the only due timer.
        if !quickTimers.isEmpty && (quickTimers.count > 1 || !dueDated.subtracting(quickTimers).isEmpty) {
            risked.insert(.pastFireDatesClampedToNow)
        }
        // Whether the item was common and in no mode when invalidated is not judged: any will do.
        if askedAsCommon.intersection(invalidated).contains(where: { kinds[$0] != .timer }) {
            risked.insert(.invalidatedItemIsNoCommonItem)
        }
        if sleepsUnguarded && wakesUp { risked.insert(.stoppedRunSleepsAfterANestedRunTookItsWakeUp) }
        if removesNearTimer && wakes { risked.insert(.removedTimerNeverWakes) }
        // CF's other modes of a due timer stay armed for its passed date while it fires, and for good once a one-shot fired.
        let dueInSeveralModes = dueDated.filter { kinds[$0] == .timer && !(timerModes[$0] ?? []).isSingleMode }
        if !dueInSeveralModes.isDisjoint(with: sleepsInOwnScript) { risked.insert(.firingTimerNeverWakesRunNestedInItsCallout) }
        if sleeps && !dueInSeveralModes.isDisjoint(with: oneShotTimers) { risked.insert(.removedTimerNeverWakes) }
        let readied = readiedPorts.sorted()
        for (index, port) in readied.enumerated() {
            for other in readied[..<index] where mayShareAMode(portModes[port] ?? [], portModes[other] ?? []) {
                risked.insert(.readyVersion1SourcesUnwatchedInNoFixedOrder)
            }
        }
        if hasDueTimers && scriptRemovesTimer { risked.insert(.timerRemovedFromRunningModeStillFires) }
        if makesPortsReady && scriptRemovesPort { risked.insert(.portTakenOutAfterTheWaitKeepsItsReadiness) }
        // A nested run can perform another collected source, or miss another pending block,
        // only if there is one.
        if runsInASource && kinds.values.count(where: { $0 == .source }) > 1 { risked.insert(.lostHandledSource) }
        if runsInABlock && kinds.values.count(where: { $0 == .block }) > 1 { risked.insert(.blockListDetached) }
        // A timer may move itself (C80) if it is only ever in one mode (W18).
        let movesItselfInSeveralModes = redatedByOwnScript.contains { !(timerModes[$0] ?? []).isSingleMode }
        if hasDueTimers && (movesItselfInSeveralModes || !redatedByScripts.isDisjoint(with: runFromOwnScript)) {
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

extension FireDate {
    /// A date an explicit number of seconds ahead (named scenarios only): one a sleeping loop
    /// could reach.
    var isAhead: Bool {
        if case .at(let seconds) = self { return seconds > 0 }
        return false
    }
}
