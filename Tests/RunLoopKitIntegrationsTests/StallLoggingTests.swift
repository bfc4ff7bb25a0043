#if Logging
import Logging
import RunLoopKit
import RunLoopKitLogging
import Synchronization
import Testing

/// RunLoopKitLogging: EvStallMonitor reports as swift-log records a person can read.
@Suite struct StallLoggingTests {
    /// Stalls a timer on a worker thread named `threadName` until the monitor, logging to
    /// `logger`, has reported it; returns once the stall is over and the monitor stopped.
    private func stallATimer(onThreadNamed threadName: String, backtrace: EvStallMonitor.BacktraceStyle, logger: Logger) throws {
        let worker = EvWorkerThread(name: threadName)
        let loop = try worker.start()
        let reported = Latch()
        let configuration = EvStallMonitor.Configuration(
            threshold: .milliseconds(5), consecutiveThresholds: 3, backtrace: backtrace, watchdogName: "ev-stall-log")
        let monitor = EvStallMonitor(loop: loop, configuration: configuration, logger: logger, level: .error) { _ in reported.open() }
        #expect(!monitor.configuration.reportsToStandardError, "the logger replaces standard error")
        try monitor.start()
        let stallEnded = Latch()
        try worker.execute {
            EvRunLoop.current.add(EvTimer(after: .milliseconds(1)) { _ in
                stallUntilLogged(reported)
                stallEnded.open()
            }, forMode: .default)
        }
        #expect(stallEnded.wait())
        monitor.stop()
        worker.stop()
    }

    @Test func aStalledTimerIsOneRecordWithTheLoopsThreadNameAndTheKeyFacts() throws {
        let store = CapturingLogHandler.Store()
        let logger = Logger(label: "stall-test") { _ in CapturingLogHandler(store: store) }
        try stallATimer(onThreadNamed: "log-w1", backtrace: .none, logger: logger)
        let record = try #require(store.all.first)
        #expect(store.all.count == 1)
        #expect(record.level == .error)
        #expect(record.message.hasPrefix(#"run loop "log-w1" stalled "#) && record.message.hasSuffix(" ms running a timer"), "\(record.message)")
        #expect(record.metadata["loop"] == "log-w1")
        #expect(record.metadata["thread"].flatMap { Int32("\($0)") }.map { $0 > 0 } == true)
        #expect(record.metadata["callout"] == "timer")
        #expect(record.metadata["phase"] == "afterWaiting")
        #expect(record.metadata["mode"] == .string(EvRunLoop.Mode.default.name))
        let milliseconds = try #require(record.metadata["duration_ms"].flatMap { Int("\($0)") })
        #expect(milliseconds >= 15)
        #expect(record.metadata["thresholds"].flatMap { Int("\($0)") }.map { $0 >= 3 } == true)
        #expect(record.metadata["backtrace"] == nil && record.metadata["backtrace_unavailable"] == nil)
    }

    /// What a person sees through swift-log's StreamLogHandler: the facts and the message on the
    /// first line, then the frames that matter, one a line.
    @Test func throughStreamLogHandlerTheFactsComeFirstAndTheFramesThatMatterAfter() throws {
        let stream = CapturingStream()
        let logger = Logger(label: "server") { label in StreamLogHandler(label: label, stream: stream, metadataProvider: nil) }
        try stallATimer(onThreadNamed: "line-w1", backtrace: .symbolicated, logger: logger)
        let lines = stream.text.split(separator: "\n").map(String.init)
        let first = try #require(lines.first)
        #expect(first.contains(" error server: callout=timer duration_ms="), "\(first)")
        #expect(first.contains(" loop=line-w1 "), "\(first)")
        #expect(first.contains(#"[RunLoopKitLogging] run loop "line-w1" stalled "#), "\(first)")
        #expect(first.hasSuffix(" ms running a timer; stalled thread:"), "\(first)")
        #expect(!first.contains("ObjectIdentifier") && !first.contains("backtrace"), "\(first)")
        let frames = lines.dropFirst()
        #expect(frames.allSatisfy { $0.hasPrefix("  #") || $0.hasPrefix("  … ") }, "\(lines)")
        #expect(frames.contains { $0.contains("stallUntilLogged") }, "\(lines)")
        #expect(!frames.contains { $0.contains("Callout") || $0.contains("EvRunLoop.") || $0.contains("libc.so") }, "\(lines)")
        #expect(frames.last?.contains("more frames left out") == true, "\(lines)")
        #expect(frames.filter { $0.contains("[scanned") }.allSatisfy { $0.hasSuffix("[scanned: may be stale]") })
    }
}

/// The stalling callout, named so the tests can find it among the frames.
@inline(never)
private func stallUntilLogged(_ reported: Latch) {
    #expect(reported.wait(), "the stall was never reported")
}

/// A text stream that keeps what StreamLogHandler writes.
private final class CapturingStream: TextOutputStream, Sendable {
    private let written = Mutex("")
    var text: String { written.withLock { $0 } }
    func write(_ string: String) { written.withLock { $0 += string } }
}
#endif
