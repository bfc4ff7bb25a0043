import Synchronization

/// What a loop's thread is running and how much it has run, for stall reports and
/// ``EvRunLoop/metrics``.
///
/// Only the loop's own thread writes (one writer), so each counter is bumped with a plain relaxed
/// load and store — no read-modify-write, no lock; on x86-64 both are ordinary moves. Other
/// threads only read, for a snapshot. The clock is read here only while
/// ``EvRunLoop/collectsTimingMetrics`` is on (libuv's `UV_METRICS_IDLE_TIME` is opt-in too).
struct LoopRecorder: ~Copyable {
    /// The ``EvRunLoop/CalloutKind`` raw value of the innermost callout running, 0 for none.
    let current = Atomic<UInt8>(0)
    let iterations = Atomic<UInt64>(0)
    let sleeps = Atomic<UInt64>(0)
    let timerCallouts = Atomic<UInt64>(0)
    let sourceCallouts = Atomic<UInt64>(0)
    let version1SourceCallouts = Atomic<UInt64>(0)
    let blockCallouts = Atomic<UInt64>(0)
    let mainQueueCallouts = Atomic<UInt64>(0)
    let observerCallouts = Atomic<UInt64>(0)
    let libevSourceCallouts = Atomic<UInt64>(0)

    /// Timing: on while ``EvRunLoop/collectsTimingMetrics`` is set.
    let timing = Atomic<Bool>(false)
    /// What timing measures, made the first time timing is turned on (``startTiming()``): a
    /// loop that is never timed carries none of it. Read only after ``timing`` was seen on, so
    /// the paths of an untimed loop do not look at it.
    let timings = AtomicLazyReference<Timings>()

    /// The durations timing measures; all zero until a timed event.
    final class Timings: Sendable {
        let asleepNanoseconds = Atomic<Int64>(0)
        let awakeNanoseconds = Atomic<Int64>(0)
        /// When the loop last woke (or its outermost run began) while timing; 0: not known.
        let awakeSince = Atomic<Int64>(0)
        let longestCalloutNanoseconds = Atomic<Int64>(0)
        let longestCalloutKind = Atomic<UInt8>(0)
        let timedTimerFirings = Atomic<UInt64>(0)
        let timerLatenessNanoseconds = Atomic<Int64>(0)
        let maxTimerLatenessNanoseconds = Atomic<Int64>(0)
    }

    /// Changes whenever code other than the engine's may have run on the loop's thread: at every
    /// iteration (code between two runs is followed by one) and every callout. Loop's thread.
    var userCodeStamp: UInt64 {
        iterations.load(ordering: .relaxed) &+ timerCallouts.load(ordering: .relaxed)
            &+ sourceCallouts.load(ordering: .relaxed) &+ version1SourceCallouts.load(ordering: .relaxed)
            &+ blockCallouts.load(ordering: .relaxed) &+ mainQueueCallouts.load(ordering: .relaxed)
            &+ observerCallouts.load(ordering: .relaxed) &+ libevSourceCallouts.load(ordering: .relaxed)
    }

    /// Turns timing on, making its record first. Any thread.
    func startTiming() {
        if timings.load() == nil { _ = timings.storeIfNil(Timings()) }
        timing.store(true, ordering: .relaxed)
    }

    /// The timing record while timing is on; `nil` when it is off (or, for an instant after it
    /// was first turned on from another thread, not yet visible here).
    @inline(__always)
    private var activeTimings: Timings? {
        timing.load(ordering: .relaxed) ? timings.load() : nil
    }

    /// What a callout's end needs from its start.
    struct CalloutEntry {
        let previous: UInt8
        let kind: EvRunLoop.CalloutKind
        /// Clock at the start; 0 when timing was off.
        let start: Int64
    }

    @inline(__always)
    func bump(_ counter: borrowing Atomic<UInt64>) {
        counter.store(counter.load(ordering: .relaxed) &+ 1, ordering: .relaxed)
    }

    @inline(__always)
    func add(_ nanoseconds: Int64, to total: borrowing Atomic<Int64>) {
        total.store(total.load(ordering: .relaxed) &+ nanoseconds, ordering: .relaxed)
    }

    /// A callout of `kind` begins on the loop's thread.
    @inline(__always)
    func enter(_ kind: EvRunLoop.CalloutKind) -> CalloutEntry {
        let previous = current.load(ordering: .relaxed)
        current.store(kind.rawValue, ordering: .relaxed)
        switch kind {
        case .timer: bump(timerCallouts)
        case .source: bump(sourceCallouts)
        case .version1Source: bump(version1SourceCallouts)
        case .block: bump(blockCallouts)
        case .mainQueue: bump(mainQueueCallouts)
        case .observer: bump(observerCallouts)
        case .libevSource: bump(libevSourceCallouts)
        }
        let start = timing.load(ordering: .relaxed) ? MonotonicTime.now().nanoseconds : 0
        return CalloutEntry(previous: previous, kind: kind, start: start)
    }

    /// The callout begun with `entry` has returned.
    @inline(__always)
    func leave(_ entry: CalloutEntry) {
        if entry.start != 0, let timings = timings.load() {
            let duration = MonotonicTime.now().nanoseconds &- entry.start
            if duration > timings.longestCalloutNanoseconds.load(ordering: .relaxed) {
                timings.longestCalloutNanoseconds.store(duration, ordering: .relaxed)
                timings.longestCalloutKind.store(entry.kind.rawValue, ordering: .relaxed)
            }
        }
        current.store(entry.previous, ordering: .relaxed)
    }

    /// The outermost run begins (timing only: reads the clock).
    @inline(__always)
    func outermostRunBegins() {
        if let timings = activeTimings { timings.awakeSince.store(MonotonicTime.now().nanoseconds, ordering: .relaxed) }
    }

    /// The outermost run ends: its last awake stretch counts.
    @inline(__always)
    func outermostRunEnds() {
        guard let timings = activeTimings else { return }
        let since = timings.awakeSince.load(ordering: .relaxed)
        if since != 0 { add(MonotonicTime.now().nanoseconds &- since, to: timings.awakeNanoseconds) }
        timings.awakeSince.store(0, ordering: .relaxed)
    }

    /// The loop is about to sleep (R20 step 9); returns the clock when timing, else 0.
    @inline(__always)
    func sleepBegins() -> Int64 {
        bump(sleeps)
        guard let timings = activeTimings else { return 0 }
        let now = MonotonicTime.now().nanoseconds
        let since = timings.awakeSince.load(ordering: .relaxed)
        if since != 0 { add(now &- since, to: timings.awakeNanoseconds) }
        return now
    }

    /// The sleep begun at `start` (from ``sleepBegins()``) has ended.
    @inline(__always)
    func sleepEnds(_ start: Int64) {
        guard start != 0, let timings = timings.load() else { return }
        let now = MonotonicTime.now().nanoseconds
        add(now &- start, to: timings.asleepNanoseconds)
        timings.awakeSince.store(now, ordering: .relaxed)
    }

    /// A timer due at `fireDate` is about to be called out (timing only: reads the clock).
    @inline(__always)
    func timerFires(due fireDate: MonotonicTime) {
        guard let timings = activeTimings else { return }
        let lateness = max(MonotonicTime.now().nanoseconds &- fireDate.nanoseconds, 0)
        bump(timings.timedTimerFirings)
        add(lateness, to: timings.timerLatenessNanoseconds)
        if lateness > timings.maxTimerLatenessNanoseconds.load(ordering: .relaxed) {
            timings.maxTimerLatenessNanoseconds.store(lateness, ordering: .relaxed)
        }
    }
}
