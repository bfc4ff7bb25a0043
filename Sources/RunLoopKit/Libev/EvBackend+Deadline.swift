import CLibev
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The loop's one deadline, held by its timerfd, which libev watches.
///
/// Why a timerfd and not an `ev_timer`: libev's epoll backend waits in whole milliseconds,
/// rounding every timeout up, so a timer would fire up to a millisecond late; the timerfd wakes
/// `epoll_wait` at its date, and any thread can re-arm it (R44) without waking the loop. Its
/// price is one system call per fire that libev does not make: reading a repeating timerfd
/// (so that epoll stops reporting it), or re-arming a one-shot one for the next deadline.
/// It is made when the first sleep with a deadline is planned: libev sizes a loop's descriptor
/// table by the highest number it watches, so a loop that never needs it watches one
/// descriptor fewer.
extension EvBackend {
    /// Awake → planned (loop's thread, loop's lock held): the next ``sleep()`` ends by
    /// `planned`'s date. The timerfd is set only when it does not hold that setting already.
    @inline(__always)
    func planSleep(_ planned: SleepDeadline) {
        wake.plan()
        // No lock: the loop's lock, held here, keeps other threads off the deadline.
        // Most sleeps ask what the last one did, still armed: inline, that costs a few compares.
        if !planned.precise && !deadlineExpiredUnread && planned == deadline.requested
            && deadline.armed == KernelTimerSetting(date: planned.date, interval: planned.interval)
        {
            sleepMayBePrecise.store(false, ordering: .releasing)
            return
        }
        planChangedSleep(planned)
    }

    /// ``planSleep(_:)`` for a deadline that differs from the last plan, or is not armed yet.
    @inline(never)
    private func planChangedSleep(_ planned: SleepDeadline) {
        if deadlineExpiredUnread { readExpiredDeadline(&deadline) }
        deadline.requested = planned
        sleepMayBePrecise.store(planned.precise, ordering: .releasing)
        if planned.date != .distantFuture && deadline.timerFD < 0 { makeTimerDescriptor(&deadline) }
        if !arm(deadline.target, &deadline) { deadlineUnarmed = true }
    }

    /// `body` with the deadline, under ``deadlineLock`` (see ``deadline``).
    func withDeadline<Result>(_ body: (inout DeadlineState) -> Result) -> Result {
        deadlineLock.withLock { _ in body(&deadline) }
    }

    /// R44 (any thread, loop's lock held): a timer of the running mode is now due before the
    /// planned deadline. The timerfd is re-armed from here, and the sleeping loop sleeps on to
    /// the new date without waking; only a loop whose timerfd is not made yet, or cannot be
    /// armed from here, is woken to do it itself.
    func bringDeadlineForward(to deadline: SleepDeadline) {
        movePlannedDeadline(to: deadline) { $0 < $1 }
    }

    /// The other half of R44 (any thread, loop's lock held): the timer the planned deadline was
    /// for left the running mode, and the mode's next timer or the run's timeout comes later. The
    /// timerfd is re-armed from here, so the loop does not wake for a timer that is gone.
    func pushDeadlineBack(to deadline: SleepDeadline) {
        movePlannedDeadline(to: deadline) { $0 > $1 }
    }

    /// Moves a planned or sleeping wait's deadline to `deadline` when `replaces(its date, the
    /// planned one)`. A precise timer's date is armed early here too, and the loop waits out the rest.
    @inline(__always)
    private func movePlannedDeadline(to deadline: SleepDeadline, when replaces: (MonotonicTime, MonotonicTime) -> Bool) {
        guard !destroyed, wake.isPlanned else { return }
        let armed: Bool? = withDeadline { state in
            guard replaces(deadline.date, state.requested.date) else { return nil }
            state.requested = deadline
            if deadline.precise { sleepMayBePrecise.store(true, ordering: .releasing) }
            return state.timerFD >= 0 && arm(state.target, &state)
        }
        if armed == false { wake.request(WakeSignal.deadlineNeedsLoop) }
    }

    var isSleepPlanned: Bool { wake.isPlanned }

    /// The loop's thread, asked by ``bringDeadlineForward(to:)``: arms the deadline asked for,
    /// making the timerfd if needed; the fallback timer holds it if that fails.
    @inline(never)
    func armRequestedDeadline() {
        let armed = withDeadline { state in
            if state.timerFD < 0 && state.requested.date != .distantFuture { makeTimerDescriptor(&state) }
            return arm(state.target, &state)
        }
        if !armed { deadlineUnarmed = true }
    }

    /// Sets the timerfd to `target` unless it holds it already (see ``deadline`` for the locks).
    /// Returns false when that cannot be done: no timerfd for a finite date, or
    /// `timerfd_settime` failed (what it holds is then unknown, so the next call sets it).
    @inline(__always)
    func arm(_ target: KernelTimerSetting, _ state: inout DeadlineState) -> Bool {
        state.armed == target || setTimer(target, &state)  // equal also when no timerfd and no deadline
    }

    @inline(never)
    private func setTimer(_ target: KernelTimerSetting, _ state: inout DeadlineState) -> Bool {
        guard state.timerFD >= 0 else { return false }
        var spec = itimerspec()
        if target.date != .distantFuture {
            let ns = max(target.date.nanoseconds, 1)  // zero would disarm; the past fires at once
            spec.it_value.tv_sec = Int(ns / 1_000_000_000)
            spec.it_value.tv_nsec = Int(ns % 1_000_000_000)
            spec.it_interval.tv_sec = Int(target.interval / 1_000_000_000)
            spec.it_interval.tv_nsec = Int(target.interval % 1_000_000_000)
        }
        // Setting a timerfd also clears an expiry not read yet: it is readable no more.
        let armed = retryingEINTR { timerfd_settime(state.timerFD, Int32(TFD_TIMER_ABSTIME), &spec, nil) } == 0
        state.armed = armed ? target : nil
        return armed
    }

