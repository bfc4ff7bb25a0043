import Foundation
import RunLoopKit
import Testing
import TestSupport

private let tracking = EvRunLoop.Mode("UITrackingRunLoopMode")

/// Small thresholds keep the stall-monitor tests fast; the defaults are checked separately.
func quickStallConfiguration(
    _ backtrace: EvStallMonitor.BacktraceStyle = .none, modes: [EvRunLoop.Mode] = [.common], name: String = "ev-stall-test"
) -> EvStallMonitor.Configuration {
    EvStallMonitor.Configuration(
        threshold: .milliseconds(5), consecutiveThresholds: 3, modes: modes, backtrace: backtrace,
        reportsToStandardError: false, watchdogName: name)
}

/// Monitors `loop` with ``quickStallConfiguration(_:modes:name:)``, opening `reported` at each
/// report, from just before `monitoring` opens until the loop's thread has `finished`; returns
/// the first report.
func firstStallReport(of loop: EvRunLoop, monitoring: Latch, finished: Latch, reported: Latch) throws -> EvStallMonitor.Report {
    let reports = EventLog<EvStallMonitor.Report>()
    let monitor = EvStallMonitor(loop: loop, configuration: quickStallConfiguration()) { report in
        reports.append(report)
        reported.open()
    }
    try monitor.start()
    monitoring.open()
    #expect(finished.wait())
    monitor.stop()
    return try #require(reports.all.first)
}

/// A callout that stalls its loop until the monitor has reported: it blocks on the latch the
/// report callback opens (with a safety-net timeout), so no test depends on timing.
@inline(never)
private func stallUntilReported(_ reported: Latch) {
    #expect(reported.wait(timeout: 30), "the stall was never reported")
}

/// Names of this process's threads, from /proc/self/task.
private func threadNames() -> [String] {
    let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
    return tasks.compactMap { procFileText("/proc/self/task/\($0)/comm") }
        .map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
}

/// Waits until no thread of this process has `name`. A joined thread has ended, but the kernel
/// may list its task for a moment longer while it finishes exiting; this waits for that event.
private func noThreadNamed(_ name: String, within seconds: Double = 10) -> Bool {
    let deadline = ContinuousClock.now + .seconds(seconds)
    while threadNames().contains(name) {
        if ContinuousClock.now > deadline { return false }
        sched_yield()
    }
    return true
}

/// EvStallMonitor: the run-loop stall ("卡顿") monitor: reports a loop stuck in one phase.
@Suite struct StallMonitorTests {
    @Test func aSourceThatBlocksTheLoopIsReportedInBeforeSourcesWithLoopModeAndDuration() throws {
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
        // R20 step 4: a version-0 source performs after BeforeSources.
        let source = EvSource {
            stallUntilReported(reported)
            EvRunLoop.current.stop()
        }
        loop.add(source, forMode: .default)
        source.signal()
        loop.wakeUp()
        #expect(finished.wait())
        monitor.stop()
        let report = try #require(reports.all.first)
        #expect(report.loop === loop)
        #expect(report.mode == .default)
        #expect(report.phase == .beforeSources)
        #expect(report.thresholdsExceeded >= 3)
        #expect(report.duration >= .milliseconds(15))
        #expect(report.backtrace == nil)
        #expect(report.description.contains("beforeSources") && report.description.contains(EvRunLoop.Mode.default.name))
        #expect(report.callout == .source)
        #expect(monitor.statistics.stallsReported == reports.count)
    }

    @Test func aTimerThatBlocksAfterTheLoopWokeIsReportedInAfterWaitingOfTheTrackingMode() throws {
        let reports = EventLog<EvStallMonitor.Report>()
        let reported = Latch()
        let ready = Latch()
        let (loop, finished) = startLoopThread { loop in
            loop.addCommonMode(tracking)
            ready.wait()
            // Sleeps (BeforeWaiting: idle, not a stall), wakes for the timer (AfterWaiting), stalls.
            loop.add(EvTimer(after: .milliseconds(50)) { _ in stallUntilReported(reported) }, forMode: tracking)
            loop.run(mode: tracking, timeout: .seconds(30))
        }
        let monitor = EvStallMonitor(loop: loop, configuration: quickStallConfiguration()) { report in
            reports.append(report)
            reported.open()
        }
        try monitor.start()
        ready.open()
        #expect(finished.wait())
        monitor.stop()
        #expect(reports.all.map(\.phase) == [.afterWaiting])
        #expect(reports.all.first?.mode == tracking)
    }

