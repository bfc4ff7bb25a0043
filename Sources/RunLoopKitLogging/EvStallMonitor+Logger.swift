#if Logging
import Logging
import RunLoopKit

extension EvStallMonitor {
    /// A monitor of `loop` whose reports go to `logger` as structured records instead of raw
    /// text on standard error.
    ///
    /// Each stall is one record at `level`: its message is ``RunLoopKit/EvStallMonitor/Report/logMessage``
    /// (the stall in a line, then the stalled thread's frames that matter, one a line), its
    /// metadata ``RunLoopKit/EvStallMonitor/Report/metadata`` (loop, thread, mode, phase, callout,
    /// duration). A handler that prints metadata before the message, as swift-log's
    /// `StreamLogHandler` does, so prints the key facts, then the message, then the frames.
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
            logger.log(level: level, report.logMessage, metadata: report.metadata)
            onStall?(report)
        }
    }
}

extension EvStallMonitor.Report {
    /// The report as a log message: ``RunLoopKit/EvStallMonitor/Report/summary`` (`run loop
    /// "line-w1" stalled 300 ms running a timer`), then, when a backtrace was captured, the
    /// stalled thread's frames that matter, one a line (``RunLoopKit/EvStallBacktrace/description``).
    public var logMessage: Logger.Message {
        guard let backtrace else { return "\(summary)" }
        return "\(summary); stalled thread:\n\(backtrace)"
    }

    /// The report's key facts as swift-log metadata; the backtrace is not among them (it
    /// follows the message, ``logMessage``):
    ///
    /// - `loop`: ``RunLoopKit/EvStallMonitor/Report/loopName``: "main", the loop thread's name
    ///   (a worker's `line-w1`), or "thread" and its id;
    /// - `thread`: the loop thread's kernel id, as `ps -L` shows it (absent when unknown);
    /// - `mode`: the running mode's name (absent when none);
    /// - `phase`: the observer phase the loop stayed in ("beforeSources", "afterWaiting");
    /// - `callout`: what the loop was running ("timer", "source", "version-1 source", "block",
    ///   "main-queue work", "observer", or "none");
    /// - `duration_ms`: how long the loop had been stalled, in whole milliseconds;
    /// - `thresholds`: how many thresholds that spans;
    /// - `backtrace_unavailable`: why there is no backtrace, when backtraces are on but none
    ///   was captured.
    public var metadata: Logger.Metadata {
        var metadata: Logger.Metadata = [
            "loop": .string(loopName),
            "phase": .string("\(phase)"),
            "callout": .string(callout.map { "\($0)" } ?? "none"),
            "duration_ms": .stringConvertible(duration.components.seconds * 1000 + duration.components.attoseconds / 1_000_000_000_000_000),
            "thresholds": .stringConvertible(thresholdsExceeded),
        ]
        if let threadID { metadata["thread"] = .stringConvertible(threadID) }
        if let mode { metadata["mode"] = .string(mode.name) }
        if backtrace == nil, let backtraceUnavailableReason {
            metadata["backtrace_unavailable"] = .string(backtraceUnavailableReason)
        }
        return metadata
    }
}
#endif
