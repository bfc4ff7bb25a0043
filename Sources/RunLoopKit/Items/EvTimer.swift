import Synchronization

/// A timer on a run loop (CF: `CFRunLoopTimer`).
///
/// A timer has a fire date, an interval (zero for a one-shot timer), a tolerance and an order.
/// It belongs to at most one run loop at a time but may be in several of that loop's modes
/// (R39); it fires only while one of them runs (R40, R41). Create it on any thread, add it with
/// ``EvRunLoop/add(_:forMode:)-(EvTimer,_)``; the handler runs on the loop's thread.
///
/// Rules: all due timers of the running mode fire in one step, in fire-date order (R40); a
/// timer whose mode was not running fires once, however many intervals it missed (R41); a
/// repeating timer then moves to the next slot of its grid strictly after now (R42); a one-shot
/// timer is invalidated after its handler (R43); a timer never fires while its own handler runs
/// (R59) and never before its fire date (R46).
///
/// Foundation's `Timer.scheduledTimer` in one call, made and added on the loop's thread with a
/// handler that need not be `@Sendable`: ``EvRunLoop/addTimer(after:interval:tolerance:forMode:_:)``.
public final class EvTimer: Sendable {
    /// CF's `TIMER_INTERVAL_LIMIT`: longer intervals are capped to it (R47).
    public static let intervalLimit: Duration = .seconds(504_911_232)

    // What adding and cancelling touch comes first, next to the object's header, so that they
    // touch as few of the timer's cache lines as they can (at a million timers, each is a miss).
    let state: Locked<TimerState>
    /// Heap entries carry the generation they were pushed with; any change of fire date or
    /// membership bumps it, which makes every older entry stale (lazy deletion, see TimerHeap).
    /// Atomic because stale entries of a loop the timer has left are still read by that loop.
    let heapGeneration = Atomic<UInt64>(0)
    /// True while the handler runs (R59).
    let firing = Atomic<Bool>(false)
    /// ``interval`` in nanoseconds, for the engine's integer arithmetic.
    let intervalNanoseconds: Int64
    /// The time between fires; `.zero` for a one-shot timer.
    public let interval: Duration
    /// Where this timer sorts among others (kept for CF parity; fire dates decide the order).
    public let order: Int
    let handler: @Sendable (EvTimer) -> Void

    /// Makes every heap entry of this timer stale.
    func invalidateHeapEntries() { heapGeneration.wrappingAdd(1, ordering: .relaxed) }

    var isFiring: Bool {
        get { firing.load(ordering: .relaxed) }
        set { firing.store(newValue, ordering: .relaxed) }
    }

    /// A timer that first fires at `fireAt`.
    ///
    /// - Parameters:
    ///   - fireAt: the first fire date.
    ///   - interval: the time between fires; `.zero` (the default) makes a one-shot timer.
    ///     Intervals over ``intervalLimit`` are capped to it, and one under a nanosecond is a
    ///     nanosecond (R47).
    ///   - tolerance: how late the loop may fire the timer to wake less often (R46).
    ///   - order: kept for CF parity.
    ///   - handler: runs on the loop's thread each time the timer fires.
    /// - Precondition: `interval` and `tolerance` are not negative.
    public init(
        fireAt: ContinuousClock.Instant, interval: Duration = .zero, tolerance: Duration = .zero,
        order: Int = 0, handler: @escaping @Sendable (EvTimer) -> Void
    ) {
        require(interval >= .zero, "EvTimer.init: interval must not be negative (got \(interval))")
        require(tolerance >= .zero, "EvTimer.init: tolerance must not be negative (got \(tolerance))")
        // Kept to the nanosecond: a repeating interval under one is one, not zero (a one-shot).
        self.interval = interval > .zero ? max(min(interval, Self.intervalLimit), .nanoseconds(1)) : .zero
        intervalNanoseconds = self.interval.saturatingNanoseconds
        self.order = order
        self.handler = handler
        state = Locked(TimerState(fireDate: MonotonicTime(fireAt), toleranceNanoseconds: tolerance.saturatingNanoseconds))
    }

    /// A timer that first fires `delay` from now.
    ///
    /// - Precondition: `delay`, `interval` and `tolerance` are not negative.
    public convenience init(
        after delay: Duration, interval: Duration = .zero, tolerance: Duration = .zero,
        order: Int = 0, handler: @escaping @Sendable (EvTimer) -> Void
    ) {
        require(delay >= .zero, "EvTimer.init(after:): delay must not be negative (got \(delay))")
        self.init(fireAt: .now.advanced(by: delay), interval: interval, tolerance: tolerance, order: order, handler: handler)
    }

    /// A timer that first fires `interval` from now and, if `repeats`, every `interval` after
    /// that (Foundation's `Timer(timeInterval:repeats:block:)`, the interval's one-shot spelling).
    /// A one-shot timer's ``interval`` is zero, as Foundation's `timeInterval` is then.
    ///
    /// - Parameters:
    ///   - interval: the delay before the first fire and, for a repeating timer, between fires.
    ///   - repeats: `false` for a timer that fires once.
    ///   - tolerance: how late the loop may fire the timer to wake less often (R46).
    ///   - order: kept for CF parity.
    ///   - handler: runs on the loop's thread each time the timer fires.
    /// - Precondition: `interval` and `tolerance` are not negative, and a repeating timer's
    ///   interval is not zero (it would fire at every pass).
    public convenience init(
        interval: Duration, repeats: Bool, tolerance: Duration = .zero, order: Int = 0,
        handler: @escaping @Sendable (EvTimer) -> Void
    ) {
        require(interval >= .zero, "EvTimer.init(interval:repeats:): interval must not be negative (got \(interval))")
        require(!repeats || interval > .zero, "EvTimer.init(interval:repeats:): a repeating timer needs an interval greater than zero")
        self.init(after: interval, interval: repeats ? interval : .zero, tolerance: tolerance, order: order, handler: handler)
    }