    /// A stalled timer callout is not reported as only "phase afterWaiting": the report
    /// names what the loop was running (the engine records each callout's kind, Callouts.swift).
    @Test func aStallNamesTheCalloutKindTheLoopWasRunning() throws {
        let reported = Latch()
        let monitoring = Latch()
        let (loop, finished) = startLoopThread { loop in
            _ = monitoring.wait()  // the observer sees the phases from the start
            loop.add(EvTimer(after: .milliseconds(1)) { _ in
                stallUntilReported(reported)
                EvRunLoop.current.stop()
            }, forMode: .default)
            loop.run(mode: .default, timeout: .seconds(30))
        }
        let report = try firstStallReport(of: loop, monitoring: monitoring, finished: finished, reported: reported)
        #expect(report.callout == .timer)
        #expect(report.phase == .afterWaiting)
        #expect(report.description.contains("running a timer (phase afterWaiting, mode \(EvRunLoop.Mode.default.name))"))
    }

    /// Stalls a loop's thread once, in a block, until the monitor (backtraces in `style`) has
    /// reported it; returns the first report and the stopped monitor.
    private func stallOnce(backtraces style: EvStallMonitor.BacktraceStyle) throws -> (report: EvStallMonitor.Report?, monitor: EvStallMonitor) {
        let reports = EventLog<EvStallMonitor.Report>()
        let reported = Latch()
        let (loop, finished) = startLoopThread { loop in
            loop.add(keepAliveTimer(), forMode: .default)
            loop.run(mode: .default, timeout: .seconds(30))
        }
        let monitor = EvStallMonitor(loop: loop, configuration: quickStallConfiguration(style)) { report in
            reports.append(report)
            reported.open()
        }
        try monitor.start()
        try loop.perform(inModes: [.default], waitUntilDone: false) {
            stallUntilReported(reported)
            EvRunLoop.current.stop()
        }
        #expect(finished.wait())
        monitor.stop()
        return (reports.all.first, monitor)
    }

    @Test func theReportCarriesABacktraceOfTheStalledThread() throws {
        let (first, monitor) = try stallOnce(backtraces: .symbolicated)
        let report = try #require(first)
        let backtrace = try #require(report.backtrace, "\(report.backtraceUnavailableReason ?? "")")
        let symbols = backtrace.frames.compactMap(\.symbol)
        #expect(symbols.contains { $0.contains("stallUntilReported") }, "\(backtrace)")
        #expect(monitor.statistics.backtracesCaptured == 1)
    }

    @Test func aReportNamesTheLoopByItsThreadAndKeepsTheFramesThatMatter() throws {
        let worker = EvWorkerThread(name: "line-w1")
        let loop = try worker.start()
        let reports = EventLog<EvStallMonitor.Report>()
        let reported = Latch()
        let monitor = EvStallMonitor(loop: loop, configuration: quickStallConfiguration(.symbolicated)) { report in
            reports.append(report)
            reported.open()
        }
        try monitor.start()
        try worker.execute { stallUntilReported(reported) }
        try worker.submitAndWait {}  // the stall is over
        monitor.stop()
        worker.stop()
        let report = try #require(reports.all.first)
        #expect(report.loopName == "line-w1")
        #expect(report.threadID.map { $0 > 0 } == true)
        #expect(report.description.hasPrefix(#"EvStallMonitor: run loop "line-w1" stalled "#))
        let backtrace = try #require(report.backtrace, "\(report.backtraceUnavailableReason ?? "")")
        #expect(backtrace.frames.contains { $0.origin == .runLoopKit }, "the capture has the loop's machinery: \(backtrace.fullDescription)")
        let relevant = backtrace.relevantFrames
        #expect(relevant.contains { $0.symbol?.contains("stallUntilReported") == true }, "\(backtrace)\n\(backtrace.fullDescription)")
        #expect(relevant.allSatisfy { $0.origin == .application }, "\(backtrace)")
        #expect(!backtrace.description.contains("Callout") && !backtrace.description.contains("EvRunLoop."), "\(backtrace)")
    }

