import Foundation
import RunLoopKit
import Testing

/// EvStallMonitor: stalls wherever the loop's thread is busy in a monitored run, not only in
/// the two phases where sources and timers run.
@Suite struct StallMonitorPhaseTests {
    /// A callout that ran the loop nested, and then stalls, stalls the run it interrupted: the
    /// nested run's Exit left the watchdog parked, and the stall went unreported.
    @Test func aStallAfterANestedRunInsideACalloutIsReported() throws {
        let reported = Latch()
        let monitoring = Latch()
        let (loop, finished) = startLoopThread { loop in
            _ = monitoring.wait()
            loop.add(EvTimer(after: .milliseconds(1)) { _ in
                _ = EvRunLoop.current.run(mode: .default, timeout: .zero)
                #expect(reported.wait(timeout: 30), "the stall was never reported")
                EvRunLoop.current.stop()
            }, forMode: .default)
            loop.run(mode: .default, timeout: .seconds(30))
        }
        let report = try firstStallReport(of: loop, monitoring: monitoring, finished: finished, reported: reported)
        #expect(report.callout == .timer)
        #expect(report.phase == .afterWaiting)
    }

    /// Observers of Entry, BeforeTimers, BeforeWaiting and Exit run in a monitored run too: one
    /// that stalls is reported. (Until the loop sleeps after BeforeWaiting, or leaves its run
    /// after Exit, it is not idle.)
    @Test(arguments: [EvRunLoop.Activity.entry, .beforeTimers, .beforeWaiting, .exit])
    func anObserverThatStallsInAnyPhaseIsReported(_ activity: EvRunLoop.Activity) throws {
        let reports = EventLog<EvStallMonitor.Report>()
        let reported = Latch()
        let (loop, finished) = startLoopThread { loop in
            loop.add(keepAliveTimer(), forMode: .default)
            loop.run(mode: .default, timeout: .seconds(30))
        }
        let monitor = EvStallMonitor(loop: loop, configuration: quickStallConfiguration()) { report in
            reports.append(report)
            reported.open()
        }
        try monitor.start()
        loop.add(EvObserver(activities: activity, repeats: false) { _, _ in
            #expect(reported.wait(timeout: 30), "the stall was never reported")
        }, forMode: .default)
        // A nested run has every phase; the first one of `activity`, in either run, stalls.
        let source = EvSource {
            _ = EvRunLoop.current.run(mode: .default, timeout: .milliseconds(1))
            EvRunLoop.current.stop()
        }
        loop.add(source, forMode: .default)
        source.signal()
        loop.wakeUp()
        #expect(finished.wait())
        monitor.stop()
        let report = try #require(reports.all.first)
        #expect(report.callout == .observer)
    }

    /// A stall seen before ``EvStallMonitor/stop()`` is delivered, however long its symbolicated
    /// backtrace takes: it was dropped when `stop()` came while the watchdog symbolicated. The
    /// stalled callout stops the monitor as soon as the capture's signal interrupts its sleep.
    @Test func aStallSeenBeforeStopIsDeliveredWithItsBacktrace() throws {
        let reports = EventLog<EvStallMonitor.Report>()
        let monitorBox = Box<EvStallMonitor?>(nil)
        let interrupted = Box(false)
        let (loop, finished) = startLoopThread { loop in
            loop.add(keepAliveTimer(), forMode: .default)
            loop.run(mode: .default, timeout: .seconds(30))
        }
        let monitor = EvStallMonitor(loop: loop, configuration: quickStallConfiguration(.symbolicated)) { reports.append($0) }
        monitorBox.set(monitor)
        try monitor.start()
        try loop.perform(inModes: [.default], waitUntilDone: false) {
            var stall = timespec(tv_sec: 30, tv_nsec: 0)
            interrupted.set(nanosleep(&stall, nil) != 0 && errno == EINTR)
            monitorBox.get?.stop()
            EvRunLoop.current.stop()
        }
        #expect(finished.wait())
        #expect(interrupted.get)
        #expect(reports.count == 1)
        #expect(reports.all.first?.backtrace != nil)
    }
}
