import Foundation
import RunLoopKit
import Testing

/// EvStallMonitor and runs in modes its observer is not in: they are invisible, so a loop asleep
/// in one, after the observed run it contained has exited, is idle, not stalled.
@Suite struct StallMonitorUnobservedRunTests {
    @Test func aLoopAsleepInAnUnobservedRunAfterAnObservedNestedRunExitedIsNotAStall() throws {
        let privateMode = EvRunLoop.Mode("ev-private-wait")
        let configuration = EvStallMonitor.Configuration(
            threshold: .milliseconds(20), consecutiveThresholds: 3, modes: [.default], backtrace: .none,
            reportsToStandardError: false, watchdogName: "ev-stall-unobs")
        let reports = EventLog<EvStallMonitor.Report>()
        let monitorBox = Box<EvStallMonitor?>(nil)
        let parksBeforeSleep = Box<Int?>(nil)
        let monitoring = Latch()
        let (loop, finished) = startLoopThread { loop in
            _ = monitoring.wait()
            loop.add(keepAliveTimer(), forMode: privateMode)
            loop.add(EvTimer(after: .milliseconds(1)) { _ in
                // An observed run nested in the unobserved one: it exits at once.
                let nested = EvRunLoop.current
                nested.add(keepAliveTimer(), forMode: .default)
                _ = nested.run(mode: .default, timeout: .zero)
                // Two watchdog wake-ups after that Exit: any park counted from now on is a park on it.
                if let monitor = monitorBox.get {
                    let seen = monitor.statistics.watchdogWakeups
                    _ = spinUntil { monitor.statistics.watchdogWakeups >= seen + 2 }
                    parksBeforeSleep.set(monitor.statistics.watchdogParks)
                }
            }, forMode: privateMode)
            // The unobserved run now sleeps until stopped.
            loop.run(mode: privateMode, timeout: .seconds(30))
        }
        let monitor = EvStallMonitor(loop: loop, configuration: configuration) { reports.append($0) }
        monitorBox.set(monitor)
        try monitor.start()
        monitoring.open()
        #expect(spinUntil { parksBeforeSleep.get != nil })
        // Asleep in the private mode: the watchdog parks, or (wrongly) reports the sleep as a stall.
        #expect(spinUntil { reports.count > 0 || monitor.statistics.watchdogParks > parksBeforeSleep.get! })
        #expect(reports.all.map { "\($0.phase)" } == [])
        #expect(monitor.statistics.watchdogParks > parksBeforeSleep.get!)
        try loop.perform(inModes: [privateMode], waitUntilDone: false) { EvRunLoop.current.stop() }
        #expect(finished.wait())
        monitor.stop()
        monitorBox.set(nil)
    }

    /// The other side: an unobserved run that sleeps inside an Exit observer holds that observer
    /// up, so the Exit phase stalls.
    @Test func anUnobservedRunAsleepInsideAnExitObserverIsAStall() throws {
        let privateMode = EvRunLoop.Mode("ev-private-wait")
        let configuration = EvStallMonitor.Configuration(
            threshold: .milliseconds(5), consecutiveThresholds: 3, modes: [.default], backtrace: .none,
            reportsToStandardError: false, watchdogName: "ev-stall-unobs")
        let reports = EventLog<EvStallMonitor.Report>()
        let monitoring = Latch()
        let (loop, finished) = startLoopThread { loop in
            _ = monitoring.wait()
            loop.add(EvObserver(activities: .exit, repeats: false) { _, _ in
                let current = EvRunLoop.current
                current.add(keepAliveTimer(), forMode: privateMode)
                _ = current.run(mode: privateMode, timeout: .seconds(30))
            }, forMode: .default)
            loop.add(keepAliveTimer(), forMode: .default)
            _ = loop.run(mode: .default, timeout: .zero)
        }
        let monitor = EvStallMonitor(loop: loop, configuration: configuration) { report in
            reports.append(report)
            try? report.loop.perform(inModes: [privateMode], waitUntilDone: false) { EvRunLoop.current.stop() }
        }
        try monitor.start()
        monitoring.open()
        #expect(finished.wait())
        monitor.stop()
        #expect(reports.all.map(\.phase) == [.exit])
    }
}
