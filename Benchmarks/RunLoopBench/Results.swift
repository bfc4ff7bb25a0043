import Foundation

/// Whether smaller or larger values of a figure are better.
enum Better: String, Codable, Sendable { case lower, higher }

/// One measured quantity (say, wake-up p50) with a value per backend, all from the same run.
struct Figure: Sendable {
    /// Stable name used by gate.json and the JSON output, e.g. `wakeup.p50`.
    let id: String
    /// The scenario that measures it: wakeup, perform, timers, …, mainqueue, actorhop.
    let scenario: String
    /// What a reader sees in the table.
    let label: String
    let unit: String
    let better: Better
    /// The project's target for RunLoopKit, where it sets one.
    var goal: Goal?
    var values: [BackendID: Double] = [:]
    /// Backends that have no equivalent of this figure (libev has no main loop): their cell
    /// shows "—", and a Markdown section keeps their column rather than leaving it out.
    var noEquivalent: Set<BackendID> = []
    /// The latencies a p50 figure's percentiles come from, per backend: what the plots draw.
    var distribution: [BackendID: Latencies]?

    init(id: String, scenario: String, label: String, unit: String, better: Better,
         goal: Goal? = nil) {
        self.id = id
        self.scenario = scenario
        self.label = label
        self.unit = unit
        self.better = better
        self.goal = goal
    }

    /// `values[subject] / values[against]`, if both were measured and the ratio is finite.
    func ratio(_ subject: BackendID, to against: BackendID) -> Double? {
        guard let a = values[subject], let b = values[against], b != 0 else { return nil }
        let ratio = a / b
        return ratio.isFinite ? ratio : nil
    }

    /// Whether `backend` has a cell of its own in this figure's row: a value, or "—" for no
    /// equivalent.
    func shows(_ backend: BackendID) -> Bool {
        values[backend] != nil || noEquivalent.contains(backend)
    }

    /// The goal as the project sets it ("≤ 1.15× libev"), if there is one.
    var goalText: String? { goal?.text(unit: unit) }

    /// Whether this run met the goal, if there is one.
    var goalStatus: Goal.Status? { goal?.status(of: self) }
}

/// Everything one run measured, in scenario order, plus notes a reader should see.
struct BenchResults: Sendable {
    var figures: [Figure] = []
    /// Where and how the run happened (machine, kernel, libev backend, sizes).
    var context: [String: String] = [:]
    var notes: [String] = []
    var backends: [BackendID] = []

    mutating func append(_ more: [Figure]) { figures.append(contentsOf: more) }

    subscript(id: String) -> Figure? { figures.first { $0.id == id } }

    /// Replaces the figures of `scenario` with `fresh` (a re-measurement), keeping their place.
    mutating func replace(scenario: String, with fresh: [Figure]) {
        guard let first = figures.firstIndex(where: { $0.scenario == scenario }) else {
            append(fresh)
            return
        }
        figures.removeAll { $0.scenario == scenario }
        figures.insert(contentsOf: fresh, at: min(first, figures.count))
    }
}

/// A line on standard error (above the progress line), so standard output holds only the report.
func log(_ message: String) {
    Progress.shared.message(message)
}

/// `items` rotated left by `count`: the order backends run in during round `count`, so no
/// backend always goes first.
func rotated<T>(_ items: [T], by count: Int) -> [T] {
    guard !items.isEmpty else { return items }
    let k = count % items.count
    return Array(items[k...] + items[..<k])
}
