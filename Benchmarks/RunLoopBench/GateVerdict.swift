import Foundation

/// The outcome of one gate limit: the measured ratio, whether it held, and by how much.
struct GateVerdict: Encodable {
    let figure: String
    let subject: String
    let against: String
    let ratio: Double?
    let max: Double?
    let min: Double?
    let passed: Bool
    /// The measurement this verdict comes from: 1, or 2… after re-measuring.
    let attempt: Int
    let message: String

    init(limit: GateFile.Limit, subject fileSubject: BackendID, results: BenchResults, attempt: Int) {
        let subject = limit.subject ?? fileSubject
        figure = limit.figure
        self.subject = subject.rawValue
        against = limit.against?.rawValue ?? "none"
        max = limit.max
        min = limit.min
        self.attempt = attempt
        let name = "\(limit.figure) \(subject.rawValue)" + (limit.against.map { "/\($0.rawValue)" } ?? "")
        guard let figure = results[limit.figure] else {
            ratio = nil
            passed = false
            message = "\(name): figure not measured"
            return
        }
        guard let ratio = limit.against.map({ figure.ratio(subject, to: $0) }) ?? figure.values[subject],
              ratio.isFinite else {
            self.ratio = nil
            passed = false
            message = "\(name): no ratio (\(subject.title) or \(limit.against?.title ?? "its baseline") not measured)"
            return
        }
        self.ratio = ratio
        let shown = String(format: "%.3f", ratio)
        if let max = limit.max {
            passed = ratio <= max
            let by = (ratio / max - 1) * 100
            message = passed
                ? "\(name) = \(shown) ≤ max \(max) (margin \(String(format: "%.0f", -by))%)"
                : "\(name) = \(shown) > max \(max): \(String(format: "%.1f", by))% over the limit"
        } else {
            let min = limit.min ?? 0
            passed = ratio >= min
            let by = (1 - ratio / min) * 100
            message = passed
                ? "\(name) = \(shown) ≥ min \(min) (margin \(String(format: "%.0f", -by))%)"
                : "\(name) = \(shown) < min \(min): \(String(format: "%.1f", by))% under the limit"
        }
    }

    /// One line per limit, then the overall result.
    static func report(_ verdicts: [GateVerdict]) -> String {
        var lines = ["Gate (ratios from the same run):"]
        for v in verdicts {
            let retried = v.attempt > 1 ? " [attempt \(v.attempt)]" : ""
            lines.append("  \(v.passed ? "PASS" : "FAIL")  \(v.message)\(retried)")
        }
        let failed = verdicts.filter { !$0.passed }.count
        lines.append(failed == 0
            ? "gate passed: \(verdicts.count) limit(s) held"
            : "gate FAILED: \(failed) of \(verdicts.count) limit(s) failed after re-measuring")
        return lines.joined(separator: "\n") + "\n"
    }
}