    /// Whether the timer fires more than once (its interval is not zero).
    public var repeats: Bool { intervalNanoseconds > 0 }

    /// False once the timer was invalidated, explicitly or after a one-shot fire (R43, R45).
    public var isValid: Bool { state.withLock { $0.isValid } }

    /// The next time the timer fires.
    ///
    /// Setting it from any thread re-arms the loop's wait (R44); from a thread other than the
    /// loop's it also wakes the loop, which then makes one more pass (C75, C80). A date set while
    /// the handler runs always wins over the regular schedule (R42), whatever it is: a date in the
    /// past makes the timer fire again in the next timers step (C80).
    public var fireDate: ContinuousClock.Instant {
        get { state.withLock { $0.fireDate }.instant }
        set { setFireDate(MonotonicTime(newValue)) }
    }

    /// How late the loop may fire this timer to coalesce wake-ups (R46). Not negative; kept to
    /// the nanosecond. Setting it from any thread counts from the timer's next wake-up on: a
    /// sleep planned for the old tolerance is brought forward (R44).
    public var tolerance: Duration {
        get { .nanoseconds(state.withLock { $0.toleranceNanoseconds }) }
        set {
            require(newValue >= .zero, "EvTimer.tolerance: must not be negative (got \(newValue))")
            let nanoseconds = newValue.saturatingNanoseconds
            withItemAndLoopLocked(
                state,
                bound: { loop, loopState, timer in
                    timer.toleranceNanoseconds = nanoseconds
                    // Its heap entries carry the latest date it may fire at: pushed again.
                    if timer.isValid { loop.reschedule(self, &timer, &loopState) }
                },
                unbound: { $0.toleranceNanoseconds = nanoseconds })
        }
    }

    /// Runs the handler at once, on the calling thread, without moving the timer's schedule; a
    /// timer that does not repeat is then invalidated (Foundation's `fire()`, C125). Does nothing
    /// on an invalidated timer.
    ///
    /// - Thread: any for a timer made with a `@Sendable` handler; a timer made with
    ///   ``EvRunLoop/addTimer(after:interval:tolerance:forMode:_:)`` only on its loop's thread.
    public func fire() {
        guard isValid else { return }
        handler(self)
        if !repeats { invalidate() }
    }

    /// Stops the timer for good: it is removed from every mode and never fires again (R45).
    /// Safe from any thread, including from its own handler.
    public func invalidate() {
        // The common case, a timer cancelled on its own loop's thread: that loop is alive while
        // its thread runs, so it needs no retain, and the timer's lock is taken once.
        if let current = ThreadRegistry.existingLoopUnretained(),
            current._withUnsafeGuaranteedRef({ invalidate(boundTo: $0) }) { return }
        withItemAndLoopLocked(
            state,
            bound: { loop, loopState, timer in
                loop.detachEverywhere(self, &loopState, &timer)
                timer.isValid = false
            },
            unbound: { $0.isValid = false })
    }

    /// Invalidates the timer if it is scheduled in `loop`; false (and nothing done) if it is not.
    private func invalidate(boundTo loop: EvRunLoop) -> Bool {
        loop.state.withLock { loopState in
            state.withLock { timer in
                guard timer.loop === loop else { return false }
                loop.detachEverywhere(self, &loopState, &timer)
                timer.isValid = false
                return true
            }
        }
    }

    /// Sets the fire date if the timer is scheduled in `loop`; false (and nothing done) if it is not.
    private func setFireDate(_ date: MonotonicTime, boundTo loop: EvRunLoop) -> Bool {
        loop.state.withLock { loopState in
            state.withLock { timer in
                guard timer.loop === loop else { return false }
                guard timer.isValid else { return true }
                timer.fireDate = date
                timer.rescheduled = true
                loop.reschedule(self, &timer, &loopState)
                return true
            }
        }
    }

    private func setFireDate(_ date: MonotonicTime) {
        // On the loop's own thread (the common case: a handler or the loop's code re-dating its
        // timer), the loop needs no retain, the timer's lock is taken once and no wake-up is due.
        if let current = ThreadRegistry.existingLoopUnretained(),
            current._withUnsafeGuaranteedRef({ setFireDate(date, boundTo: $0) }) { return }
        let loop: EvRunLoop? = withItemAndLoopLocked(
            state,
            bound: { loop, loopState, timer in
                guard timer.isValid else { return nil }
                timer.fireDate = date
                timer.rescheduled = true
                loop.reschedule(self, &timer, &loopState)
                return loop
            },
            unbound: { timer in
                if timer.isValid { timer.fireDate = date }
                return nil
            })
        if let loop, ThreadRegistry.existingLoop() !== loop { loop.wakeUp() }  // C75, C80
    }
}

/// A timer's mutable part, guarded by ``EvTimer/state``.
struct TimerState: ItemMembership, Sendable {
    var fireDate: MonotonicTime
    var toleranceNanoseconds: Int64
    var isValid = true
    /// Set when the fire date is assigned; lets the fire step see a change made in the handler (R44).
    var rescheduled = false
    var loop: EvRunLoop?
    var modes = ModeList()

    /// The latest the loop may fire the timer: its fire date plus its tolerance (R46).
    var latestFireDate: MonotonicTime { fireDate.adding(nanoseconds: toleranceNanoseconds) }
}
