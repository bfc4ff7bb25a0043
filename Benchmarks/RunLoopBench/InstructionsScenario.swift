import CCFRunLoop
import Dispatch
import Foundation
import Synchronization

/// Scenario `instructions`: instructions per operation, counted by valgrind's callgrind. Counts
/// do not depend on what else the machine is doing (±1–2 % between runs here), so they show the
/// library's own cost where wall-clock figures cannot, and the gate checks them tightly.
///
/// Each (operation, backend) is one child process of this same binary (a copy stripped with
/// `strip -g`: valgrind 3.19 cannot read this toolchain's DWARF), run under
/// `valgrind --tool=callgrind --instr-atstart=no`. The child sets everything up uninstrumented,
/// switches counting on (a callgrind client request), performs the operation N times with
/// nothing else in between, switches counting off and dumps the count; then the same, afresh,
/// for 5 N. The figure is (count(5 N) − count(N)) / 4 N: set-up and the window's edges cancel out. Counts include every
/// thread: a wake-up is the driver's signal and wait plus the loop's whole iteration.
struct InstructionsScenario {
    /// Backends and peers to count.
    var backends: Set<BackendID>
    /// Operations per child run for the short length (the long one is five times as many).
    var quick: Bool
    /// If set, only the operations with a figure here are counted (the gate's).
    var onlyFigures: [String: Set<BackendID>]? = nil
    /// If not empty, only these operations are counted (a short run's).
    var operations: [InstructionOperation] = []

    /// The timer population sizes (timer-add, timer-cancel).
    static let populations = [1000, 100_000]
    /// Blocks pending for another mode behind a blocks step: none, and
    /// 200,000 (blocks-step; the cliff figure is the ratio of the two).
    static let blockPopulations = [0, 200_000]
    /// The ratio figure of blocks-step: a run behind 200,000 blocks for another mode ÷ with none.
    static let blocksCliffID = "instructions.blocks-step.cliff"
    /// How many modes the timer joins (timer-modes; the growth figure is the ratio of the two).
    static let modeCounts = [100, 10_000]
    /// The ratio figure of timer-modes: per mode at 1e4 modes ÷ at 1e2.
    static let modesGrowthID = "instructions.timer-modes.growth"
    /// How many descriptors are ready at once (ready-descriptors; the growth figure is the
    /// ratio of the two).
    static let readyCounts = [10, 1000]
    /// The ratio figure of ready-descriptors: per readiness among 1e3 ÷ among 10.
    static let readyGrowthID = "instructions.ready-descriptors.growth"

    /// The populations `operation` is counted at (0: no population).
    private static func populations(_ operation: InstructionOperation) -> [Int] {
        switch operation {
        case .timerAdd, .timerCancel: populations
        case .blocksStep: blockPopulations
        case .timerModes: modeCounts
        case .readyDescriptors: readyCounts
        default: [0]
        }
    }

    /// The figure id of `operation` at `population`.
    private static func figureID(_ operation: InstructionOperation, _ population: Int) -> String {
        let suffix = operation == .blocksStep ? (population > 0 ? ".200k" : "")
            : population > 0 ? ".\(TimerScalingScenario.label(population))" : ""
        return "instructions.\(operation.rawValue)\(suffix)"
    }

    /// One measurement: an operation on a backend at a population (0 when it does not apply).
    private struct Job: Hashable {
        var operation: InstructionOperation
        var backend: BackendID
        var population: Int
    }

