import Foundation

/// Where the pictures go in the pages people read: under their scenario's heading in the README's
/// performance section (with a link to the data each is drawn from), and as a section of the DocC
/// Performance page, each with its one sentence on how to read it.
struct PlotPages {
    let specs: [PlotSpec]
    /// The pictures' folder as the README links it (relative to the repository's root).
    let folder: String

    /// The folder `plots` as a link from the folder of the Markdown file `markdown`: relative
    /// where one is inside the other, else absolute.
    static func link(to plots: String, from markdown: String?) -> String {
        let target = URL(fileURLWithPath: plots).standardizedFileURL.path
        let base = URL(fileURLWithPath: markdown ?? ".").deletingLastPathComponent().standardizedFileURL.path
        if target == base { return "." }
        return target.hasPrefix(base + "/") ? String(target.dropFirst(base.count + 1)) : target
    }

    /// The README's lines for `scenario`'s pictures, to go before its table.
    func readme(_ scenario: String) -> [String] {
        specs.filter { $0.scenario.rawValue == scenario }.flatMap { spec in
            ["![\(spec.title)](\(folder)/\(spec.name).svg)", "",
             "\(spec.reading) Data: " + spec.dataFiles.map { "[\($0)](\(folder)/\($0))" }.joined(separator: ", ") + ".",
             ""]
        }
    }

    /// The DocC section: a heading per scenario, then its pictures (DocC finds an image in the
    /// catalog by its file name).
    func docc() -> String {
        var lines: [String] = []
        var scenario: ScenarioID?
        for spec in specs {
            if spec.scenario != scenario {
                scenario = spec.scenario
                lines += ["### \(TableReport.scenarioTitles[spec.scenario.rawValue] ?? spec.scenario.rawValue)", ""]
            }
            lines += ["![\(spec.title)](\(spec.name).svg)", "", spec.reading, ""]
        }
        return lines.joined(separator: "\n")
    }
}
