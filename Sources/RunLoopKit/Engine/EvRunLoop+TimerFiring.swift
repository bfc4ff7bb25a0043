extension EvRunLoop {
    /// R40–R45: fires every timer of the running mode due at `now`, in fire-date order, each
    /// once. `waiter` is the loop's own (``waiter``), as its concrete type where it is known.
    ///
    /// The due entries stay in the heap while they wait their turn, so that a run nested in an
    /// earlier timer's callout finds them due and fires them itself (R40, R58); firing makes an
    /// entry stale, so the outer step then skips it.
    ///
    /// It tells `view` when the mode's earliest timer is due, so that the passes until then skip
    /// the step without the lock (see ``PassView/timersDueFrom``).
    func fireDueTimers<Waiter: LoopWaiter>(_ run: RunContext, _ view: inout PassView, at now: MonotonicTime, _ waiter: Waiter) {
        let modeState = run.modeState
        var several: [TimerHeap.Entry]?
        let one: FiringTimer? = state.withLock { _ in
            guard let first = modeState.timers.earliestLiveDeadline() else {
                view.timersDueFrom = .distantFuture
                return nil
            }
            // Nothing due, the common case of a mode with timers: no array is touched.
            guard first <= now else {
                view.timersDueFrom = first  // stale entries above it are dropped: nothing earlier
                return nil
            }
            view.timersDueFrom = PassView.unknownDueDate  // firing reschedules: look again next pass
            // One timer due, the common case of a fire: no list, its entry stays in place, and
            // it starts firing under this lock.
            if modeState.timers.onlyTopIsDue(at: now) {
                let timer = modeState.timers.top.timer
                return beginFiring(timer, listedEarlier: false, in: run.mode, waiter).map { FiringTimer(timer: timer, firedDate: $0) }
            }
            several = takeDueTimers(modeState, at: now)
            return nil
        }
        if let one {
            fire(one, run, waiter)
        } else if var entries = several {
            for entry in entries {
                let timer = entry.timer
                let firedDate = state.withLock { _ in beginFiring(timer, listedEarlier: true, in: run.mode, waiter) }
                if let firedDate { fire(FiringTimer(timer: timer, firedDate: firedDate), run, waiter) }
            }
            entries.removeAll(keepingCapacity: true)  // no timer kept alive by the scratch
            dueTimersScratch = entries
        }
    }

    /// A timer whose handler is about to run, and the fire date it fires for.
    private struct FiringTimer {
        let timer: EvTimer
        let firedDate: MonotonicTime
    }

    /// Several timers due: they are listed in fire-date order, in the loop's scratch array, and
    /// left in the heap (under the loop's lock).
    @inline(never)
    private func takeDueTimers(_ modeState: ModeState, at now: MonotonicTime) -> [TimerHeap.Entry] {
        // Out of the loop for the step: a run nested in a timer's callout lists its own.
        var taken = dueTimersScratch
        dueTimersScratch = []
        while let top = modeState.timers.peekLive(), top.deadline <= now {
            modeState.timers.removeTop()
            taken.append(top)
        }
        for entry in taken { modeState.timers.push(entry) }
        taken.removeAll { $0.timer.isFiring }  // in place: no second array
        return taken
    }

    /// Marks `timer` firing and returns the date it fires for; `nil` if it must not fire (loop's
    /// lock held). A timer `listedEarlier` in the step fires only if it is still due in `mode`,
    /// decided now as CF's __CFRunLoopDoTimer does (R40): an earlier callout may have re-dated
    /// it, moved it, or fired it in a nested run, which moves its entry without making it stale.
    @inline(__always)
    private func beginFiring<Waiter: LoopWaiter>(_ timer: EvTimer, listedEarlier: Bool, in mode: Mode, _ waiter: Waiter) -> MonotonicTime? {
        timer.state.withLock { timerState in
            guard timerState.isValid, !timer.isFiring else { return nil }
            if listedEarlier {
                guard timerState.loop === self, timerState.modes.contains(mode), timerState.fireDate <= waiter.now() else { return nil }
            }
            timer.isFiring = true
            timerState.rescheduled = false
            return timerState.fireDate
        }
    }

    /// Runs the handler of a timer ``beginFiring(_:listedEarlier:in:_:)`` marked, then invalidates
    /// it (one-shot, R43) or moves it to its grid's next slot (R42).
    private func fire<Waiter: LoopWaiter>(_ firing: FiringTimer, _ run: RunContext, _ waiter: Waiter) {
        let timer = firing.timer
        recorder.timerFires(due: firing.firedDate)
        Callout.timer(timer, on: self)
        let modeState = run.modeState
        state.withLock { state in
            timer.state.withLock { timerState in
                timer.isFiring = false
                guard timerState.isValid else { return }
                let isBound = timerState.loop === self
                if timer.intervalNanoseconds == 0 {  // R43
                    if isBound { detachEverywhere(timer, &state, &timerState) }
                    timerState.isValid = false
                } else if !timerState.rescheduled {  // R42; C80: a date set meanwhile always wins
                    let next = Self.nextFireDate(after: firing.firedDate, everyNanoseconds: timer.intervalNanoseconds, now: waiter.now())
                    // Out of every mode since its handler began, it still moves on (R42): added
                    // again, it keeps its grid. Bound to another loop meanwhile, that loop dates it.
                    guard isBound || timerState.loop == nil else { return }
                    timerState.fireDate = next
                    guard isBound else { return }
                    // A timer of this mode only, whose entry is still the heap's top (the usual
                    // fire): the entry moves to the new date in place. The loop's thread is
                    // awake, so no planned sleep has a deadline to move (R44).
                    let movedInPlace = timerState.modes.isOnly(run.mode) && modeState.timers.moveTop(
                        of: timer, generation: timer.heapGeneration.load(ordering: .relaxed),
                        to: next, latest: timerState.latestFireDate, sequence: state.nextSequence())
                    if !movedInPlace { reschedule(timer, &timerState, &state) }
                }
            }
        }
    }

    /// R42: the old fire date plus as many whole intervals as needed to be strictly after `now`.
    static func nextFireDate(after fired: MonotonicTime, everyNanoseconds interval: Int64, now: MonotonicTime) -> MonotonicTime {
        let step = max(interval, 1)
        guard now.nanoseconds >= fired.nanoseconds else { return fired.adding(nanoseconds: step) }
        let (gap, gapOverflow) = now.nanoseconds.subtractingReportingOverflow(fired.nanoseconds)
        let (advance, overflow) = (gap / step + 1).multipliedReportingOverflow(by: step)
        guard gapOverflow || overflow else { return fired.adding(nanoseconds: advance) }
        return nextFireDateFarBehind(fired, step, now)
    }

    /// ``nextFireDate(after:everyNanoseconds:now:)`` for a date so far behind that the gap or the
    /// advance leaves 64 bits (R47): in 128, so the grid's next slot is found all the same.
    @inline(never)
    private static func nextFireDateFarBehind(_ fired: MonotonicTime, _ step: Int64, _ now: MonotonicTime) -> MonotonicTime {
        let wideFired = Int128(fired.nanoseconds), wideStep = Int128(step)
        let next = wideFired + ((Int128(now.nanoseconds) - wideFired) / wideStep + 1) * wideStep
        return next > Int128(Int64.max) ? .distantFuture : MonotonicTime(nanoseconds: Int64(next))
    }
}
