import CLibev
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The loop's single deadline, held by its timerfd (see ``EvBackend``).
extension EvBackend {
    /// Arms the deadline (absolute, `CLOCK_MONOTONIC`); ``MonotonicTime/distantFuture`` disarms it.
    /// A deadline the timerfd already holds costs no system call. If the timerfd refuses, the
    /// loop's next wait stands in for it with an `ev_timer`, so no wait sleeps past `deadline`.
    func setDeadline(_ deadline: MonotonicTime) {
        guard !destroyed else { return }
        // The loop's own sleeps ask for the same deadline again and again (no timer: always
        // distantFuture): then the lock is not taken either. Relaxed is enough: callers are
        // serialised by EvRunLoop's lock, so each sees what the one before stored; the only
        // store outside that lock is the loop's thread marking the timerfd disarmed once it
        // expired and was read (or the fallback's), and a caller on another thread never asks
        // for the date already asked for (EvRunLoop re-arms from other threads only for an
        // earlier one, R44), while the loop's thread sees its own store.
        if deadline.nanoseconds != DeadlineState.unsettled && settled.load(ordering: .relaxed) == deadline.nanoseconds { return }
        let armed = self.deadline.withLock { state in
            state.requested = deadline
            return arm(deadline, &state)
        }
        // A loop blocked on its wake-up word planned that sleep for the deadline before: it must
        // come back and plan again.
        guard !armed else { return wake.deadlineSet() }
        // A request bit: the loop (asleep or about to sleep) does not block, takes it, and stands
        // in for the timerfd before its next wait. From the loop's own thread it is taken before
        // any sleep too (``WakeSignal/beginSleep(onWord:)`` sees it).
        wake.request(WakeSignal.deadlineChanged)
    }

    /// Sets the timerfd to `deadline` unless it holds it already (caller holds `deadline`'s
    /// lock and passes its state). Returns false when `timerfd_settime` failed; what the timerfd
    /// holds is then unknown, so the next call sets it whatever it asks for. Returns false too
    /// for a first finite deadline, before the timerfd is made: only the loop's thread makes it
    /// and gives it to libev (``armFallbackIfNeeded()``).
    func arm(_ deadline: MonotonicTime, _ state: inout DeadlineState) -> Bool {
        defer { settled.store(state.settled, ordering: .relaxed) }
        if state.armed == deadline { return true }  // also "no timerfd yet" for distantFuture
        guard state.timerFD >= 0 else { return false }
        var spec = itimerspec()
        if deadline != .distantFuture {
            let ns = max(deadline.nanoseconds, 1)  // zero would disarm; the past fires at once
            spec.it_value.tv_sec = Int(ns / 1_000_000_000)
            spec.it_value.tv_nsec = Int(ns % 1_000_000_000)
        }
        let armed = retryingEINTR { timerfd_settime(state.timerFD, Int32(TFD_TIMER_ABSTIME), &spec, nil) } == 0
        state.armed = armed ? deadline : nil
        return armed
    }
}

/// The deadline as ``EvBackend/setDeadline(_:)`` asked for it and as the timerfd holds it, under
/// ``EvBackend/deadline``'s lock (any thread may arm, R44, C75).
struct DeadlineState {
    /// The deadline last asked for.
    var requested: MonotonicTime = .distantFuture
    /// What the timerfd holds: ``MonotonicTime/distantFuture`` when disarmed (as made, or after
    /// it expired and was read: it is one-shot), `nil` when unknown (`timerfd_settime` failed).
    /// An expired timerfd not read yet still holds its date: it is readable, as it would be
    /// if armed again for that date. No timerfd yet counts as disarmed.
    var armed: MonotonicTime? = .distantFuture
    /// The timerfd, or -1 until the first finite deadline made it (see
    /// ``EvBackend/makeTimerDescriptor(_:)``).
    var timerFD: Int32 = -1

    /// ``settled`` when the timerfd does not hold what was asked for (or that is unknown). A
    /// request for this date itself (the far past, saturated) always takes the lock.
    static let unsettled = Int64.min

    /// The deadline in nanoseconds when the timerfd holds exactly what was last asked for, else
    /// ``unsettled``.
    var settled: Int64 { armed == requested ? requested.nanoseconds : Self.unsettled }
}
