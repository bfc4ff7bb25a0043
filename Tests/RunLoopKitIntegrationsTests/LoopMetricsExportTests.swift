#if Metrics
import CoreMetrics
import Foundation
import MetricsTestKit
import RunLoopKit
import RunLoopKitMetrics
import Testing

/// RunLoopKitMetrics: a loop's metrics exported through swift-metrics, as deltas between exports.
@Suite struct LoopMetricsExportTests {
    /// Runs `timers` one-shot timers and `blocks` perform-blocks on `loop`'s thread.
    private func work(on loop: EvRunLoop, timers: Int, blocks: Int) {
        let done = Latch()
        try? loop.perform(inModes: [.default], waitUntilDone: false) {
            for index in 0..<timers {
                loop.add(EvTimer(after: .milliseconds(1 + index)) { _ in if index == timers - 1 { done.open() } }, forMode: .default)
            }
            for _ in 0..<blocks { loop.perform(inModes: [.default]) {} }
        }
        #expect(done.wait())
    }

    @Test func exportReportsCalloutsByKindAndOnlyTheChangeSinceTheLastExport() throws {
        let (loop, finished) = startLoopThread { loop in
            loop.collectsTimingMetrics = true
            loop.add(EvTimer(after: .seconds(3600)) { _ in }, forMode: .default)
            loop.run(mode: .default, timeout: .seconds(60))
        }
        let metrics = TestMetrics()
        let exporter = EvLoopMetricsExporter(loop: loop, label: "loop", dimensions: [("name", "worker")], factory: metrics)
        work(on: loop, timers: 3, blocks: 2)
        // Asleep: no iteration between the export and the look at the loop's count below.
        let safetyNet = ContinuousClock.now + .seconds(30)
        while !loop.isWaiting && ContinuousClock.now < safetyNet { sched_yield() }
        #expect(loop.isWaiting)
        exporter.export()
        let timers = try metrics.expectCounter("loop_callouts_total", [("name", "worker"), ("kind", "timer")])
        let blocks = try metrics.expectCounter("loop_callouts_total", [("name", "worker"), ("kind", "block")])
        #expect(timers.totalValue == 3)
        #expect(blocks.totalValue == 3)  // the two blocks and the one that scheduled them
        let iterations = try metrics.expectCounter("loop_iterations_total", [("name", "worker")])
        #expect(iterations.totalValue == Int64(loop.metrics.iterations))
        let asleep = try metrics.expectCounter("loop_asleep_nanoseconds_total", [("name", "worker")])
        #expect(asleep.totalValue > 0)
        work(on: loop, timers: 2, blocks: 0)
        exporter.export()
        #expect(timers.totalValue == 5)
        #expect(timers.values == [3, 2], "each export adds only what changed")
        let longest = try metrics.expectGauge("loop_longest_callout_nanoseconds", [("name", "worker")])
        #expect(longest.lastValue.map { $0 > 0 } == true)
        loop.stop()
        #expect(finished.wait())
    }
}
#endif
