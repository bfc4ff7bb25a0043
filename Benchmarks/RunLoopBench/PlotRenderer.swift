import Foundation

/// Draws a run's pictures with gnuplot (Debian's gnuplot-nox; make installs it), each as
/// DIR/<name>.svg beside the data it is drawn from (DIR/<name>.dat), then checks every picture
/// with ``PlotCheck``. The scripts are Benchmarks/plots/*.gp.
struct PlotRenderer {
    let directory: String
    let gnuplot: String
    let scripts: String

    /// A renderer for `directory`, or an error saying what is missing.
    static func make(directory: String) throws -> PlotRenderer {
        guard let gnuplot = InstructionsScenario.which("gnuplot") else {
            throw PlotError("gnuplot is not installed (make installs Debian's gnuplot-nox)")
        }
        guard let scripts = scriptDirectory() else {
            throw PlotError("cannot find the gnuplot scripts (Benchmarks/plots)")
        }
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        return PlotRenderer(directory: directory, gnuplot: gnuplot, scripts: scripts)
    }

    /// Draws and checks `specs`; returns what is wrong (nothing when every picture has every
    /// curve `expected` names for it).
    func draw(_ specs: [PlotSpec], from results: BenchResults, expected: (PlotSpec) -> [BackendID]) -> [String] {
        var problems: [String] = []
        for spec in specs {
            let svg = "\(directory)/\(spec.name).svg"
            try? FileManager.default.removeItem(atPath: svg)
            guard let tables = spec.tables(from: results) else {
                problems.append("\(spec.name): the run has no data for it")
                continue
            }
            var paths: [String] = []
            for (file, table) in zip(spec.dataFiles, tables) {
                let path = "\(directory)/\(file)"
                do { try table.text.write(toFile: path, atomically: true, encoding: .utf8) } catch {
                    problems.append("\(spec.name): cannot write \(path): \(error)")
                }
                paths.append(path)
            }
            if let failure = run(spec, data: paths, svg: svg, colours: tables[0].colours) {
                problems.append("\(spec.name): gnuplot failed: \(failure)")
                continue
            }
            problems += PlotCheck(spec: spec, svgPath: svg, tables: tables, expected: expected(spec)).problems()
        }
        return problems
    }

    /// Runs the spec's script; nil on success, else what gnuplot said.
    private func run(_ spec: PlotSpec, data: [String], svg: String, colours: String) -> String? {
        let arguments: [String] = switch spec.kind {
        case .percentiles(_, let ylabel): [data[0], svg, spec.title, colours, ylabel]
        case .timerCPU: [data[0], data[1], svg, spec.title, colours]
        case .instructions: [data[0], svg, spec.title, colours, "instructions per operation"]
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: gnuplot)
        process.arguments = ["-c", "\(scripts)/\(spec.script)"] + arguments
        let errors = Pipe()
        process.standardError = errors
        process.standardOutput = FileHandle.nullDevice
        do { try process.run() } catch { return "cannot start \(gnuplot): \(error)" }
        let said = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        if process.terminationStatus != 0 { return said.isEmpty ? "status \(process.terminationStatus)" : said }
        // A warning means a column was skipped or empty: the picture is not what it claims.
        let warnings = said.split(separator: "\n").filter { $0.localizedCaseInsensitiveContains("warning") }
        return warnings.isEmpty ? nil : warnings.joined(separator: "; ")
    }

    /// Benchmarks/plots under the current directory (or plots), else beside this source file.
    private static func scriptDirectory() -> String? {
        let candidates = ["Benchmarks/plots", "plots",
                          URL(fileURLWithPath: #filePath).deletingLastPathComponent()
                              .deletingLastPathComponent().appendingPathComponent("plots").path]
        return candidates.first { FileManager.default.fileExists(atPath: "\($0)/percentiles.gp") }
    }
}

struct PlotError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
