extension EvRunLoop {
    /// How a loop sleeps until a timer's date (R46).
    public enum TimerPrecision: Sendable, Hashable {
        /// The kernel wakes the loop at the timer's date, as CF's and SwiftNIO's loops are woken:
        /// a timer fires as late as the machine wakes a sleeping thread (a few to tens of
        /// microseconds), and costs no CPU while it waits.
        case standard
        /// The loop measures how late its deadline wake-ups come, arms a timer's deadline that
        /// much early (at most 50 µs), and waits out the rest awake: timers fire within a few
        /// microseconds of their date, for up to 50 µs of CPU per fire.
        case precise
    }

    /// How this loop sleeps until its timers' dates; ``TimerPrecision/standard`` unless set.
    /// Never before a timer's date either way (R46). Safe from any thread; the next sleep uses it.
    public var timerPrecision: TimerPrecision {
        get { preciseTimers.load(ordering: .relaxed) ? .precise : .standard }
        set { preciseTimers.store(newValue == .precise, ordering: .relaxed) }
    }
}
