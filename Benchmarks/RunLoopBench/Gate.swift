import ArgumentParser
import Foundation

/// `runloop-bench gate`: the CI performance gate. Measures the scenarios its limits refer to
/// (gate.json covers the ones that matter for regressions: wakeup, perform, timers, timercpu,
/// scaling at N = 1e5, footprint, actorhop, instructions) and checks RATIOS from the same run (never absolute times) against the
/// limits in Benchmarks/gate.json. A limit that fails is re-measured (its scenario is run
/// again) up to `--retries` times; the gate fails only if it fails every time.
struct GateCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "gate",
        abstract: "Check RunLoopKit's ratios against the limits in Benchmarks/gate.json; exit 1 on failure.",
        discussion: HelpText.gate)

    @Option(help: "The limits file (default: Benchmarks/gate.json of this package).")
    var limits: String?

    @Option(help: "How many times a failing comparison is re-measured before the gate fails.")
    var retries = 2

    @Option(help: "Also write the last measurements and the verdicts as JSON to this file.")
    var json: String?

    @OptionGroup var options: BenchOptions

    mutating func run() throws {
        options.resolve(defaultScalingCounts: [100_000])
        let path = limits ?? GateFile.defaultPath()
        let file = try GateFile.load(path)
        log("gate: \(file.limits.count) limits from \(path)")
        let start = nowNs()
        // Each scenario measures only the backends its limits compare.
        var needed: [ScenarioID: Set<BackendID>] = [:]
        for limit in file.limits {
            guard let scenario = ScenarioID(figure: limit.figure) else { continue }
            needed[scenario, default: []].formUnion([limit.subject ?? file.subject] + [limit.against].compactMap { $0 })
        }
        let scenarios = ScenarioID.allCases.filter { needed[$0] != nil }
        options.onlyFigures = file.limits.reduce(into: [:]) { only, limit in
            only[limit.figure, default: []].formUnion([limit.subject ?? file.subject] + [limit.against].compactMap { $0 })
        }
        var results = options.measure(scenarios, only: needed)
        func verdict(_ i: Int, attempt: Int) -> GateVerdict {
            GateVerdict(limit: file.limits[i], subject: file.subject, results: results, attempt: attempt)
        }
        var verdicts = file.limits.indices.map { verdict($0, attempt: 1) }
        for attempt in 2..<(2 + max(0, retries)) {
            let failing = verdicts.indices.filter { !verdicts[$0].passed }
            guard !failing.isEmpty else { break }
            let rerun = scenarios.filter { scenario in
                failing.contains { results[verdicts[$0].figure]?.scenario == scenario.rawValue }
            }
            guard !rerun.isEmpty else { break }  // only unmeasured figures fail: nothing to redo
            for i in failing { log("gate: FAIL \(verdicts[i].message)") }
            let names = rerun.map(\.rawValue).joined(separator: ", ")
            log("gate: \(failing.count) limit(s) failed; measuring \(names) again (attempt \(attempt))")
            let again = rerun.map { ($0, options.chosen($0, only: needed, from: options.selectedBackends(for: $0))) }
            for (scenario, (backends, peers)) in again {
                Progress.shared.expectAgain(scenario, seconds: options.expectedSeconds(
                    scenario, backends: Set(backends.map(\.id)), peers: peers))
            }
            for (scenario, (backends, peers)) in again {
                Progress.shared.enter(scenario)
                results.replace(scenario: scenario.rawValue, with: options.measure(scenario, on: backends, peers: peers))
                Progress.shared.leave()
            }
            for i in failing {
                verdicts[i] = verdict(i, attempt: attempt)
            }
        }
        Progress.shared.end()
        print(TableReport(results: results).text())
        print(GateVerdict.report(verdicts), terminator: "")
        fflush(nil)  // the whole report out before more lines on standard error
        log("gate: done in \(String(format: "%.1f", Double(nowNs() - start) / 1e9)) s")
        if let json { try JSONReport(results: results, gate: verdicts).write(to: json) }
        if verdicts.contains(where: { !$0.passed }) { throw ExitCode.failure }
    }
}

/// Benchmarks/gate.json: limits on ratios `subject / against` of figures from the same run.
/// `max` for lower-is-better figures (latency, ns/op), `min` for higher-is-better ones
/// (throughput). A limit without `against` bounds the subject's own value of a figure that is
/// itself a ratio of two measurements from the same run (`instructions.blocks-step.cliff`).
struct GateFile: Decodable {
    struct Limit: Decodable {
        /// A figure id as in the JSON output, e.g. `wakeup.p99`.
        let figure: String
        /// Overrides the file's subject for this limit.
        let subject: BackendID?
        /// The backend the subject is compared with; nil: the figure is already a ratio.
        let against: BackendID?
        let max: Double?
        let min: Double?
        /// Why the limit is where it is.
        let note: String?
    }

    /// The backend under test; RunLoopKit unless the file says otherwise.
    let subject: BackendID
    let limits: [Limit]

    enum CodingKeys: String, CodingKey { case subject, limits }

    init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        subject = try c.decodeIfPresent(BackendID.self, forKey: .subject) ?? .runloopkit
        limits = try c.decode([Limit].self, forKey: .limits)
        for limit in limits where (limit.max == nil) == (limit.min == nil) {
            throw DecodingError.dataCorruptedError(
                forKey: .limits, in: c,
                debugDescription: "limit on \(limit.figure) needs exactly one of max, min")
        }
    }

    static func load(_ path: String) throws -> GateFile {
        do {
            return try JSONDecoder().decode(GateFile.self, from: Data(contentsOf: URL(fileURLWithPath: path)))
        } catch {
            throw ValidationError("cannot read gate limits \(path): \(error)")
        }
    }

    /// Benchmarks/gate.json (or gate.json) under the current directory, else beside this
    /// source file.
    static func defaultPath() -> String {
        for local in ["Benchmarks/gate.json", "gate.json"] where FileManager.default.fileExists(atPath: local) {
            return local
        }
        return URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("gate.json").path
    }
}
