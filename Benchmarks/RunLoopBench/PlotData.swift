import Foundation

/// A table a picture is drawn from, written as the tab-separated text gnuplot reads: a header
/// line, then rows of a label (or x values) and one column per backend, "-" where a backend has
/// no value.
struct PlotTable {
    var leading: [String]
    var backends: [BackendID]
    var rows: [(leading: [String], values: [Double?])]

    var text: String {
        let header = leading + backends.map(\.title)
        let lines = rows.map { row in
            row.leading + row.values.map { $0.map { String(format: "%.4g", $0) } ?? "-" }
        }
        return ([header] + lines).map { $0.joined(separator: "\t") }.joined(separator: "\n") + "\n"
    }

    /// How many values `backend`'s column holds (0 if it has no column).
    func count(of backend: BackendID) -> Int {
        guard let column = backends.firstIndex(of: backend) else { return 0 }
        return rows.filter { $0.values[column] != nil }.count
    }

    /// The gnuplot colours of the backend columns, in order, as one argument.
    var colours: String { backends.map(\.plotColour).joined(separator: " ") }
}

extension PlotSpec {
    /// The tables of this picture from `results` (as `dataFiles` names them), or nil when the run
    /// has nothing for it.
    func tables(from results: BenchResults) -> [PlotTable]? {
        switch kind {
        case .percentiles(let figure, _):
            guard let distribution = results[figure]?.distribution, !distribution.isEmpty else { return nil }
            return [Self.percentileTable(distribution)]
        case .timerCPU:
            let rates = results.figures.compactMap { f -> (Int, Figure)? in
                guard let rate = Self.rate(ofOneLoop: f.id) else { return nil }
                return (rate, f)
            }.sorted { $0.0 < $1.0 }
            let many = results.figures.filter { $0.scenario == "timercpu" && $0.id.hasSuffix(".cpu") && $0.id.contains("x") }
            guard !rates.isEmpty || !many.isEmpty else { return nil }
            let backends = Self.columns(rates.map(\.1) + many)
            return [
                PlotTable(leading: ["rate (Hz)"], backends: backends,
                          rows: rates.map { rate, f in ([String(rate)], backends.map { f.values[$0] }) }),
                PlotTable(leading: ["case"], backends: backends,
                          rows: many.map { f in ([Self.caseLabel(f.label)], backends.map { f.values[$0] }) }),
            ]
        case .instructions:
            let counts = results.figures.filter { $0.scenario == "instructions" && $0.unit == "instr" }
            guard !counts.isEmpty else { return nil }
            let backends = Self.columns(counts)
            return [PlotTable(leading: ["operation"], backends: backends, rows: counts.map { f in
                ([String(f.id.dropFirst("instructions.".count))], backends.map { f.values[$0] })
            })]
        }
    }

    /// Percentiles from 0 to 99.99 %, HdrHistogram's way (five steps per halving of 1 − p), each
    /// with its position on a log axis, 1/(1 − p).
    static let percentiles: [Double] = {
        var points: [Double] = []
        var k = 0.0
        while true {
            let p = 100 * (1 - pow(2, -k / 5))
            guard p < 99.99 else { break }
            points.append(p)
            k += 1
        }
        return points + [99.99]
    }()

    private static func percentileTable(_ distribution: [BackendID: Latencies]) -> PlotTable {
        let backends = BackendID.allCases.filter { distribution[$0] != nil }
        return PlotTable(leading: ["percentile", "1/(1-p)"], backends: backends, rows: percentiles.map { p in
            ([String(format: "%.4f", p), String(format: "%.6g", 100 / (100 - p))],
             backends.map { distribution[$0]?.microseconds(atPercentile: p) })
        })
    }

    /// Every backend with a value in any of `figures`, in report order.
    private static func columns(_ figures: [Figure]) -> [BackendID] {
        BackendID.allCases.filter { b in figures.contains { $0.values[b] != nil } }
    }

    /// 60 for "timercpu.60hz.cpu"; nil for other ids (the many-loops case among them).
    private static func rate(ofOneLoop id: String) -> Int? {
        let parts = id.split(separator: ".")
        guard parts.count == 3, parts[0] == "timercpu", parts[2] == "cpu", parts[1].hasSuffix("hz") else { return nil }
        return Int(parts[1].dropLast(2))
    }

    /// "100 loops × 100 Hz" from "CPU per fire, 100 loops × 100 Hz".
    private static func caseLabel(_ label: String) -> String {
        label.components(separatedBy: ", ").last ?? label
    }
}
