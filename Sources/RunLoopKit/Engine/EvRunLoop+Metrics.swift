extension EvRunLoop {
    /// The kinds of user code a loop calls out to on its own thread: what a stall report and
    /// ``Metrics/callouts`` name (each kind has its own trampoline, so a backtrace names it too).
    public enum CalloutKind: UInt8, Sendable, Hashable, CaseIterable, CustomStringConvertible {
        /// A timer's handler (R40).
        case timer = 1
        /// A version-0 source's perform handler (R33).
        case source
        /// A version-1 source's handler: a descriptor, a message port, a signal (R37, R38).
        case version1Source
        /// A perform-block, which is also how ``EvRunLoopExecutor`` runs jobs (R54).
        case block
        /// libdispatch's main-queue work, `@MainActor` jobs included (main loop only, R60).
        case mainQueue
        /// An observer's handler (R48).
        case observer
        /// The callbacks of libev libraries' watchers, run together as an ``EvLibevSource``'s
        /// version-1 callout (R38).
        case libevSource

        /// "timer", "source", "version-1 source", "block", "main-queue work", "observer" or
        /// "libev source".
        public var description: String {
            switch self {
            case .timer: "timer"
            case .source: "source"
            case .version1Source: "version-1 source"
            case .block: "block"
            case .mainQueue: "main-queue work"
            case .observer: "observer"
            case .libevSource: "libev source"
            }
        }
    }

    /// How many callouts of each kind a loop made.
    public struct CalloutCounts: Sendable, Hashable {
        /// Timer handlers.
        public var timers: UInt64 = 0
        /// Version-0 source performs.
        public var sources: UInt64 = 0
        /// Version-1 source handlers.
        public var version1Sources: UInt64 = 0
        /// Perform-blocks (executor jobs included).
        public var blocks: UInt64 = 0
        /// Drains of libdispatch's main queue (each may run several blocks).
        public var mainQueue: UInt64 = 0
        /// Observer handlers.
        public var observers: UInt64 = 0
        /// Batches of libev libraries' callbacks (``EvLibevSource``).
        public var libevSources: UInt64 = 0

        /// No callouts.
        public init() {}

        /// The count for `kind`.
        ///
        /// - Parameter kind: which callouts.
        /// - Returns: how many callouts of that kind were made.
        public subscript(kind: CalloutKind) -> UInt64 {
            switch kind {
            case .timer: timers
            case .source: sources
            case .version1Source: version1Sources
            case .block: blocks
            case .mainQueue: mainQueue
            case .observer: observers
            case .libevSource: libevSources
            }
        }

        /// All callouts, every kind together.
        public var total: UInt64 { timers &+ sources &+ version1Sources &+ blocks &+ mainQueue &+ observers &+ libevSources }
    }

    /// A snapshot of a loop's counters (libuv's `uv_metrics_info` and `uv_metrics_idle_time`):
    /// counts are always kept; the durations only while ``EvRunLoop/collectsTimingMetrics`` is on.
    ///
    /// Every field is exact as the loop's thread last wrote it, but fields are read one by one,
    /// so a snapshot taken while the loop runs can be a few events apart between fields.
    public struct Metrics: Sendable, Hashable {
        /// Iterations of all runs (R20), nested runs included.
        public var iterations: UInt64
        /// Times the loop went to sleep (R20 step 9; a polling iteration does not sleep).
        public var sleeps: UInt64
        /// Callouts made on the loop's thread, by kind (schedule and cancel callouts, which run
        /// on whichever thread adds or removes a source, are not counted).
        public var callouts: CalloutCounts
        /// Whether the timing fields below were being collected when the snapshot was taken.
        public var collectsTiming: Bool
        /// Time spent asleep in the libev layer (libuv's idle time), while timing was on.
        public var timeAsleep: Duration
        /// Time spent inside runs and awake, while timing was on: from a wake-up (or the start
        /// of the outermost run) to the next sleep (or its end). Time the thread spends outside
        /// any run is neither asleep nor awake here.
        public var timeAwake: Duration
        /// The longest single callout while timing was on (nested callouts count in their outer one).
        public var longestCallout: Duration
        /// The kind of ``longestCallout``; `nil` before any timed callout.
        public var longestCalloutKind: CalloutKind?
        /// Timer firings measured for lateness (while timing was on).
        public var timedTimerFirings: UInt64
        /// How late timers fired in total (callout start minus fire date), over ``timedTimerFirings``.
        public var totalTimerLateness: Duration
        /// The latest a timer fired after its fire date.
        public var maxTimerLateness: Duration

        /// The mean lateness of the timed timer firings; zero when there were none.
        public var averageTimerLateness: Duration {
            timedTimerFirings == 0 ? .zero : totalTimerLateness / Int(timedTimerFirings)
        }
    }

    /// This loop's counters now. Safe from any thread; costs a few loads, no lock.
    public var metrics: Metrics {
        let collectsTiming = recorder.timing.load(ordering: .relaxed)
        // Never timed: no record, every duration zero.
        let timings = recorder.timings.load()
        func nanoseconds(_ read: (LoopRecorder.Timings) -> Int64) -> Duration {
            .nanoseconds(timings.map(read) ?? 0)
        }
        return Metrics(
            iterations: recorder.iterations.load(ordering: .relaxed),
            sleeps: recorder.sleeps.load(ordering: .relaxed),
            callouts: calloutCounts,
            collectsTiming: collectsTiming,
            timeAsleep: nanoseconds { $0.asleepNanoseconds.load(ordering: .relaxed) },
            timeAwake: nanoseconds { $0.awakeNanoseconds.load(ordering: .relaxed) },
            longestCallout: nanoseconds { $0.longestCalloutNanoseconds.load(ordering: .relaxed) },
            longestCalloutKind: CalloutKind(rawValue: timings?.longestCalloutKind.load(ordering: .relaxed) ?? 0),
            timedTimerFirings: timings?.timedTimerFirings.load(ordering: .relaxed) ?? 0,
            totalTimerLateness: nanoseconds { $0.timerLatenessNanoseconds.load(ordering: .relaxed) },
            maxTimerLateness: nanoseconds { $0.maxTimerLatenessNanoseconds.load(ordering: .relaxed) })
    }

    private var calloutCounts: CalloutCounts {
        var counts = CalloutCounts()
        counts.timers = recorder.timerCallouts.load(ordering: .relaxed)
        counts.sources = recorder.sourceCallouts.load(ordering: .relaxed)
        counts.version1Sources = recorder.version1SourceCallouts.load(ordering: .relaxed)
        counts.blocks = recorder.blockCallouts.load(ordering: .relaxed)
        counts.mainQueue = recorder.mainQueueCallouts.load(ordering: .relaxed)
        counts.observers = recorder.observerCallouts.load(ordering: .relaxed)
        counts.libevSources = recorder.libevSourceCallouts.load(ordering: .relaxed)
        return counts
    }

    /// Whether the loop measures time: asleep and awake, the longest callout, timer lateness.
    ///
    /// Off by default: each measured event costs a clock read on the loop's thread (two per
    /// sleep, two per callout), which the counts alone never do. Turning it on takes effect from
    /// the loop's next event; stretches already under way when it was turned on are not counted.
    /// Safe from any thread.
    public var collectsTimingMetrics: Bool {
        get { recorder.timing.load(ordering: .relaxed) }
        set {
            if newValue {
                recorder.startTiming()
            } else {
                recorder.timing.store(false, ordering: .relaxed)
            }
        }
    }

    /// The kind of the innermost callout running on the loop's thread now, `nil` when the loop
    /// runs none (it is asleep, between callouts, or not running). Safe from any thread (a stall
    /// monitor reads it); from another thread the answer may already be stale.
    public var currentCallout: CalloutKind? {
        CalloutKind(rawValue: recorder.current.load(ordering: .relaxed))
    }
}
