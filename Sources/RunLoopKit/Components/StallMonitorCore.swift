import Dispatch
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The shared state of an ``EvStallMonitor``: written by its observer on the loop's thread,
/// read by its watchdog thread.
///
/// The observer publishes one 64-bit word per phase — nanoseconds since the monitor was made,
/// shifted left by 8, or'ed with the phase code — with a single atomic store, so the watchdog
/// always reads a consistent (phase, start time) pair without a lock. Consecutive words always
/// differ (time moves on), so "the word has not changed" means "the loop is still in that phase".
final class StallMonitorCore: WaitCalloutWatcher {
    private enum Phase: UInt64 {
        case none = 0, entry, beforeTimers, beforeSources, beforeWaiting, afterWaiting, exit
        /// Library code that libev runs inside the wait, after BeforeWaiting (reported as it).
        case calloutInWait

        init(_ activity: EvRunLoop.Activity) {
            switch activity {
            case .entry: self = .entry
            case .beforeTimers: self = .beforeTimers
            case .beforeSources: self = .beforeSources
            case .beforeWaiting: self = .beforeWaiting
            case .afterWaiting: self = .afterWaiting
            default: self = .exit
            }
        }

        var activity: EvRunLoop.Activity {
            switch self {
            case .none, .exit: .exit
            case .entry: .entry
            case .beforeTimers: .beforeTimers
            case .beforeSources: .beforeSources
            case .beforeWaiting, .calloutInWait: .beforeWaiting
            case .afterWaiting: .afterWaiting
            }
        }
    }

    private enum Lifecycle { case idle, running(EvThreadHandle), stopped }

    private struct LoopThread {
        let thread: pthread_t
        let stack: (low: UInt, high: UInt)?
        /// What reports call the loop: "main", else its thread's name, else its thread's id.
        let name: String
        let id: Int32?
    }

    let loop: EvRunLoop
    let configuration: EvStallMonitor.Configuration
    private let onStall: (@Sendable (EvStallMonitor.Report) -> Void)?
    private let epoch = MonotonicTime.now()
    private let thresholdNanoseconds: UInt64

    private let phaseWord = Atomic<UInt64>(0)
    /// How many runs were in progress, the exiting one included, when the outermost observed run
    /// last published Exit: a run at that depth or above that sleeps later is not that run.
    private let exitDepth = Atomic<Int>(0)
    /// The phase of each run in progress that the observer saw enter, innermost last (loop's
    /// thread only): when a nested run exits, the run it interrupted is in its phase again.
    @exclusivity(unchecked) nonisolated(unsafe) private var runPhases: [Phase] = []
    private let parked = Atomic<Bool>(false)
    private let stopping = Atomic<Bool>(false)
    private let wake = DispatchSemaphore(value: 0)
    private let lifecycle = Locked(Lifecycle.idle)
    /// Held by the watchdog while it signals the loop's thread and waits for the handler; taken
    /// by the observer at Exit, so the loop's thread cannot end while a capture is in flight.
    /// Its value: the monitor was stopped, no capture may start.
    private let captureGuard = Locked(false)
    private let loopThread = Locked<LoopThread?>(nil)
    private let loopThreadKnown = Atomic<Bool>(false)
    private let backtraceSignal: Int32
    private let backtraceSetup = Locked<String??>(nil)  // nil: not tried; .some(nil): ready; .some(reason): unavailable

    private let wakeups = Atomic<Int>(0)
    private let parks = Atomic<Int>(0)
    private let stalls = Atomic<Int>(0)
    private let backtraces = Atomic<Int>(0)

    init(loop: EvRunLoop, configuration: EvStallMonitor.Configuration, onStall: (@Sendable (EvStallMonitor.Report) -> Void)?) {
        self.loop = loop
        self.configuration = configuration
        self.onStall = onStall
        thresholdNanoseconds = UInt64(max(configuration.threshold.saturatingNanoseconds, 1))
        backtraceSignal = configuration.backtraceSignal ?? StackCapture.defaultSignal
    }

    var isRunning: Bool {
        lifecycle.withLock { if case .running = $0 { true } else { false } }
    }

    var statistics: EvStallMonitor.Statistics {
        EvStallMonitor.Statistics(
            watchdogWakeups: wakeups.load(ordering: .relaxed), watchdogParks: parks.load(ordering: .relaxed),
            stallsReported: stalls.load(ordering: .relaxed), backtracesCaptured: backtraces.load(ordering: .relaxed))
    }

    // MARK: - The loop's side

    /// The observer's callout, on the loop's thread, for every phase.
    func record(_ activity: EvRunLoop.Activity) {
        if !loopThreadKnown.load(ordering: .relaxed) { learnLoopThread() }
        var phase = Phase(activity)
        switch phase {
        case .entry: runPhases.append(.entry)
        case .exit:
            _ = runPhases.popLast()
            // A nested run returned into a callout of the run it interrupted: that run's phase
            // goes on from now.
            if let interrupted = runPhases.last { phase = interrupted } else { exitDepth.store(loop.runDepth, ordering: .sequentiallyConsistent) }
        default:
            if runPhases.isEmpty { runPhases.append(phase) } else { runPhases[runPhases.count - 1] = phase }
        }
        publish(phase)
        if activity == .exit {
            // The run ends (and after the outermost, perhaps the thread): wait out a capture.
            captureGuard.withLock { _ in }
        }
    }

