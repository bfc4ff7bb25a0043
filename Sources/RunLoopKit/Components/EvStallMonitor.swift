import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Why an ``EvStallMonitor`` could not start.
public enum EvStallMonitorError: Error, Sendable, Equatable, CustomStringConvertible {
    /// ``EvStallMonitor/start()`` was called twice.
    case alreadyStarted
    /// The monitor was stopped; a monitor is not restarted — make a new one.
    case stopped
    /// The monitored loop's thread has exited (R4).
    case loopExited
    /// The watchdog thread could not be created (`errno` of `pthread_create`).
    case threadCreationFailed(errno: Int32)

    /// A message naming the call that failed and why.
    public var description: String {
        switch self {
        case .alreadyStarted: "EvStallMonitor.start(): the monitor is already running"
        case .stopped: "EvStallMonitor.start(): the monitor was stopped; create a new one"
        case .loopExited: "EvStallMonitor.start(): the run loop's thread has exited"
        case .threadCreationFailed(let errno): "EvStallMonitor.start(): pthread_create failed (errno \(errno))"
        }
    }
}

/// A stall ("卡顿") monitor for a run loop: reports when the loop stays too long
/// in one phase of an iteration.
///
/// An observer (order `Int.min`, in ``Configuration/modes``, typically the common modes of the
/// main loop) records each phase the loop enters and when; a watchdog thread looks at it. The
/// time after BeforeSources is spent in perform-blocks and version-0 sources (R20 steps 3–5), the
/// time after AfterWaiting in timers, version-1 sources and the main queue (R20 steps 11–12), and
/// every phase begins with its observers: when the loop stays in one phase for
/// ``Configuration/threshold`` ``Configuration/consecutiveThresholds`` times in a row (80 ms × 3
/// by default, the usual choice of CF stall monitors) without entering another, one ``Report`` is
/// made for that phase — with the loop, the mode, the phase, the callout it runs, how long so far
/// and, where the platform allows, a backtrace of the stalled thread (see ``EvStallBacktrace``).
/// A loop asleep (after BeforeWaiting's observers) or outside every run (after Exit's) is idle,
/// not stalled; libev libraries' prepare and fork callbacks, which run inside the wait (see
/// ``EvLibevSource``), are reported as phase BeforeWaiting, callout libev source. When a run
/// nested in a callout exits, the run it interrupted is in its phase again, timed from then.
///
/// Cost: each observer callout reads the clock and does two atomic operations; no lock (but
/// Exit's, which takes two, uncontended unless a capture is in flight), no system call, except
/// one semaphore post when the watchdog is parked. The watchdog parks while
/// the loop sleeps or sits outside a run, so an idle loop costs no wake-ups; while the loop works
/// it wakes at most once per threshold. ``statistics`` counts its wake-ups for benchmarks.
///
/// Limits: a run in a mode the observer is not in (a private mode) is invisible — time spent in
/// it counts toward the phase it interrupted; once every observed run has exited, such a run is
/// idle while it sleeps (as outside every run). Capturing the backtrace sends a signal to the loop's
/// thread, which cuts a `sleep`/`usleep` in the stalled code short (`EINTR`).
public final class EvStallMonitor: Sendable {
    /// How much a stack capture tells.
    public enum BacktraceStyle: Sendable, Equatable {
        /// No backtrace: no signal is ever sent to the loop's thread.
        case none
        /// Addresses with their image names.
        case addresses
        /// Addresses with function names and source locations, from the images' symbol tables
        /// and debug information (slower: done on the watchdog thread, after the capture).
        case symbolicated
    }

    /// What to watch and how to report.
    public struct Configuration: Sendable {
        /// One threshold period; a phase must outlast it ``consecutiveThresholds`` times in a row.
        public var threshold: Duration
        /// How many threshold periods in a row make a stall.
        public var consecutiveThresholds: Int
        /// The modes to observe; ``EvRunLoop/Mode/common`` covers every common mode (R12, R13).
        public var modes: [EvRunLoop.Mode]
        /// Whether and how to capture the stalled thread's stack.
        public var backtrace: BacktraceStyle
        /// Whether each report is also written to standard error.
        public var reportsToStandardError: Bool
        /// The real-time signal used to capture the stack; `nil` for `SIGRTMAX - 3`. Any other
        /// signal, or one already handled, is not taken: the reports then say why they have no
        /// backtrace. Once taken, its handler stays for the life of the process.
        public var backtraceSignal: Int32?
        /// The watchdog thread's name (15 bytes at most are kept, cut at a character boundary).
        public var watchdogName: String