    func run() -> [Figure] {
        guard bench_callgrind_available() != 0 else {
            log("instructions: this binary was built without <valgrind/callgrind.h> (Debian's valgrind); skipped")
            return []
        }
        guard let valgrind = Self.which("valgrind") else {
            log("instructions: valgrind is not installed (make installs it); skipped")
            return []
        }
        guard let binary = Self.strippedCopy() else { return [] }
        defer { try? FileManager.default.removeItem(atPath: (binary as NSString).deletingLastPathComponent) }
        let queue = jobs()
        for job in jobs(includingImpossible: true) where !queue.contains(job) {
            log("instructions: timer-modes.\(TimerScalingScenario.label(job.population)) cf skipped: CF opens two "
                + "descriptors per mode (a timerfd and an epoll set), more than RLIMIT_NOFILE allows")
        }
        // Two children at a time (counts do not care how busy the machine is).
        let results = Mutex<[Job: Double]>([:])
        let next = Mutex(0)
        let finished = Mutex(0)
        DispatchQueue.concurrentPerform(iterations: 2) { _ in
            while true {
                let i = next.withLock { value -> Int in defer { value += 1 }; return value }
                guard i < queue.count else { return }
                let job = queue[i]
                if let perOperation = perOperation(job, valgrind: valgrind, binary: binary) {
                    results.withLock { $0[job] = perOperation }
                }
                let done = finished.withLock { value -> Int in value += 1; return value }
                Progress.shared.step(done, of: queue.count,
                                     "counted \(done)/\(queue.count): \(Self.figureID(job.operation, job.population)) \(job.backend.rawValue)")
            }
        }
        return figures(results.withLock { $0 })
    }

    /// The children to run: each operation (of `operations`, if set) at each population, for
    /// each backend that has it and is wanted. Without `includingImpossible`, CF's timer-modes at
    /// more modes than its descriptors allow is left out.
    private func jobs(includingImpossible: Bool = false) -> [Job] {
        var jobs: [Job] = []
        for operation in InstructionOperation.allCases where operations.isEmpty || operations.contains(operation) {
            for population in Self.populations(operation) {
                let id = Self.figureID(operation, population)
                // The cliff ratio needs both blocks-step figures.
                let cliff = operation == .blocksStep ? onlyFigures?[Self.blocksCliffID] ?? [] : []
                // And the growth ratio both timer-modes figures.
                let growth = operation == .timerModes ? onlyFigures?[Self.modesGrowthID] ?? []
                    : operation == .readyDescriptors ? onlyFigures?[Self.readyGrowthID] ?? [] : []
                let wanted = onlyFigures.map { ($0[id] ?? []).union(cliff).union(growth) } ?? backends
                for backend in operation.backends where backends.contains(backend) && wanted.contains(backend) {
                    if !includingImpossible, operation == .timerModes, backend == .cf,
                       !TimerModesWorkload.cfHasDescriptors(forModes: population) { continue }
                    jobs.append(Job(operation: operation, backend: backend, population: population))
                }
            }
        }
        return jobs
    }

    /// Roughly how long the children take, two at a time (for the progress line's estimate):
    /// seconds per child, measured on the 2-core machine; populations make some children longer.
    var expectedSeconds: Double {
        jobs().reduce(0.0) { sum, job in
            let seconds: Double = switch job.operation {
            case .blocksStep, .timerModes, .readyDescriptors: 7
            case .timerAdd, .timerCancel, .timerFire: 3.5
            default: 2.3
            }
            return sum + (quick ? 0.7 : 1) * seconds
        }
    }

    /// Short and long run lengths of `job`.
    private func counts(_ job: Job) -> (Int, Int) {
        let n = switch job.operation {
        case .wakeup, .wakeupTimer, .wakeupDescriptor, .wakeupPhaseWatchers, .timerFire, .actorhop: 200
        case .perform: 2000
        case .modeswitch: 500
        // CF walks the 200,000 pending blocks several times per run (W19): millions each.
        case .blocksStep: job.backend == .cf && job.population > 0 ? 2 : 200
        // At most a fifth of the population, so the mode's size stays near it.
        case .timerAdd, .timerCancel: job.population >= 100_000 ? 200 : 40
        // About 4,000 mode joins in the short length, whatever the number of modes.
        case .timerModes: max(4000 / job.population, 1)
        // Whole rounds of the ready descriptors: libev handles them all per iteration.
        case .readyDescriptors: max(200, job.population)
        }
        let short = job.operation == .timerModes || job.operation == .readyDescriptors ? n
            : quick ? max(n / 4, min(n, 10)) : n
        return (short, 5 * short)
    }

    private func perOperation(_ job: Job, valgrind: String, binary: String) -> Double? {
        let (short, long) = counts(job)
        guard let counted = Self.count(job, times: [short, long], valgrind: valgrind, binary: binary),
              counted.count == 2 else { return nil }
        let (a, b) = (counted[0], counted[1])
        // timer-modes: per mode, not per timer.
        let perOperation = job.operation == .timerModes ? job.population : 1
        let value = Double(Int64(b) - Int64(a)) / Double((long - short) * perOperation)
        let name = Self.figureID(job.operation, job.population).dropFirst("instructions.".count)
        log("instructions: \(name) \(job.backend.rawValue): \(Int(value.rounded())) per \(perOperation > 1 ? "mode" : "operation") "
            + "(\(a) for \(short), \(b) for \(long))")
        return value
    }

