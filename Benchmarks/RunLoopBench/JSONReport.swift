import Foundation

/// The machine-readable form of a run (`--json PATH`): every figure with its value per backend
/// and the RunLoopKit ratios, plus the run's context and notes.
struct JSONReport: Encodable {
    struct Entry: Encodable {
        let id: String
        let scenario: String
        let label: String
        let unit: String
        let better: Better
        let goal: String?
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
                better: figure.better, goal: figure.goal,
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