        /// The usual defaults: 80 ms × 3 in the common modes, symbolicated backtraces, stderr.
        ///
        /// - Precondition: `threshold` is positive and `consecutiveThresholds` at least 1.
        public init(
            threshold: Duration = .milliseconds(80), consecutiveThresholds: Int = 3, modes: [EvRunLoop.Mode] = [.common],
            backtrace: BacktraceStyle = .symbolicated, reportsToStandardError: Bool = true,
            backtraceSignal: Int32? = nil, watchdogName: String = "ev-stall-watch"
        ) {
            require(threshold > .zero, "EvStallMonitor.Configuration: threshold must be positive (got \(threshold))")
            require(consecutiveThresholds >= 1, "EvStallMonitor.Configuration: consecutiveThresholds must be at least 1")
            require(!modes.isEmpty, "EvStallMonitor.Configuration: modes must not be empty")
            self.threshold = threshold
            self.consecutiveThresholds = consecutiveThresholds
            self.modes = modes
            self.backtrace = backtrace
            self.reportsToStandardError = reportsToStandardError
            self.backtraceSignal = backtraceSignal
            self.watchdogName = watchdogName
        }
    }

    /// Counters for benchmarks and diagnostics.
    public struct Statistics: Sendable, Equatable {
        /// Times the watchdog thread woke up (a timed tick or an unpark).
        public var watchdogWakeups: Int
        /// Times it parked because the loop slept or left its run.
        public var watchdogParks: Int
        /// Stalls reported.
        public var stallsReported: Int
        /// Backtraces captured.
        public var backtracesCaptured: Int
    }

    /// The monitored loop.
    public let loop: EvRunLoop
    /// The configuration it was made with.
    public let configuration: Configuration
    /// The observer the monitor adds to ``Configuration/modes`` while running (for inspection;
    /// invalidating it blinds the monitor).
    public let observer: EvObserver
    private let core: StallMonitorCore

    /// A monitor of `loop`, not yet started.
    ///
    /// - Parameters:
    ///   - loop: the run loop to watch; any thread's, from any thread.
    ///   - configuration: threshold, count, modes, backtrace style and reporting; the defaults
    ///     report a phase that overruns 80 ms three times in a row, with a backtrace, to stderr.
    ///   - onStall: called on the watchdog thread with each report (after it is written to
    ///     stderr, if configured). It may call ``stop()``; it must not wait for the monitored
    ///     loop (``stop()`` from the loop's thread waits for a report being delivered).
    public init(
        loop: EvRunLoop, configuration: Configuration = Configuration(),
        onStall: (@Sendable (Report) -> Void)? = nil
    ) {
        self.loop = loop
        self.configuration = configuration
        let core = StallMonitorCore(loop: loop, configuration: configuration, onStall: onStall)
        self.core = core
        observer = EvObserver(activities: .allActivities, order: .min) { _, activity in core.record(activity) }
    }

    /// Stops the monitor (see ``stop()``).
    deinit { core.stop(observer: observer) }

    /// Starts the watchdog and adds the observer to the loop.
    ///
    /// - Thread: any (R6). Phases are seen from the loop's next activity on.
    /// - Throws: ``EvStallMonitorError``: started twice or after stop, the loop is dead, or the
    ///   watchdog thread cannot be created. A backtrace that cannot be had (platform, signal in
    ///   use) is not an error: reports then say why they have none.
    public func start() throws(EvStallMonitorError) {
        try core.start(observer: observer)
    }

    /// Stops the monitor: no report after this returns (a stall the watchdog saw before is
    /// still delivered, backtrace and all, before it returns), the observer leaves every mode,
    /// the watchdog thread ends — from another thread, `stop` waits until it has exited.
    /// Stopping twice does nothing.
    ///
    /// - Thread: any, including the watchdog (from ``init(loop:configuration:onStall:)``'s
    ///   `onStall`) and the loop's own thread.
    public func stop() {
        core.stop(observer: observer)
    }

    /// Whether the monitor is running.
    public var isRunning: Bool { core.isRunning }

    /// The counters so far.
    public var statistics: Statistics { core.statistics }
}
