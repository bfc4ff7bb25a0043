import Foundation
import RunLoopKit
import Testing

/// Computes (never sleeps) until `duration` has passed, so the time is spent inside the callout.
@inline(never)
private func busy(for duration: Duration) {
    let end = ContinuousClock.now + duration
    while ContinuousClock.now < end {}
}

/// `EvRunLoop.metrics`, `currentCallout` and `collectsTimingMetrics`: what a
/// loop runs and how much, recorded by the callout trampolines.
@Suite struct LoopMetricsTests {
    @Test func currentCalloutNamesEachKindWhileItRunsAndNothingOutsideCallouts() {
        let seen = onLoopThread { loop -> [String] in
            let log = EventLog<String>()
            @Sendable func note(_ label: String) { log.append("\(label): \(loop.currentCallout.map { "\($0)" } ?? "none")") }
            let port = EvMessagePort<Int> { _ in note("port") }
            loop.add(port, forMode: .default)
            let source = EvSource { note("source") }
            loop.add(source, forMode: .default)
            let timer = EvTimer(after: .milliseconds(1)) { _ in
                note("timer")
                // A nested run: its block is named while it runs, then the timer again (R58).
                loop.perform(inModes: [.default]) { note("nested block") }
                loop.run(mode: .default, timeout: .zero)
                note("timer after nested run")
                loop.stop()
            }
            // The first iteration polls (a source runs); the second sleeps, and its BeforeWaiting
            // adds the timer that ends the run, so every kind is seen whatever the machine's speed.
            loop.add(once(.beforeWaiting) {
                note("observer")
                loop.add(timer, forMode: .default)
            }, forMode: .default)
            loop.perform(inModes: [.default]) { note("block") }
            source.signal()
            try? port.send(1)
            note("before run")
            loop.run(mode: .default, timeout: .seconds(30))
            note("after run")
            port.invalidate()
            source.invalidate()
            return log.all
        }
        #expect(seen.first == "before run: none")
        #expect(seen.last == "after run: none")
        for expected in [
            "block: block", "source: source", "observer: observer", "port: version-1 source", "timer: timer",
            "nested block: block", "timer after nested run: timer",
        ] {
            #expect(seen.contains(expected), "\(expected) in \(seen)")
        }
    }

    @Test func metricsCountIterationsSleepsAndCalloutsByKind() {
        let (before, after) = onLoopThread { loop -> (EvRunLoop.Metrics, EvRunLoop.Metrics) in
            let before = loop.metrics
            let source = EvSource {}
            loop.add(source, forMode: .default)
            let observer = EvObserver(activities: .exit) { _, _ in }
            loop.add(observer, forMode: .default)
            loop.add(EvTimer(after: .milliseconds(5)) { _ in loop.stop() }, forMode: .default)
            loop.perform(inModes: [.default]) {}
            loop.perform(inModes: [.default]) {}
            source.signal()
            loop.run(mode: .default, timeout: .seconds(30))
            source.invalidate()
            return (before, loop.metrics)
        }
        #expect(before.callouts.total == 0 && before.iterations == 0)
        #expect(after.callouts.timers == 1)
        #expect(after.callouts.sources == 1)
        #expect(after.callouts.blocks == 2)
        #expect(after.callouts.observers == 1)
        #expect(after.callouts.version1Sources == 0 && after.callouts.mainQueue == 0)
        #expect(after.callouts.total == 5)
        #expect(after.callouts[.block] == 2)
        // The source ran in the first iteration, so it polled (R20.6); the timer needed a sleep.
        #expect(after.iterations >= 2)
        #expect(after.sleeps >= 1 && after.sleeps < after.iterations)
    }

    @Test func timingIsOffByDefaultAndCountsNoTime() {
        let metrics = onLoopThread { loop -> EvRunLoop.Metrics in
            loop.add(EvTimer(after: .milliseconds(5)) { _ in busy(for: .milliseconds(2)) }, forMode: .default)
            loop.run(mode: .default, timeout: .seconds(30))
            return loop.metrics
        }
        #expect(!metrics.collectsTiming)
        #expect(metrics.callouts.timers == 1 && metrics.sleeps >= 1)
        #expect(metrics.timeAsleep == .zero && metrics.timeAwake == .zero)
        #expect(metrics.longestCallout == .zero && metrics.longestCalloutKind == nil)
        #expect(metrics.timedTimerFirings == 0 && metrics.maxTimerLateness == .zero)
    }

    @Test func timingMeasuresSleepTheLongestCalloutAndTimerLateness() {
        let (metrics, wall) = onLoopThread { loop -> (EvRunLoop.Metrics, Duration) in
            loop.collectsTimingMetrics = true
            // The first timer computes for 20 ms; the second, due 1 ms after it, waits for it:
            // it fires at least 19 ms late whichever step picks it up. Both dates come from one
            // clock reading: made one after the other, the second could be due later than 1 ms
            // after the first on a loaded machine.
            let base = ContinuousClock.now
            loop.add(EvTimer(fireAt: base + .milliseconds(10)) { _ in busy(for: .milliseconds(20)) }, forMode: .default)
            loop.add(EvTimer(fireAt: base + .milliseconds(11)) { _ in }, forMode: .default)
            let start = ContinuousClock.now
            loop.run(mode: .default, timeout: .seconds(30))
            return (loop.metrics, start.duration(to: .now))
        }
        #expect(metrics.collectsTiming)
        #expect(metrics.longestCalloutKind == .timer)
        #expect(metrics.longestCallout >= .milliseconds(20))
        #expect(metrics.timedTimerFirings == 2)
        #expect(metrics.maxTimerLateness >= .milliseconds(19))
        #expect(metrics.averageTimerLateness >= metrics.maxTimerLateness / 2)
        // It slept before the first timer, and was awake at least through the 20 ms callout;
        // the two never add up to more than the run took.
        #expect(metrics.timeAsleep > .zero)
        #expect(metrics.timeAwake >= .milliseconds(20))
        #expect(metrics.timeAsleep + metrics.timeAwake <= wall)
    }

    @Test func metricsAreReadableFromAnotherThreadWhileTheLoopRuns() {
        let blocksRun = Latch()
        let (loop, finished) = startLoopThread { loop in
            loop.add(keepAliveTimer(), forMode: .default)
            loop.run(mode: .default, timeout: .seconds(30))
        }
        for _ in 0..<3 { try? loop.perform(inModes: [.default], waitUntilDone: false) {} }
        try? loop.perform(inModes: [.default], waitUntilDone: false) { blocksRun.open() }
        #expect(blocksRun.wait())
        #expect(spinUntil { loop.metrics.callouts.blocks == 4 })
        loop.stop()
        #expect(finished.wait())
    }
}
