/// How early a precise timer's deadline is armed (``EvRunLoop/TimerPrecision/precise``).
///
/// On a virtual machine a timer wakes a sleeping thread tens of microseconds late (the host must
/// deliver the timer interrupt to a halted virtual CPU). A loop with precise timers measures how
/// late its deadline wake-ups are and arms a timer's deadline that much early (never more than
/// ``maximumNanoseconds``), then waits out the remainder awake: timers fire within a few
/// microseconds of their date, and still never before it (R46), for up to that much CPU per fire.
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
