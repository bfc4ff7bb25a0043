#if Metrics
import CoreMetrics
import RunLoopKit
import Synchronization

/// Exports a run loop's ``RunLoopKit/EvRunLoop/metrics`` through swift-metrics.
///
/// Each ``export()`` takes one snapshot and reports what changed since the previous one:
///
/// | metric | kind | meaning |
/// | --- | --- | --- |
/// | `<label>_iterations_total` | counter | iterations of the loop's runs |
/// | `<label>_sleeps_total` | counter | times the loop went to sleep |
/// | `<label>_callouts_total`, dimension `kind` | counter | callouts by kind (`timer`, `source`, `version1_source`, `block`, `main_queue`, `observer`, `libev_source`) |
/// | `<label>_asleep_nanoseconds_total` | counter | time asleep (timing metrics only) |
/// | `<label>_awake_nanoseconds_total` | counter | time awake inside runs (timing metrics only) |
/// | `<label>_longest_callout_nanoseconds` | gauge | the longest callout so far (timing metrics only) |
/// | `<label>_timer_lateness_nanoseconds_total` | counter | summed timer lateness (timing metrics only) |
/// | `<label>_timed_timer_firings_total` | counter | timer firings measured for lateness |
/// | `<label>_max_timer_lateness_nanoseconds` | gauge | the latest a timer fired (timing metrics only) |
///
/// The durations stay zero unless ``RunLoopKit/EvRunLoop/collectsTimingMetrics`` is on. Export
/// from any thread, on whatever schedule suits: ``run(every:)`` exports periodically until its
/// task is cancelled.
public final class EvLoopMetricsExporter: Sendable {
    /// The loop whose metrics are exported.
    public let loop: EvRunLoop

    private let iterations: Counter
    private let sleeps: Counter
    private let callouts: [(EvRunLoop.CalloutKind, Counter)]
    private let asleep: Counter
    private let awake: Counter
    private let longestCallout: Gauge
    private let lateness: Counter
    private let timedFirings: Counter
    private let maxLateness: Gauge
    private let previous: Mutex<EvRunLoop.Metrics?>

    /// An exporter of `loop`'s metrics.
    ///
    /// - Parameters:
    ///   - loop: the loop to export.
    ///   - label: the prefix of every metric's label; `runloop` by default.
    ///   - dimensions: dimensions added to every metric (say `[("loop", "main")]`).
    ///   - factory: where the metrics go; the bootstrapped `MetricsSystem.factory` by default.
    public init(
        loop: EvRunLoop, label: String = "runloop", dimensions: [(String, String)] = [],
        factory: any MetricsFactory = MetricsSystem.factory
    ) {
        self.loop = loop
        func counter(_ name: String, _ extra: [(String, String)] = []) -> Counter {
            Counter(label: "\(label)_\(name)", dimensions: dimensions + extra, factory: factory)
        }
        func gauge(_ name: String) -> Gauge {
            Gauge(label: "\(label)_\(name)", dimensions: dimensions, factory: factory)
        }
        iterations = counter("iterations_total")
        sleeps = counter("sleeps_total")
        callouts = EvRunLoop.CalloutKind.allCases.map { kind in
            (kind, counter("callouts_total", [("kind", Self.dimensionValue(kind))]))
        }
        asleep = counter("asleep_nanoseconds_total")
        awake = counter("awake_nanoseconds_total")
        longestCallout = gauge("longest_callout_nanoseconds")
        lateness = counter("timer_lateness_nanoseconds_total")
        timedFirings = counter("timed_timer_firings_total")
        maxLateness = gauge("max_timer_lateness_nanoseconds")
        previous = Mutex(nil)
    }

    /// Takes a snapshot of the loop's metrics and reports the changes since the last export.
    /// Safe from any thread; concurrent exports are serialised.
    public func export() {
        previous.withLock { previous in
            let now = loop.metrics
            let before = previous
            func delta(_ value: UInt64, _ old: UInt64?) -> Int64 { Int64(clamping: value &- (old ?? 0)) }
            func delta(_ value: Duration, _ old: Duration?) -> Int64 { Self.nanoseconds(value - (old ?? .zero)) }
            iterations.increment(by: delta(now.iterations, before?.iterations))
            sleeps.increment(by: delta(now.sleeps, before?.sleeps))
            for (kind, counter) in callouts {
                counter.increment(by: delta(now.callouts[kind], before?.callouts[kind]))
            }
            asleep.increment(by: delta(now.timeAsleep, before?.timeAsleep))
            awake.increment(by: delta(now.timeAwake, before?.timeAwake))
            lateness.increment(by: delta(now.totalTimerLateness, before?.totalTimerLateness))
            timedFirings.increment(by: delta(now.timedTimerFirings, before?.timedTimerFirings))
            longestCallout.record(Self.nanoseconds(now.longestCallout))
            maxLateness.record(Self.nanoseconds(now.maxTimerLateness))
            previous = now
        }
    }

    /// Exports every `interval` until the calling task is cancelled (then returns normally).
    ///
    /// - Parameter interval: the time between exports; 10 s by default.
    public func run(every interval: Duration = .seconds(10)) async {
        while !Task.isCancelled {
            export()
            do {
                try await Task.sleep(for: interval)
            } catch {
                break  // cancelled
            }
        }
        export()
    }

    private static func nanoseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        return seconds.multipliedReportingOverflow(by: 1_000_000_000).partialValue &+ attoseconds / 1_000_000_000
    }

    /// The `kind` dimension's value for a callout kind.
    static func dimensionValue(_ kind: EvRunLoop.CalloutKind) -> String {
        switch kind {
        case .timer: "timer"
        case .source: "source"
        case .version1Source: "version1_source"
        case .block: "block"
        case .mainQueue: "main_queue"
        case .observer: "observer"
        case .libevSource: "libev_source"
        }
    }
}
#endif
