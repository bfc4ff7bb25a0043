import ArgumentParser
import Foundation

/// `runloop-bench`: RunLoopKit side by side with raw libev and the real CFRunLoop.
@main
struct RunLoopBenchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "runloop-bench",
        abstract: "Measure RunLoopKit against raw libev and the real CFRunLoop, in one process and one run.",
        discussion: HelpText.overview,
        subcommands: [RunCommand.self, GateCommand.self, FootprintChildCommand.self, InstructionsChildCommand.self],
        defaultSubcommand: RunCommand.self)
}

/// `runloop-bench [run] [SCENARIO …]`: measures and prints one table.
struct RunCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "Run scenarios (default: all) and print one table.",
        discussion: HelpText.scenarios)

    @Argument(help: "Scenarios to run (default: all).")
    var scenarios: [ScenarioID] = []

    @OptionGroup var options: BenchOptions

    @Option(help: "Also write the results as JSON to this file.")
    var json: String?

    @Option(help: "Also write the results table as Markdown (the README's performance section) to this file.")
    var markdown: String?

    @Option(help: "Also draw the results' pictures (SVG, with gnuplot) into this folder, each beside its data; exit 1 if one lacks an expected curve.")
    var plots: String?

    @Option(help: "Also write the pictures' section of the DocC Performance page to this file (with --plots).")
    var doccPlots: String?

    @Option(help: "How the Markdown links the pictures' folder (default: its path from the Markdown file's folder).")
    var plotLinks: String?

    mutating func run() throws {
        options.resolve(defaultScalingCounts: [1000, 10_000, 100_000, 1_000_000])
        let chosen = scenarios.isEmpty ? ScenarioID.allCases : scenarios
        // Before measuring, so that a missing gnuplot stops the run at once.
        let renderer = try plots.map { try PlotRenderer.make(directory: $0) }
        let start = nowNs()
        let results = options.measure(chosen)
        Progress.shared.end()
        log("all done in \(String(format: "%.1f", Double(nowNs() - start) / 1e9)) s")
        let report = TableReport(results: results)
        print(report.text(), terminator: "")
        fflush(nil)  // the whole table out before more lines on standard error
        if let json {
            try JSONReport(results: results).write(to: json)
            log("wrote \(json)")
        }
        var problems: [String] = []
        var pages: PlotPages?
        if let plots, let renderer {
            let specs = options.plots(for: chosen)
            problems = renderer.draw(specs, from: results, expected: options.expectedCurves)
            let drawn = PlotPages(specs: specs, folder: plotLinks ?? PlotPages.link(to: plots, from: markdown))
            pages = drawn
            log("plots: \(specs.count) pictures and their data in \(plots)")
            if let doccPlots {
                try drawn.docc().write(toFile: doccPlots, atomically: true, encoding: .utf8)
                log("wrote \(doccPlots)")
            }
        }
        if let markdown {
            try report.markdown(plots: pages).write(toFile: markdown, atomically: true, encoding: .utf8)
            log("wrote \(markdown)")
        }
        for problem in problems { log("plots: MISSING \(problem)") }
        if !problems.isEmpty { throw ExitCode.failure }
    }
}

/// The footprint scenario's child process: one backend, fresh memory. Not for people.
struct FootprintChildCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "footprint-child",
        abstract: "Internal: one footprint measurement in this process, printed as JSON.",
        shouldDisplay: false)

    @Option(help: "Backend whose loops the threads create; none: bare parked threads.")
    var backend: BackendID?

    @Option(help: "Threads, one loop each.")
    var loops = 1000

    func run() throws {
        let chosen: (any Backend)?
        if let backend {
            guard let found = availableBackends().first(where: { $0.id == backend }) else {
                throw ValidationError("backend \(backend.rawValue) is not available in this build")
            }
            chosen = found
        } else {
            chosen = nil
        }
        let sample = FootprintScenario.measureInThisProcess(backend: chosen, loops: loops)
        let data = try JSONEncoder().encode(sample)
        FileHandle.standardOutput.write(data)
    }
}

extension InstructionOperation: ExpressibleByArgument {}

/// Scenario instructions' child process, run under callgrind. Not for people.
struct InstructionsChildCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "instructions-child",
        abstract: "Internal: perform one operation N times inside a callgrind counting window.",
        shouldDisplay: false)

    @Option var operation: InstructionOperation
    @Option var backend: BackendID
    @Option(parsing: .upToNextOption) var counts: [Int]
    @Option var population = 0

    func run() throws {
        Pinning.shared.disable()
        for count in counts {
            InstructionWorkload(operation: operation, backend: backend, count: count, population: population).run()
        }
    }
}