    /// Library code runs inside the wait (its thread is busy, not asleep), or is done.
    func calloutInWait(begins: Bool) {
        publish(begins ? .calloutInWait : .beforeWaiting)
    }

    /// The loop entered `phase` now: one atomic store, and the watchdog woken if parked.
    private func publish(_ phase: Phase) {
        let elapsed = UInt64(max(MonotonicTime.now().nanoseconds &- epoch.nanoseconds, 0))
        phaseWord.store(elapsed << 8 | phase.rawValue, ordering: .sequentiallyConsistent)
        if parked.load(ordering: .sequentiallyConsistent), parked.exchange(false, ordering: .sequentiallyConsistent) {
            wake.signal()
        }
    }

    /// Remembers the loop's thread and its stack bounds, for stack captures.
    private func learnLoopThread() {
        if configuration.backtrace != .none { StackCapture.unblock(backtraceSignal) }
        let thread = pthread_self()
        let stack = GNUExtensions.stackBounds(of: thread)
        let id = GNUExtensions.threadID?()
        let threadName = GNUExtensions.currentThreadName() ?? ""
        let name = loop.isMain ? "main" : !threadName.isEmpty ? threadName : id.map { "thread \($0)" } ?? "unnamed thread"
        loopThread.withLock { $0 = LoopThread(thread: thread, stack: stack, name: name, id: id) }
        loopThreadKnown.store(true, ordering: .releasing)
    }

    // MARK: - Lifecycle

    func start(observer: EvObserver) throws(EvStallMonitorError) {
        try lifecycle.withLock { (lifecycle: inout Lifecycle) throws(EvStallMonitorError) in
            switch lifecycle {
            case .running: throw .alreadyStarted
            case .stopped: throw .stopped
            case .idle: break
            }
            guard !loop.threadHasExited else { throw .loopExited }
            do throws(EvThreadHandle.SpawnFailure) {
                let watchdog = try EvThreadHandle.spawn(name: configuration.watchdogName, stackSize: nil) { [self] in
                    watch()
                }
                lifecycle = .running(watchdog)
            } catch {
                throw .threadCreationFailed(errno: error.errno)
            }
        }
        loop.waitCalloutWatchers.withLock { $0.append(self) }
        for mode in configuration.modes { loop.add(observer, forMode: mode) }
    }

    func stop(observer: EvObserver) {
        let watchdog: EvThreadHandle? = lifecycle.withLock { lifecycle in
            defer { lifecycle = .stopped }
            if case .running(let watchdog) = lifecycle { return watchdog }
            return nil
        }
        guard let watchdog else { return }
        captureGuard.withLock { $0 = true }  // waits for a capture in flight; no new one starts
        stopping.store(true, ordering: .sequentiallyConsistent)
        wake.signal()
        observer.invalidate()
        loop.waitCalloutWatchers.withLock { $0.removeAll { $0 === self } }
        watchdog.join()  // on the watchdog itself (from onStall): marks it to be joined at exit instead
    }

    // MARK: - The watchdog's side

    private func watch() {
        if configuration.backtrace != .none {
            StackCapture.unblock(backtraceSignal)
            _ = prepareBacktraces()  // installs the handler and warms it up before any stall
        }
        // Saturated: a threshold of centuries means never, not a trap.
        let (product, overflow) = thresholdNanoseconds.multipliedReportingOverflow(by: UInt64(configuration.consecutiveThresholds))
        let limit = overflow ? UInt64.max : product
        var reported: UInt64 = 0
        while !stopping.load(ordering: .sequentiallyConsistent) {
            wakeups.add(1, ordering: .relaxed)
            let word = phaseWord.load(ordering: .sequentiallyConsistent)
            let phase = Phase(rawValue: word & 0xFF) ?? .none
            // Asleep, or outside a run, or reported once for this phase: wait for the next one.
            guard word != reported, !isIdle(in: phase) else {
                park(seen: word)
                continue
            }
            let elapsed = sinceEpoch() &- (word >> 8)
            if elapsed < limit {
                // Look again at the next threshold boundary of this phase.
                sleep(nanoseconds: (elapsed / thresholdNanoseconds + 1) * thresholdNanoseconds - elapsed)
            } else if phaseWord.load(ordering: .sequentiallyConsistent) == word && !isIdle(in: phase) {
                report(word: word, phase: phase, elapsed: elapsed)
                reported = word
            }
        }
    }

