#if Logging
import Logging
import RunLoopKit
import RunLoopKitLogging
import Testing

/// RunLoopKitLogging: EvStallMonitor reports as swift-log records with structured metadata.
@Suite struct StallLoggingTests {
    @Test func aStalledTimerIsLoggedWithLoopModePhaseCalloutAndDuration() throws {
        let store = CapturingLogHandler.Store()
        let logger = Logger(label: "stall-test") { _ in CapturingLogHandler(store: store) }
        let reported = Latch()
        let monitoring = Latch()
        let (loop, finished) = startLoopThread { loop in
            #expect(monitoring.wait())  // the observer sees the phases from the start
            loop.add(EvTimer(after: .milliseconds(1)) { _ in
                #expect(reported.wait(), "the stall was never reported")
                EvRunLoop.current.stop()
            }, forMode: .default)
            loop.run(mode: .default, timeout: .seconds(30))
        }
        let configuration = EvStallMonitor.Configuration(
            threshold: .milliseconds(5), consecutiveThresholds: 3, backtrace: .none, watchdogName: "ev-stall-log")
        let monitor = EvStallMonitor(loop: loop, configuration: configuration, logger: logger, level: .error) { _ in reported.open() }
        #expect(!monitor.configuration.reportsToStandardError, "the logger replaces standard error")
        try monitor.start()
        monitoring.open()
        #expect(finished.wait())
        monitor.stop()
        let record = try #require(store.all.first)
        #expect(record.level == .error)
        #expect(record.message == "run loop stalled")
        #expect(record.metadata["callout"] == "timer")
        #expect(record.metadata["phase"] == "afterWaiting")
        #expect(record.metadata["mode"] == .string(EvRunLoop.Mode.default.name))
        #expect(record.metadata["loop"] == .string("\(ObjectIdentifier(loop))"))
        let milliseconds = try #require(record.metadata["duration_ms"].flatMap { Double("\($0)") })
        #expect(milliseconds >= 15)
        #expect(record.metadata["thresholds"].flatMap { Int("\($0)") }.map { $0 >= 3 } == true)
        #expect(record.metadata["backtrace"] == nil && record.metadata["backtrace_unavailable"] == nil)
    }
}
#endif
