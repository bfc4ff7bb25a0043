import Foundation

/// The results as one table: a row per figure, a column per backend, then the ratios
/// RunLoopKit/libev, RunLoopKit/CF (and RunLoopKit/default actor) from the same run, then the
/// project's goal and its status in this run ("met", or the gap). Rendered as aligned text for
/// the terminal or as Markdown for the README.
struct TableReport {
    let results: BenchResults

    static let ratioPairs: [(BackendID, BackendID)] = [
        (.runloopkit, .libev), (.runloopkit, .cf), (.runloopkit, .nio), (.runloopkit, .defaultActor),
    ]

    static let scenarioTitles: [String: String] = [
        "wakeup": "One-way cross-thread wake-up latency",
        "perform": "Cross-thread perform throughput",
        "timers": "Timer lateness",
        "timercpu": "Timer CPU per fire, beside lateness",
        "scaling": "Timer scaling (add / cancel)",
        "modes": "Mode switching",
        "footprint": "Footprint",
        "mainqueue": "Main-queue latency (DispatchQueue.main.async → block)",
        "actorhop": "Actor hop round trip (await actor.method())",
        "stallmonitor": "Stall monitor overhead",
        "instructions": "Instructions per operation (callgrind; all threads, set-up excluded)",
        "hiredis": "hiredis round trips (redisLibevAttach: EvLibevSource vs a plain libev loop)",
    ]

    /// The columns of a table: backends, ratio pairs, and whether to show the goal and status.
    private struct Columns {
        var backends: [BackendID]
        var ratios: [(BackendID, BackendID)]
        var goal: Bool
    }

    /// Every column, for the single terminal table (ratios, goal and status only if any figure
    /// has one).
    private var allColumns: Columns {
        Columns(backends: results.backends,
                ratios: Self.ratioPairs.filter { p in results.figures.contains { $0.ratio(p.0, to: p.1) != nil } },
                goal: results.figures.contains { $0.goal != nil })
    }

    /// Only the columns that have a value in `figures`, for one Markdown section.
    private func columns(for figures: [Figure]) -> Columns {
        Columns(
            backends: results.backends.filter { b in figures.contains { $0.shows(b) } },
            ratios: Self.ratioPairs.filter { p in figures.contains { $0.ratio(p.0, to: p.1) != nil } },
            goal: figures.contains { $0.goal != nil })
    }

    private func header(_ columns: Columns) -> [String] {
        ["figure", "unit"] + columns.backends.map(\.title)
            + columns.ratios.map { "\($0.0.shortTitle)/\($0.1.shortTitle)" }
            + (columns.goal ? ["goal", "status"] : [])
    }

    private func row(_ figure: Figure, _ columns: Columns) -> [String] {
        [figure.label, figure.unit]
            + columns.backends.map { figure.values[$0].map(Self.format) ?? "—" }
            + columns.ratios.map { figure.ratio($0.0, to: $0.1).map { String(format: "%.2f×", $0) } ?? "—" }
            + (columns.goal ? [figure.goalText ?? "", figure.goalStatus?.text ?? ""] : [])
    }

    /// Scenarios in the order they ran, each with its figures.
    private var sections: [(String, [Figure])] {
        var order: [String] = []
        var byScenario: [String: [Figure]] = [:]
        for figure in results.figures {
            if byScenario[figure.scenario] == nil { order.append(figure.scenario) }
            byScenario[figure.scenario, default: []].append(figure)
        }
        return order.map { ($0, byScenario[$0]!) }
    }

    /// Aligned plain text: one table, scenarios separated by a title line.
    func text() -> String {
        enum Line { case blank, title(String), cells([String]) }
        let columns = allColumns
        let header = header(columns)
        var lines: [Line] = []
        for (index, (scenario, figures)) in sections.enumerated() {
            if index > 0 { lines.append(.blank) }
            lines.append(.title(Self.scenarioTitles[scenario] ?? scenario))
            lines.append(contentsOf: figures.map { .cells(row($0, columns)) })
        }
        var widths = header.map(\.count)
        for case let .cells(cells) in lines {
            for (i, cell) in cells.enumerated() { widths[i] = max(widths[i], cell.count) }
        }
        func render(_ cells: [String]) -> String {
            cells.enumerated().map { i, cell in
                let pad = String(repeating: " ", count: max(0, widths[i] - cell.count))
                return i < 2 || (columns.goal && i >= cells.count - 2) ? cell + pad : pad + cell
            }.joined(separator: "  ").trimmingCharacters(in: .whitespaces)
        }
        let rule = String(repeating: "─", count: widths.reduce(0, +) + 2 * (widths.count - 1))
        var out = [render(header), rule]
        for line in lines {
            switch line {
            case .blank: out.append("")
            case .title(let title): out.append("▸ " + title)
            case .cells(let cells): out.append(render(cells))
            }
        }
        out.append("")
        out.append(contentsOf: results.notes.map { "note: \($0)" })
        return out.joined(separator: "\n") + "\n"
    }

    /// Markdown: a heading and a table per scenario (after its pictures, if `plots` has any),
    /// then the notes; meant to be pasted into (or generated as) the README's performance section.
    func markdown(plots: PlotPages? = nil) -> String {
        var out = ["## Performance", "", context(), ""]
        for (scenario, figures) in sections {
            let columns = columns(for: figures)
            let header = header(columns)
            out.append("### \(Self.scenarioTitles[scenario] ?? scenario)")
            out.append("")
            out.append(contentsOf: plots?.readme(scenario) ?? [])
            out.append("| " + header.joined(separator: " | ") + " |")
            out.append("|" + header.indices.map { i in
                i < 2 || (columns.goal && i >= header.count - 2) ? " --- |" : " ---: |"
            }.joined())
            for figure in figures {
                out.append("| " + row(figure, columns).map { $0.replacingOccurrences(of: "|", with: "\\|") }
                    .joined(separator: " | ") + " |")
            }
            out.append("")
        }
        if !results.notes.isEmpty {
            out.append(contentsOf: results.notes.map { "- \($0)" })
            out.append("")
        }
        return out.joined(separator: "\n")
    }

    /// One sentence saying where and how the numbers were taken.
    private func context() -> String {
        let c = results.context
        var parts: [String] = []
        if let kernel = c["kernel"] { parts.append(kernel) }
        if let cores = c["cores"] { parts.append("\(cores) cores") }
        if let libev = c["libev"] { parts.append("libev \(libev)") }
        if let date = c["date"] { parts.append(String(date.prefix(10))) }
        var text = "Measured with `make bench` (\(parts.joined(separator: ", "))). "
            + "All backends ran in the same process and the same run, interleaved (wake-ups sample by "
            + "sample, other scenarios in rounds of rotating order); ratios are taken within that run. "
            + "Latencies are HDR-histogram percentiles. The goal column is the project's target for "
            + "RunLoopKit; status says whether this run met it or, if not, the gap: what was measured "
            + "against what is wanted."
        if let sizes = c["sizes"] { text += " Sizes: \(sizes)." }
        if let pinning = c["pinning"], pinning != "off" { text += " Pinning: \(pinning)." }
        return text
    }

    static func format(_ value: Double) -> String {
        if value.isNaN { return "—" }
        switch abs(value) {
        case 100...: return String(format: "%.0f", value)
        case 10...: return String(format: "%.1f", value)
        default: return String(format: "%.2f", value)
        }
    }
}
