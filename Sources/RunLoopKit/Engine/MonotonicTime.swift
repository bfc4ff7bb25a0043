#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Internal time: nanoseconds of `CLOCK_MONOTONIC`, the clock the libev layer's timerfd uses.
///
/// Public API speaks `ContinuousClock.Instant` and `Duration`; they are converted here once,
/// at the boundary, so the engine compares plain integers.
struct MonotonicTime: Comparable, Hashable, Sendable {
    var nanoseconds: Int64

    /// The latest representable time: "no deadline" (R26).
    static let distantFuture = MonotonicTime(nanoseconds: .max)

    @inline(__always)
    static func now() -> MonotonicTime {
        var ts = timespec()
        // Unprotected: a fixed-size buffer the kernel fills; a stack-protector check would
        // otherwise land in every function this is inlined into, the run's pass among them.
        _withUnprotectedUnsafeMutablePointer(to: &ts) { _ = clock_gettime(CLOCK_MONOTONIC, $0) }
        return MonotonicTime(nanoseconds: Int64(ts.tv_sec) &* 1_000_000_000 &+ Int64(ts.tv_nsec))
    }

    static func < (lhs: MonotonicTime, rhs: MonotonicTime) -> Bool { lhs.nanoseconds < rhs.nanoseconds }

    /// `self + duration`, saturating at ``distantFuture`` instead of overflowing (R26, R47).
    func adding(_ duration: Duration) -> MonotonicTime {
        let (sum, overflow) = nanoseconds.addingReportingOverflow(duration.saturatingNanoseconds)
        if overflow { return duration < .zero ? MonotonicTime(nanoseconds: .min) : .distantFuture }
        return MonotonicTime(nanoseconds: sum)
    }

    func adding(nanoseconds delta: Int64) -> MonotonicTime {
        let (sum, overflow) = nanoseconds.addingReportingOverflow(delta)
        return overflow ? (delta < 0 ? MonotonicTime(nanoseconds: .min) : .distantFuture) : MonotonicTime(nanoseconds: sum)
    }

    // One pair of readings taken together maps ContinuousClock instants to this clock: the
    // instant between two readings of this clock, from the closest of a few tries, so that a
    // thread preempted between two readings cannot shift every converted date.
    private static let reference: (instant: ContinuousClock.Instant, time: MonotonicTime) = {
        var best: (instant: ContinuousClock.Instant, time: MonotonicTime, window: Int64)?
        for _ in 0..<8 {
            let before = MonotonicTime.now()
            let instant = ContinuousClock.now
            let after = MonotonicTime.now()
            let window = after.nanoseconds &- before.nanoseconds
            if best.map({ window < $0.window }) ?? true {
                best = (instant, MonotonicTime(nanoseconds: before.nanoseconds &+ window / 2), window)
            }
        }
        return (best!.instant, best!.time)
    }()

    init(nanoseconds: Int64) { self.nanoseconds = nanoseconds }

    init(_ instant: ContinuousClock.Instant) {
        let reference = Self.reference
        self = reference.time.adding(reference.instant.duration(to: instant))
    }

    var instant: ContinuousClock.Instant {
        let reference = Self.reference
        return reference.instant.advanced(by: .nanoseconds(nanoseconds &- reference.time.nanoseconds))
    }
}

extension Duration {
    /// Whole nanoseconds (truncated toward zero), saturating at `Int64.min`/`Int64.max` for
    /// durations beyond ±292 years.
    var saturatingNanoseconds: Int64 {
        // One 128-bit division; `components` would divide and multiply twice as much.
        let nanoseconds = attoseconds / 1_000_000_000
        if nanoseconds > Int128(Int64.max) { return .max }
        if nanoseconds < Int128(Int64.min) { return .min }
        return Int64(nanoseconds)
    }
}