    /// Instructions callgrind counted in the child's windows, one per length in `times`, or nil
    /// (logged) if it failed.
    private static func count(_ job: Job, times: [Int], valgrind: String, binary: String) -> [UInt64]? {
        let output = (binary as NSString).deletingLastPathComponent
            + "/\(job.operation.rawValue)-\(job.backend.rawValue)-\(job.population).callgrind"
        let process = Process()
        process.executableURL = URL(fileURLWithPath: valgrind)
        process.arguments = ["--tool=callgrind", "--instr-atstart=no", "--callgrind-out-file=\(output)",
                             binary, "instructions-child",
                             "--operation", job.operation.rawValue, "--backend", job.backend.rawValue,
                             "--population", String(job.population), "--counts"] + times.map(String.init)
        process.standardOutput = FileHandle.nullDevice
        let errors = Pipe()
        process.standardError = errors
        do { try process.run() } catch {
            log("instructions: cannot start valgrind: \(error)")
            return nil
        }
        let stderr = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        // One dump per window: <output>.1, <output>.2, … ("totals:" is the dump's count).
        let totals = times.indices.compactMap { i -> UInt64? in
            let text = (try? String(contentsOfFile: "\(output).\(i + 1)", encoding: .utf8)) ?? ""
            return text.split(separator: "\n").lazy.first { $0.hasPrefix("totals:") }
                .flatMap { UInt64($0.split(separator: " ").last ?? "") }
        }
        guard process.terminationStatus == 0, totals.count == times.count else {
            log("instructions: \(job.operation.rawValue) on \(job.backend.rawValue) failed "
                + "(status \(process.terminationStatus)): "
                + String(decoding: stderr.suffix(600), as: UTF8.self))
            return nil
        }
        return totals
    }

    /// A copy of this executable stripped of its debug information (valgrind 3.19 cannot read
    /// this toolchain's DWARF 5), in a fresh temporary folder.
    private static func strippedCopy() -> String? {
        let exe = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
            ?? CommandLine.arguments[0]
        let folder = NSTemporaryDirectory() + "runloop-bench-callgrind-\(getpid())"
        let copy = folder + "/runloop-bench"
        do {
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            try FileManager.default.copyItem(atPath: exe, toPath: copy)
        } catch {
            log("instructions: cannot copy \(exe): \(error)")
            return nil
        }
        guard let strip = which("strip") else {
            log("instructions: strip (binutils) is not installed; skipped")
            return nil
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: strip)
        process.arguments = ["-g", copy]
        guard (try? process.run()) != nil else { return nil }
        process.waitUntilExit()
        return process.terminationStatus == 0 ? copy : nil
    }

