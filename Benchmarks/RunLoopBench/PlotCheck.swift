import Foundation

/// Checks one drawn picture against what it must show: the data has a full column for every
/// expected backend, and gnuplot's SVG has that backend's curve (or bars) in every panel, with
/// something drawn beyond its key sample. gnuplot writes each plotted column as
/// `<g id="gnuplot_plot_N">…</g>`: its key's text and sample first, then what it draws.
struct PlotCheck {
    let spec: PlotSpec
    let svgPath: String
    let tables: [PlotTable]
    let expected: [BackendID]

    func problems() -> [String] {
        var problems: [String] = []
        for (file, table) in zip(spec.dataFiles, tables) {
            for backend in expected {
                let have = table.count(of: backend)
                let need = linePanel(file) ? table.rows.count : min(1, table.rows.count)
                if have < max(need, 1) {
                    problems.append("\(spec.name): \(file) has \(have) of \(max(need, 1)) values for \(backend.title)")
                }
            }
        }
        guard let svg = try? String(contentsOfFile: svgPath, encoding: .utf8) else {
            return problems + ["\(spec.name): \(svgPath) is missing"]
        }
        let groups = Self.groups(in: svg)
        for backend in expected {
            let drawn = groups.filter { $0.title == backend.title }
            if drawn.count != spec.dataFiles.count {
                problems.append("\(spec.name).svg: \(drawn.count) of \(spec.dataFiles.count) curves for \(backend.title)")
                continue
            }
            for (panel, group) in drawn.enumerated() {
                let lines = linePanel(spec.dataFiles[panel])
                let marks = lines ? group.pairs - 2 : group.polygons - 1
                if marks < (lines ? 2 : 1) {
                    problems.append("\(spec.name).svg: the curve of \(backend.title) draws nothing")
                }
            }
        }
        return problems
    }

    /// Whether the panel drawn from `file` has lines (percentiles, CPU against rate) or bars.
    private func linePanel(_ file: String) -> Bool {
        switch spec.kind {
        case .percentiles: true
        case .timerCPU: !file.hasSuffix("-loops.dat")
        case .instructions: false
        }
    }

    /// One plotted column of the SVG: its title, the coordinate pairs of its paths and its
    /// polygons (bars).
    struct Group {
        let title: String
        let pairs: Int
        let polygons: Int
    }

    static func groups(in svg: String) -> [Group] {
        svg.components(separatedBy: "<g id=\"gnuplot_plot_").dropFirst().map { rest in
            let chunk = enclosed(rest)
            // The key's text is what a reader sees; gnuplot's <title> is not (without enhanced
            // text it reads "gnuplot_plot_N").
            let title = chunk.range(of: "<text").flatMap { open in
                chunk[open.upperBound...].range(of: "</text>").map { close in
                    String(chunk[open.upperBound..<close.lowerBound]).replacing(/<[^>]*>|^[^>]*>/, with: "")
                }
            } ?? ""
            let pairs = chunk.components(separatedBy: " d='").dropFirst().reduce(0) { sum, path in
                let data = path.prefix { $0 != "'" }
                return sum + data.filter { $0 == "," }.count
            }
            let polygons = chunk.components(separatedBy: "<polygon").count - 1
            return Group(title: unescape(title), pairs: pairs, polygons: polygons)
        }
    }

    /// The text up to the `</g>` that closes the group `rest` starts inside.
    private static func enclosed(_ rest: String) -> Substring {
        var depth = 1
        var index = rest.startIndex
        while let close = rest[index...].firstRange(of: "</g>") {
            if let open = rest[index...].firstRange(of: "<g"), open.lowerBound < close.lowerBound {
                depth += 1
                index = open.upperBound
            } else {
                depth -= 1
                if depth == 0 { return rest[..<close.lowerBound] }
                index = close.upperBound
            }
        }
        return rest[...]
    }

    private static func unescape(_ text: String) -> String {
        text.replacingOccurrences(of: "&amp;", with: "&").replacingOccurrences(of: "&lt;", with: "<")
            .replacingOccurrences(of: "&gt;", with: ">")
    }
}
