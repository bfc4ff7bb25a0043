/// Precise timer wake-ups.
///
/// On a virtual machine a timer wakes a sleeping thread tens of microseconds late (the host must
/// deliver the timer interrupt to a halted virtual CPU), later than a cross-thread wake-up does.
/// The loop measures how late its deadline wake-ups are and, when it sleeps until a timer, arms
/// the timerfd that much early (never more than ``maximum``), then waits out the remainder awake.
/// Timers so fire within a few microseconds of their date, and still never before it (R46).
struct WakeLead {
    /// The longest lead, so a loaded machine cannot make the loop spin for long.
    static let maximumNanoseconds: Int64 = 50_000

    /// A moving average of how late deadline wake-ups were, in nanoseconds.
    private var lateness: Int64 = 0

    /// How early to arm the deadline for a timer.
    var nanoseconds: Int64 { min(lateness, Self.maximumNanoseconds) }

    /// Records how late a wake-up for a deadline armed at `armed` came.
    mutating func record(wokeAt now: MonotonicTime, armed: MonotonicTime) {
        let late = min(max(now.nanoseconds &- armed.nanoseconds, 0), 4 * Self.maximumNanoseconds)
        lateness += (late - lateness) / 8
    }
}

/// What a sleep was armed for.
struct SleepPlan {
    /// The time the timerfd was armed for.
    let armed: MonotonicTime
    /// The timer's fire date when the sleep was for a timer armed early (see ``WakeLead``).
    let timerDate: MonotonicTime?
}

extension EvRunLoop {
    /// Arms the deadline for `run`: the mode's next timer, early by the measured wake-up
    /// lateness, or the run's own timeout (loop thread, lock held).
    func armDeadline(_ run: RunContext, _ state: inout LoopState) -> SleepPlan {
        let timerDate = nextTimerWakeUp(run.modeState)
        let plan: SleepPlan
        if timerDate <= run.deadline && timerDate != .distantFuture {
            plan = SleepPlan(armed: timerDate.adding(nanoseconds: -state.wakeLead.nanoseconds), timerDate: timerDate)
        } else {
            plan = SleepPlan(armed: run.deadline, timerDate: nil)
        }
        state.sleepDeadline = plan.armed
        withBackend { $0.setDeadline(plan.armed) }
        return plan
    }

    /// After a deadline wake-up: learns its lateness and, if it came before the timer's date
    /// (armed early on purpose), waits out the rest without sleeping.
    func finishDeadlineWakeUp(_ plan: SleepPlan, _ state: inout LoopState) -> MonotonicTime? {
        let now = MonotonicTime.now()
        state.wakeLead.record(wokeAt: now, armed: plan.armed)
        guard let timerDate = plan.timerDate, now < timerDate else { return nil }
        return timerDate
    }

    /// Spins until `date` (at most ``WakeLead/maximumNanoseconds`` plus the measurement's error).
    func waitAwake(until date: MonotonicTime) {
        while MonotonicTime.now() < date {}
    }
}
