/// The project's target for RunLoopKit on one figure, structured so that a run can say whether it
/// is met and, if not, how far off it is. Goals are always about RunLoopKit's value.
enum Goal: Sendable, Equatable {
    /// RunLoopKit's value ÷ `against`'s value at most `limit` ("≤ 1.15× libev").
    case ratioAtMost(Double, against: BackendID)
    /// RunLoopKit's value ÷ `against`'s value at least `limit` ("≥ 2× CF").
    case ratioAtLeast(Double, against: BackendID)
    /// RunLoopKit's value at most `limit`, in the figure's unit ("≤ 20 µs", "≤ 3").
    case atMost(Double)
    /// RunLoopKit's value strictly below `against`'s value ("< CF").
    case below(BackendID)
    /// Every one of these ("≤ 1.1× libev, ≤ 0.5× CF"): met when all are, a gap for each one
    /// missed, unmeasured when one of them could not be compared.
    case all([Goal])
    /// `goal` for another column of RunLoopKit's ("RunLoopKit precise ≤ 20 µs").
    indirect case of(BackendID, Goal)

    /// Whether one run met a goal.
    enum Status: Sendable, Equatable {
        case met
        /// Not met; `gap` says what was measured against what was wanted, e.g.
        /// "1.24× vs ≤ 1.15× libev" or "36.5 µs vs ≤ 20 µs".
        case gap(String)
        /// RunLoopKit, or the backend the goal compares with, was not measured.
        case unmeasured

        /// The table's status cell: "met", "gap 1.24× vs ≤ 1.15× libev", or "—".
        var text: String {
            switch self {
            case .met: "met"
            case .gap(let gap): "gap \(gap)"
            case .unmeasured: "—"
            }
        }

        /// For the JSON: the gap when the goal was missed.
        var gap: String? {
            if case .gap(let gap) = self { gap } else { nil }
        }

        /// For the JSON: true, false, or nil when nothing could be compared.
        var met: Bool? {
            switch self {
            case .met: true
            case .gap: false
            case .unmeasured: nil
            }
        }
    }

    /// The goal as the project sets it, for a figure in `unit`: "≤ 1.15× libev", "≥ 2× CF",
    /// "≤ 20 µs", "< CF", "≤ 2".
    func text(unit: String) -> String {
        switch self {
        case .ratioAtMost(let limit, let against): "≤ \(Self.number(limit))× \(against.shortTitle)"
        case .ratioAtLeast(let limit, let against): "≥ \(Self.number(limit))× \(against.shortTitle)"
        case .atMost(let limit): "≤ \(Self.number(limit))\(Self.shownUnit(unit))"
        case .below(let against): "< \(against.shortTitle)"
        case .all(let goals): goals.map { $0.text(unit: unit) }.joined(separator: ", ")
        case .of(let subject, let goal): "\(subject.title) \(goal.text(unit: unit))"
        }
    }

    /// Whether `figure` (RunLoopKit's value, against another backend's where the goal says so)
    /// meets this goal.
    func status(of figure: Figure) -> Status {
        if case .of(let subject, let goal) = self {
            var shifted = figure
            shifted.values[.runloopkit] = figure.values[subject]
            return goal.status(of: shifted)
        }
        guard let value = figure.values[.runloopkit], value.isFinite else { return .unmeasured }
        switch self {
        case .ratioAtMost(let limit, let against), .ratioAtLeast(let limit, let against):
            guard let ratio = figure.ratio(.runloopkit, to: against), ratio.isFinite else { return .unmeasured }
            let atMost = if case .ratioAtMost = self { true } else { false }
            if atMost ? ratio <= limit : ratio >= limit { return .met }
            return .gap("\(TableReport.format(ratio))× vs \(atMost ? "≤" : "≥") \(Self.number(limit))× \(against.shortTitle)")
        case .atMost(let limit):
            if value <= limit { return .met }
            let unit = Self.shownUnit(figure.unit)
            return .gap("\(TableReport.format(value))\(unit) vs ≤ \(Self.number(limit))\(unit)")
        case .below(let against):
            guard let other = figure.values[against], other.isFinite else { return .unmeasured }
            if value < other { return .met }
            let unit = Self.shownUnit(figure.unit)
            return .gap("\(TableReport.format(value))\(unit) vs < \(against.shortTitle)'s "
                + "\(TableReport.format(other))\(unit)")
        case .of:
            return .unmeasured  // handled above
        case .all(let goals):
            let statuses = goals.map { $0.status(of: figure) }
            let gaps = statuses.compactMap(\.gap)
            if !gaps.isEmpty { return .gap(gaps.joined(separator: "; ")) }
            return statuses.contains(.unmeasured) ? .unmeasured : .met
        }
    }

    /// Absolute goals show units of time ("≤ 20 µs"); counts and factors read as bare numbers
    /// ("≤ 3" fds, "≤ 2" for a growth factor), as the project sets them.
    private static func shownUnit(_ unit: String) -> String {
        ["ns", "µs", "ms", "s"].contains(unit) ? " \(unit)" : ""
    }

    /// 1.15 → "1.15", 2 → "2", 20 → "20".
    private static func number(_ value: Double) -> String {
        value == value.rounded() && abs(value) < 1e15 ? String(Int(value)) : String(value)
    }
}
