import Histogram

/// Latencies in nanoseconds, kept in an HDR histogram (3 significant digits, up to an hour).
struct Latencies: Sendable {
    private(set) var histogram = Histogram<UInt64>(
        lowestDiscernibleValue: 1, highestTrackableValue: 3_600_000_000_000,
        numberOfSignificantValueDigits: .three)

    var count: UInt64 { histogram.totalCount }

    mutating func record(_ ns: UInt64) {
        _ = histogram.record(min(ns, histogram.highestTrackableValue))
    }

    mutating func merge(_ other: Latencies) {
        histogram.add(other.histogram)
    }

    /// The value at `percentile` (0...100), in microseconds.
    func microseconds(atPercentile percentile: Double) -> Double {
        Double(histogram.valueAtPercentile(percentile)) / 1000
    }

    /// The largest value recorded, in microseconds.
    var maxMicroseconds: Double { Double(histogram.maxRecorded) / 1000 }

    /// p50, p90, p99, p99.9 and max as figures `<prefix>.p50` … `<prefix>.max`, in µs.
    static func percentileFigures(
        prefix: String, scenario: String, label: String, of latencies: [BackendID: Latencies],
        goals: [String: Goal] = [:], noEquivalent: Set<BackendID> = []
    ) -> [Figure] {
        let points: [(String, String, Double?)] = [
            ("p50", "p50", 50), ("p90", "p90", 90), ("p99", "p99", 99), ("p999", "p99.9", 99.9),
            ("max", "max", nil),
        ]
        return points.map { key, title, percentile in
            var figure = Figure(id: "\(prefix).\(key)", scenario: scenario, label: "\(label) \(title)",
                                unit: "µs", better: .lower, goal: goals[key])
            figure.noEquivalent = noEquivalent
            for (backend, values) in latencies where values.count > 0 {
                figure.values[backend] = percentile.map { values.microseconds(atPercentile: $0) }
                    ?? values.maxMicroseconds
            }
            if key == "p50" { figure.distribution = latencies.filter { $0.value.count > 0 } }
            return figure
        }
    }
}
