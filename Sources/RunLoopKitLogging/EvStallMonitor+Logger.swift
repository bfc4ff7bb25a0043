#if Logging
import Logging
import RunLoopKit

extension EvStallMonitor {
    /// A monitor of `loop` whose reports go to `logger` as structured records instead of raw
    /// text on standard error.
    ///
    /// Each stall is one record at `level`, message "run loop stalled", with the report's
    /// ``EvStallMonitor/Report/metadata`` (loop, mode, phase, callout, duration, backtrace).
    ///
    /// - Parameters:
    ///   - loop: the loop to watch.
    ///   - configuration: thresholds, modes and backtrace style; its `reportsToStandardError` is
    ///     turned off (the logger takes its place).
    ///   - logger: where the reports go.
    ///   - level: the level of the records; `.warning` by default.
    ///   - onStall: also called with each report, on the watchdog thread, after it was logged.
    public convenience init(
        loop: EvRunLoop, configuration: Configuration = Configuration(), logger: Logger, level: Logger.Level = .warning,
        onStall: (@Sendable (Report) -> Void)? = nil
    ) {
        var configuration = configuration
        configuration.reportsToStandardError = false
        self.init(loop: loop, configuration: configuration) { report in
            logger.log(level: level, "run loop stalled", metadata: report.metadata)
            onStall?(report)
        }
    }
}

extension EvStallMonitor.Report {
    /// The report as swift-log metadata:
    ///
    /// - `loop`: "main" for the main loop, else the loop's object identifier;
    /// - `mode`: the running mode's name (absent when none);
    /// - `phase`: the observer phase the loop stayed in ("beforeSources", "afterWaiting");
    /// - `callout`: what the loop was running ("timer", "source", "version-1 source", "block",
    ///   "main-queue work", "observer", or "none");
    /// - `duration_ms`: how long the loop had been stalled, in milliseconds;
    /// - `thresholds`: how many thresholds that spans;
    /// - `backtrace`: the stalled thread's frames, innermost first, when captured; otherwise
    ///   `backtrace_unavailable`: why not (absent when backtraces are off).
    public var metadata: Logger.Metadata {
        var metadata: Logger.Metadata = [
            "loop": .string(loop.isMain ? "main" : "\(ObjectIdentifier(loop))"),
            "phase": .string("\(phase)"),
            "callout": .string(callout.map { "\($0)" } ?? "none"),
            "duration_ms": .stringConvertible(Double(duration.components.seconds) * 1e3 + Double(duration.components.attoseconds) / 1e15),
            "thresholds": .stringConvertible(thresholdsExceeded),
        ]
        if let mode { metadata["mode"] = .string(mode.name) }
        if let backtrace {
            metadata["backtrace"] = .array(backtrace.frames.map { .string($0.description) })
        } else if let backtraceUnavailableReason {
            metadata["backtrace_unavailable"] = .string(backtraceUnavailableReason)
        }
        return metadata
    }
}
#endif