    static func which(_ name: String) -> String? {
        let paths = (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":")
        return paths.map { "\($0)/\(name)" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    private static let labels: [InstructionOperation: String] = [
        .wakeup: "instructions per wake-up cycle",
        .wakeupTimer: "instructions per wake-up cycle, a timer pending",
        .wakeupDescriptor: "instructions per wake-up cycle, a descriptor watched (epoll)",
        .wakeupPhaseWatchers: "instructions per wake-up cycle, libev with ev_prepare and ev_check watchers",
        .timerFire: "instructions per fire of a repeating 1 ms timer",
        .perform: "instructions per cross-thread perform",
        .actorhop: "instructions per actor hop round trip",
        .timerAdd: "instructions per timer add",
        .timerCancel: "instructions per timer cancel",
        .modeswitch: "instructions per nested mode switch",
        .blocksStep: "instructions per one-pass run with a block",
        .timerModes: "instructions per mode, a timer added to each mode, then invalidated:",
        .readyDescriptors: "instructions per handled readiness",
    ]

    private static let goals: [InstructionOperation: Goal] = [
        .wakeup: .all([.ratioAtMost(1.3, against: .libev), .below(.cf), .below(.nio)]),
        .wakeupTimer: .all([.ratioAtMost(1.3, against: .libev), .below(.cf)]),
        .wakeupDescriptor: .ratioAtMost(1.3, against: .libev),
        .perform: .ratioAtMost(1.5, against: .libev),
        .actorhop: .ratioAtMost(1, against: .nio),
    ]

    private func figures(_ results: [Job: Double]) -> [Figure] {
        var figures: [Figure] = []
        for operation in InstructionOperation.allCases {
            for population in Self.populations(operation) {
                let among = operation == .blocksStep ? ", behind 200k blocks for another mode"
                    : operation == .timerModes ? " M = \(TimerScalingScenario.label(population))"
                    : operation == .readyDescriptors ? ", \(population) descriptors ready"
                    : " among \(TimerScalingScenario.label(population))"
                var figure = Figure(
                    id: Self.figureID(operation, population), scenario: "instructions",
                    label: Self.labels[operation]! + (population > 0 ? among : ""),
                    unit: "instr", better: .lower, goal: Self.goals[operation])
                for backend in operation.backends {
                    if let value = results[Job(operation: operation, backend: backend, population: population)] {
                        figure.values[backend] = value
                    }
                }
                if !figure.values.isEmpty { figures.append(figure) }
            }
        }
        // W19's cliff: what 200,000 blocks pending for a mode that is not running add to a run
        // of another mode. 1 when a blocks step never looks at them; CF walks them all.
        var cliff = Figure(
            id: Self.blocksCliffID, scenario: "instructions",
            label: "blocks-step cliff: run behind 200k blocks for another mode ÷ with none",
            unit: "×", better: .lower, goal: .atMost(1.2))
        for backend in InstructionOperation.blocksStep.backends {
            if let behind = results[Job(operation: .blocksStep, backend: backend, population: Self.blockPopulations[1])],
               let alone = results[Job(operation: .blocksStep, backend: backend, population: 0)], alone > 0 {
                cliff.values[backend] = behind / alone
            }
        }
        if !cliff.values.isEmpty { figures.append(cliff) }
        if let growth = modesGrowth(results) { figures.append(growth) }
        if let growth = readyGrowth(results) { figures.append(growth) }
        return figures
    }

    /// `instructions.timer-modes.growth`: per mode at the most modes ÷ per mode at the fewest,
    /// per backend. Near 1 while an invalidate costs O(the item's modes); far above 1 is a cliff.
    private func modesGrowth(_ results: [Job: Double]) -> Figure? {
        guard let low = Self.modeCounts.first, let high = Self.modeCounts.last else { return nil }
        return growth(
            of: .timerModes, from: low, to: high, results,
            id: Self.modesGrowthID, goal: 2,
            label: "timer in M modes, add and invalidate: instructions per mode at M = "
                + "\(TimerScalingScenario.label(high)) ÷ at \(TimerScalingScenario.label(low))")
    }

    /// `instructions.ready-descriptors.growth`: per handled readiness with the most descriptors
    /// ready ÷ with the fewest, per backend. Near 1 while the next ready source is found in O(1).
    private func readyGrowth(_ results: [Job: Double]) -> Figure? {
        guard let low = Self.readyCounts.first, let high = Self.readyCounts.last else { return nil }
        return growth(
            of: .readyDescriptors, from: low, to: high, results,
            id: Self.readyGrowthID, goal: 1.5,
            label: "instructions per handled readiness, \(high) descriptors ready ÷ \(low)")
    }

    /// A figure of `operation`'s count at population `high` ÷ at `low`, per backend; nil when
    /// no backend has both.
    private func growth(
        of operation: InstructionOperation, from low: Int, to high: Int, _ results: [Job: Double],
        id: String, goal: Double, label: String
    ) -> Figure? {
        var figure = Figure(id: id, scenario: "instructions", label: label, unit: "×", better: .lower, goal: .atMost(goal))
        for backend in operation.backends {
            if let atHigh = results[Job(operation: operation, backend: backend, population: high)],
               let atLow = results[Job(operation: operation, backend: backend, population: low)], atLow > 0 {
                figure.values[backend] = atHigh / atLow
            }
        }
        return figure.values.isEmpty ? nil : figure
    }
}