    @Test func addressOnlyBacktracesNameImagesButNoSymbols() throws {
        let backtrace = try #require(try stallOnce(backtraces: .addresses).report?.backtrace)
        #expect(backtrace.frames.count > 1)
        #expect(backtrace.frames.allSatisfy { $0.symbol == nil })
        #expect(backtrace.frames.contains { $0.image?.contains("RunLoopKitPackageTests") == true })
    }

    @Test func aStalledPhaseIsReportedOnceThenTheWatchdogParksUntilTheNextPhase() throws {
        let reported = Latch()
        let parksAtReport = Box<Int?>(nil)
        let monitorBox = Box<EvStallMonitor?>(nil)
        let (loop, finished) = startLoopThread { loop in
            loop.add(keepAliveTimer(), forMode: .default)
            loop.run(mode: .default, timeout: .seconds(30))
        }
        let monitor = EvStallMonitor(loop: loop, configuration: quickStallConfiguration()) { _ in
            // Read before the watchdog goes on: any park counted later happened after the report.
            parksAtReport.set(monitorBox.get?.statistics.watchdogParks)
            reported.open()
        }
        monitorBox.set(monitor)
        try monitor.start()
        let parkedAfterReport = Latch()
        try loop.perform(inModes: [.default], waitUntilDone: false) {
            stallUntilReported(reported)
            // Still stalled: the watchdog must not report this phase again but park.
            let deadline = ContinuousClock.now + .seconds(30)
            while monitor.statistics.watchdogParks <= parksAtReport.get ?? .max, ContinuousClock.now < deadline {
                sched_yield()
            }
            parkedAfterReport.open()
            EvRunLoop.current.stop()
        }
        #expect(parkedAfterReport.wait())
        #expect(finished.wait())
        #expect(monitor.statistics.stallsReported == 1)
        monitor.stop()
        monitorBox.set(nil)
    }

    @Test func anIdleLoopParksTheWatchdogInsteadOfCountingAsAStall() throws {
        let parksBeforeSleep = Box<Int?>(nil)
        let monitorBox = Box<EvStallMonitor?>(nil)
        let (loop, finished) = startLoopThread { loop in
            loop.add(keepAliveTimer(), forMode: .default)
            // Called after the monitor's observer (order Int.min) has recorded AfterWaiting: the
            // watchdog cannot park on that phase, so a park counted later is a park on the
            // loop's next sleep.
            loop.add(EvObserver(activities: .afterWaiting) { _, _ in
                if parksBeforeSleep.get == nil, let monitor = monitorBox.get, monitor.isRunning {
                    parksBeforeSleep.set(monitor.statistics.watchdogParks)
                }
            }, forMode: .default)
            loop.run(mode: .default, timeout: .seconds(30))
        }
        let monitor = EvStallMonitor(loop: loop, configuration: quickStallConfiguration())
        monitorBox.set(monitor)
        try monitor.start()
        // Wake the loop once so that it goes to sleep again under the monitor's eyes: once it
        // sleeps, as a wake-up sent before its run begins is dropped (C51).
        #expect(spinUntil { loop.isWaiting })
        try loop.perform(inModes: [.default], waitUntilDone: false) {}
        // The watchdog sees BeforeWaiting and parks (no timed wake-ups while the loop is idle).
        let deadline = ContinuousClock.now + .seconds(30)
        while monitor.statistics.watchdogParks <= parksBeforeSleep.get ?? .max, ContinuousClock.now < deadline { sched_yield() }
        #expect(monitor.statistics.watchdogParks > parksBeforeSleep.get ?? .max)
        #expect(monitor.statistics.stallsReported == 0)
        try loop.perform(inModes: [.default], waitUntilDone: false) { EvRunLoop.current.stop() }
        #expect(finished.wait())
        monitor.stop()
        monitorBox.set(nil)
    }