    /// Whether the loop, last seen entering `phase`, is idle rather than stalled: asleep after
    /// BeforeWaiting's observers, or out of every run after Exit's. Until then the observers of
    /// that phase run, and may stall like any callout.
    private func isIdle(in phase: Phase) -> Bool {
        switch phase {
        case .none: return true
        case .beforeWaiting: return loop.isWaiting
        // A run that sleeps no deeper than the exited one is another, unobserved run (invisible);
        // one deeper sleeps inside an Exit observer, which it holds up.
        case .exit:
            let depth = loop.runDepth
            return depth == 0 || (loop.isWaiting && depth <= exitDepth.load(ordering: .sequentiallyConsistent))
        case .entry, .beforeTimers, .beforeSources, .afterWaiting, .calloutInWait: return false
        }
    }

    private func sinceEpoch() -> UInt64 {
        UInt64(max(MonotonicTime.now().nanoseconds &- epoch.nanoseconds, 0))
    }

    private func sleep(nanoseconds: UInt64) {
        _ = wake.wait(timeout: .now() + .nanoseconds(Int(min(nanoseconds, UInt64(Int.max)))))
    }

    /// Waits until the observer publishes a new phase (or stop). The observer signals only if it
    /// takes the `parked` flag back, so every signal is consumed by exactly one wait.
    private func park(seen word: UInt64) {
        parked.store(true, ordering: .sequentiallyConsistent)
        if phaseWord.load(ordering: .sequentiallyConsistent) != word || stopping.load(ordering: .sequentiallyConsistent) {
            if !parked.exchange(false, ordering: .sequentiallyConsistent) { wake.wait() }
            return
        }
        parks.add(1, ordering: .relaxed)
        wake.wait()
    }

    private func report(word: UInt64, phase: Phase, elapsed: UInt64) {
        // Stopped before the stall was seen: "no report after stop() returns". One seen before
        // is delivered (stop() waits for it), however long its backtrace takes.
        guard !stopping.load(ordering: .sequentiallyConsistent) else { return }
        let mode = loop.currentMode
        let callout = loop.currentCallout
        var backtrace: EvStallBacktrace?
        var reason: String?
        switch captureBacktrace(expecting: word) {
        case .success(let captured):
            backtrace = captured
            backtraces.add(1, ordering: .relaxed)
        case .failure(let failure):
            reason = failure.reason
        }
        let target = loopThread.withLock { $0 }
        let report = EvStallMonitor.Report(
            loop: loop, loopName: target?.name ?? (loop.isMain ? "main" : "unnamed thread"), threadID: target?.id,
            mode: mode, phase: phase.activity, callout: callout, duration: .nanoseconds(Int64(clamping: elapsed)),
            thresholdsExceeded: Int(elapsed / thresholdNanoseconds), backtrace: backtrace,
            backtraceUnavailableReason: reason)
        stalls.add(1, ordering: .relaxed)
        if configuration.reportsToStandardError {
            let text = report.description + "\n"
            _ = text.withCString { write(STDERR_FILENO, $0, strlen($0)) }
        }
        onStall?(report)
    }

    private struct NoBacktrace: Error { let reason: String? }

    private func captureBacktrace(expecting word: UInt64) -> Result<EvStallBacktrace, NoBacktrace> {
        guard configuration.backtrace != .none else { return .failure(NoBacktrace(reason: nil)) }
        if let reason = prepareBacktraces() { return .failure(NoBacktrace(reason: reason)) }
        guard let target = loopThread.withLock({ $0 }), let stack = target.stack else {
            return .failure(NoBacktrace(reason: "the loop thread's stack bounds are unknown"))
        }
        let captured: Result<StackCapture.RawStack, StackCapture.Failure>? = captureGuard.withLock { stopped in
            guard !stopped, phaseWord.load(ordering: .sequentiallyConsistent) == word else { return nil }
            return Result { () throws(StackCapture.Failure) in
                try StackCapture.capture(thread: target.thread, stack: stack, signal: backtraceSignal)
            }
        }
        guard let captured else { return .failure(NoBacktrace(reason: "the stall ended before its stack was captured")) }
        switch captured {
        case .failure(let failure):
            return .failure(NoBacktrace(reason: failure.description))
        case .success(let raw):
            guard phaseWord.load(ordering: .sequentiallyConsistent) == word else {
                return .failure(NoBacktrace(reason: "the stall ended while its stack was captured"))
            }
            return .success(EvStallBacktrace.make(from: raw, symbolicate: configuration.backtrace == .symbolicated))
        }
    }

    /// Installs the capture signal's handler once; returns why backtraces are unavailable, if so.
    private func prepareBacktraces() -> String? {
        backtraceSetup.withLock { (setup: inout String??) -> String? in
            if let known = setup { return known }
            var reason: String?
            do throws(StackCapture.Failure) {
                try StackCapture.install(signal: backtraceSignal)
            } catch {
                reason = error.description
            }
            setup = .some(reason)
            return reason
        }
    }
}

extension EvRunLoop {
    /// How many runs of this loop are in progress, nested ones included.
    fileprivate var runDepth: Int { state.withLock { $0.runs.count } }
}