    /// Makes the timerfd and has libev watch it (loop's thread; see ``deadline``). If the
    /// process has no descriptor left (or the kernel refuses), it stays unmade: the fallback
    /// timer holds this deadline, and the next one tries again.
    @inline(never)
    func makeTimerDescriptor(_ state: inout DeadlineState) {
        let fd = retryingEINTR { timerfd_create(CLOCK_MONOTONIC, Int32(TFD_NONBLOCK | TFD_CLOEXEC)) }
        guard fd >= 0 else { return }
        InternalDescriptors.insert(fd)
        state.timerFD = fd
        state.armed = .disarmed
        // Made once: the timerfd stays until the loop is destroyed.
        let watcher = UnsafeMutablePointer<ev_io>.allocate(capacity: 1)
        clibev_io_init(watcher, { loop, watcher, revents in
            guard let loop, let watcher else { return }
            // The failure apart, as the wake-up watcher's: the common path then saves no registers.
            if revents & EvBackend.failed != 0 { return EvBackend.with(loop) { $0.internalWatcherFailed(watcher) } }
            EvBackend.with(loop) { backend in
                // Read before the next plan, not here (see readExpiredDeadline(_:)).
                backend.deadlineExpiredUnread = true
                backend.reasons.pointee |= WakeReasons.deadline.rawValue
            }
        }, fd, Int32(EV_READ))
        deadlineWatcher = watcher
        startInternalWatcher(watcher, call: "EvRunLoop.run(mode:timeout:returnAfterSourceHandled:)")
    }

    /// Reads the timerfd that went off (see ``DeadlineState/expired(reading:)``): before the
    /// next plan arms it, or a poll enters `ev_run`, and not as the wake-up returns from libev,
    /// so that the timers it woke the loop for fire one system call sooner. Until then libev is
    /// not entered to wait, and a timerfd set again meanwhile holds no old expiry (the read
    /// then finds none, and changes nothing).
    @inline(never)
    func readExpiredDeadline(_ state: inout DeadlineState) {
        deadlineExpiredUnread = false
        guard let fd = deadlineWatcher?.pointee.fd else { return }
        state.expired(reading: fd)
    }

    /// After a wake-up that the deadline of a precise timer's sleep ended: learns how late it
    /// came and, the deadline being armed early on purpose, waits out the rest awake (see
    /// ``WakeLead``).
    @inline(never)
    func finishDeadlineWakeUp() {
        let now = MonotonicTime.now()
        let waitUntil: MonotonicTime? = withDeadline { state in
            guard state.requested.precise else { return nil }
            state.wakeLead.record(wokeAt: now, armed: state.target.date)
            return now < state.requested.date ? state.requested.date : nil
        }
        if let waitUntil {
            while MonotonicTime.now() < waitUntil {}
        }
    }
}

/// What a timerfd holds: its next expiry and its repeat interval (0: one-shot).
struct KernelTimerSetting: Equatable {
    var date: MonotonicTime
    var interval: Int64
    /// Disarmed: no expiry (as made, or a one-shot one that expired and was read or re-set).
    static let disarmed = KernelTimerSetting(date: .distantFuture, interval: 0)
}

/// The deadline asked for and what the timerfd holds (any thread may move it, R44; see
/// ``EvBackend/deadline``). The one copy of the deadline, besides the kernel's.
struct DeadlineState {
    /// What the planned sleep asked for, or what another thread moved it to (R44).
    var requested = SleepDeadline.none
    /// What the timerfd holds; `nil` when unknown (`timerfd_settime` failed). A one-shot
    /// expiry not read yet keeps its date: the timerfd is readable, as it would be if armed
    /// again for that date. No timerfd yet counts as disarmed.
    var armed: KernelTimerSetting? = .disarmed
    /// The timerfd, or -1 until the first finite deadline made it.
    var timerFD: Int32 = -1
    /// How early a precise timer's deadline is armed.
    var wakeLead = WakeLead()

    /// The kernel setting for ``requested``: a precise timer's date less the lead.
    var target: KernelTimerSetting {
        let lead = requested.precise ? wakeLead.nanoseconds : 0
        return KernelTimerSetting(date: requested.date.adding(nanoseconds: -lead), interval: requested.interval)
    }

    /// The timerfd `fd` went off. A repeating one is read, so that epoll stops reporting it, and
    /// moves on by the periods that passed; a one-shot one is left readable until it is set for
    /// the next deadline, which clears it (one system call either way).
    mutating func expired(reading fd: Int32) {
        guard let setting = armed, setting.interval > 0 else { return }
        var expirations: UInt64 = 0
        // Unprotected: eight bytes read into an eight-byte buffer, once per periodic fire.
        let result = retryingEINTR { _withUnprotectedUnsafeMutablePointer(to: &expirations) { Int32(read(fd, $0, 8)) } }
        // A failed read leaves it readable and the setting as it was: the next wait looks again.
        guard result == 8 else { return }
        let (advance, overflow) = Int64(clamping: expirations).multipliedReportingOverflow(by: setting.interval)
        armed = overflow ? nil : KernelTimerSetting(date: setting.date.adding(nanoseconds: advance), interval: setting.interval)
    }
}