    @Test func stoppingRemovesTheObserverAndEndsTheWatchdogThread() throws {
        let name = "ev-stall-stop"
        let reported = Latch()
        let (loop, finished) = startLoopThread { loop in
            loop.add(keepAliveTimer(), forMode: .default)
            loop.run(mode: .default, timeout: .seconds(30))
        }
        let reportSeen = Latch()  // a Latch wakes one waiter: one for the stalled callout, one for the test
        let monitor = EvStallMonitor(loop: loop, configuration: quickStallConfiguration(name: name)) { _ in
            reported.open()
            reportSeen.open()
        }
        try monitor.start()
        #expect(monitor.isRunning)
        #expect(loop.contains(monitor.observer, forMode: .common))
        try loop.perform(inModes: [.default], waitUntilDone: false) { stallUntilReported(reported) }
        #expect(reportSeen.wait())
        #expect(threadNames().contains(name))  // the watchdog named itself before it could report

        monitor.stop()
        #expect(!monitor.isRunning)
        #expect(!monitor.observer.isValid)
        #expect(!loop.contains(monitor.observer, forMode: .common))
        #expect(!loop.contains(monitor.observer, forMode: .default))
        #expect(noThreadNamed(name))  // joined: gone
        #expect(throws: EvStallMonitorError.stopped) { try monitor.start() }
        monitor.stop()  // twice: nothing more

        try loop.perform(inModes: [.default], waitUntilDone: false) { EvRunLoop.current.stop() }
        #expect(finished.wait())
    }

    @Test func stopFromTheReportCallbackDoesNotDeadlock() throws {
        let stoppedInCallback = Latch()
        let box = Box<EvStallMonitor?>(nil)
        let (loop, finished) = startLoopThread { loop in
            loop.add(keepAliveTimer(), forMode: .default)
            loop.run(mode: .default, timeout: .seconds(30))
        }
        let monitor = EvStallMonitor(loop: loop, configuration: quickStallConfiguration()) { _ in
            box.get?.stop()
            stoppedInCallback.open()
        }
        box.set(monitor)
        try monitor.start()
        try loop.perform(inModes: [.default], waitUntilDone: false) {
            stallUntilReported(stoppedInCallback)
            EvRunLoop.current.stop()
        }
        #expect(finished.wait())
        #expect(!monitor.isRunning)
        #expect(!monitor.observer.isValid)
        box.set(nil)
    }

    @Test func startingTwiceOrOnAnExitedLoopThrows() throws {
        let (loop, finished) = startLoopThread { loop in
            loop.add(keepAliveTimer(), forMode: .default)
            loop.run(mode: .default, timeout: .seconds(30))
        }
        let monitor = EvStallMonitor(loop: loop, configuration: quickStallConfiguration())
        try monitor.start()
        #expect(throws: EvStallMonitorError.alreadyStarted) { try monitor.start() }
        monitor.stop()
        try loop.perform(inModes: [.default], waitUntilDone: false) { EvRunLoop.current.stop() }
        #expect(finished.wait())

        let tornDown = Latch()
        let exited = onLoopThread { loop in
            loop.add(EvSource(cancel: { _, _ in tornDown.open() }) {}, forMode: .default)
            return loop
        }
        #expect(tornDown.wait())
        let late = EvStallMonitor(loop: exited, configuration: quickStallConfiguration())
        #expect(throws: EvStallMonitorError.loopExited) { try late.start() }
    }

    @Test func theDefaultsAreTheSeeds() {
        let defaults = EvStallMonitor.Configuration()
        #expect(defaults.threshold == .milliseconds(80))
        #expect(defaults.consecutiveThresholds == 3)
        #expect(defaults.modes == [.common])
        #expect(defaults.backtrace == .symbolicated)
        #expect(defaults.reportsToStandardError)
    }
}
