import Foundation
import RunLoopKit
import Testing
import TestSupport

/// A stall monitor given settings at the edges, and a signal source that meets its capture
/// signal. Signal dispositions are process-wide, so those scenarios run in child processes.
@Suite struct StallMonitorMisuseTests {
    /// Centuries of threshold mean "never". Before, the watchdog multiplied the threshold by the
    /// count unchecked and trapped on the overflow as it started.
    @Test func aThresholdOfCenturiesNeverTrapsTheWatchdog() async {
        await #expect(processExitsWith: .success) {
            let (loop, finished) = startLoopThread { loop in
                loop.add(keepAliveTimer(), forMode: .default)
                loop.run(mode: .default, timeout: .milliseconds(50))
            }
            let configuration = EvStallMonitor.Configuration(
                threshold: .seconds(Int64.max), modes: [.default], backtrace: .none, reportsToStandardError: false)
            let monitor = EvStallMonitor(loop: loop, configuration: configuration)
            try? monitor.start()
            _ = finished.wait()
            monitor.stop()  // joins the watchdog, which has computed its limit by then
        }
    }

    /// The capture signal's handler ignores every delivery that is not a capture request, and
    /// stays for good: a signal the process needs (SIGTERM here) is not taken, and the report
    /// says why it has no backtrace. Before, SIGTERM was swallowed for the rest of the process.
    @Test func aBacktraceSignalThatIsNotRealTimeIsNotTaken() async {
        await #expect(processExitsWith: .success) {
            let reasons = EventLog<String>()
            stallOnceUnderAMonitor(backtraceSignal: SIGTERM) { reasons.append($0.backtraceUnavailableReason ?? "a backtrace") }
            var current = sigaction()
            sigaction(SIGTERM, nil, &current)
            guard current.__sigaction_handler.sa_handler == nil else { exit(3) }  // SIG_DFL
            guard reasons.all.first?.contains("not a real-time signal") == true else { exit(4) }
        }
    }

    /// A signal source for the signal a monitor captures stacks with would take it over: the
    /// monitor's captures then go unanswered and the source fires for signals nobody sent it.
    @Test func aSignalSourceForTheMonitorsCaptureSignalStopsWithAMessage() async {
        let outcome = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            stallOnceUnderAMonitor { _ in }  // reported, so the capture signal's handler is in place
            onLoopThread { loop in
                let captureSignal = __libc_current_sigrtmax() - 3  // the monitor's default
                loop.add(try! EvSignalSource(signal: captureSignal) {}, forMode: .default)
            }
        }
        let errors = String(decoding: outcome?.standardErrorContent ?? [], as: UTF8.self)
        #expect(errors.contains("EvRunLoop.add(_:forMode:): signal \(__libc_current_sigrtmax() - 3) is the one an EvStallMonitor captures stacks with"))
    }
}

/// A loop thread stalls in a block until a monitor with address backtraces (on
/// `backtraceSignal`, `nil` for the default) reports it; `onReport` sees the report. Returns
/// once the thread is done and the monitor stopped.
private func stallOnceUnderAMonitor(backtraceSignal: Int32? = nil, _ onReport: @escaping @Sendable (EvStallMonitor.Report) -> Void) {
    let monitoring = Latch(), reported = Latch()
    let (loop, finished) = startLoopThread { loop in
        loop.add(keepAliveTimer(), forMode: .default)
        loop.perform(inModes: [.default]) { _ = reported.wait() }  // a stall until reported
        _ = monitoring.wait()
        loop.run(mode: .default, timeout: .zero)
    }
    let configuration = EvStallMonitor.Configuration(
        threshold: .milliseconds(5), modes: [.default], backtrace: .addresses, reportsToStandardError: false,
        backtraceSignal: backtraceSignal)
    let monitor = EvStallMonitor(loop: loop, configuration: configuration) { report in
        onReport(report)
        reported.open()
    }
    try? monitor.start()
    monitoring.open()
    _ = finished.wait()
    monitor.stop()
}
