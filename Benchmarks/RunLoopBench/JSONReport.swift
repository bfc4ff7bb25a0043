import Foundation

/// The machine-readable form of a run (`--json PATH`): every figure with its value per backend,
/// the RunLoopKit ratios and, where the project sets a goal, whether this run met it (`met`) and
/// otherwise by how much (`gap`, e.g. "1.24× vs ≤ 1.15× libev"), plus the run's context and notes.
struct JSONReport: Encodable {
    struct Entry: Encodable {
        let id: String
        let scenario: String
        let label: String
        let unit: String
        let better: Better
        /// The goal as the project sets it, e.g. "≤ 1.15× libev".
        let goal: String?
        /// Whether RunLoopKit met the goal in this run; absent without a goal or a measurement.
        let met: Bool?
        /// What was measured against what is wanted, when the goal was missed.
        let gap: String?
        let values: [String: Double]
        let ratios: [String: Double]
    }

    let context: [String: String]
    let backends: [String]
    let figures: [Entry]
    let notes: [String]
    var gate: [GateVerdict]?

    init(results: BenchResults, gate: [GateVerdict]? = nil) {
        context = results.context
        backends = results.backends.map(\.rawValue)
        notes = results.notes
        self.gate = gate
        figures = results.figures.map { figure in
            var ratios: [String: Double] = [:]
            for (a, b) in TableReport.ratioPairs {
                if let r = figure.ratio(a, to: b), r.isFinite { ratios["\(a.rawValue)/\(b.rawValue)"] = r }
            }
            return Entry(
                id: figure.id, scenario: figure.scenario, label: figure.label, unit: figure.unit,
                better: figure.better, goal: figure.goalText, met: figure.goalStatus?.met,
                gap: figure.goalStatus?.gap,
                values: Dictionary(uniqueKeysWithValues: figure.values.filter { $0.value.isFinite }
                    .map { ($0.key.rawValue, $0.value) }),
                ratios: ratios)
        }
    }

    func write(to path: String) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        try encoder.encode(self).write(to: URL(fileURLWithPath: path))
    }
}
