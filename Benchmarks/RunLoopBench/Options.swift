import ArgumentParser
import BenchLibev
import Foundation

/// The scenarios, in the order the standard run measures them.
enum ScenarioID: String, CaseIterable, ExpressibleByArgument, Sendable {
    case wakeup, perform, timers, timercpu, scaling, modes, footprint, mainqueue, actorhop, stallmonitor, instructions
    case hiredis

    /// The scenario whose figures have ids starting `<prefix>.`.
    init?(figure id: String) {
        let prefix = id.prefix { $0 != "." }
        switch prefix {
        case "timer": self = .timers
        default: self.init(rawValue: String(prefix))
        }
    }
}

extension BackendID: ExpressibleByArgument {}

/// Sizes and selections shared by `run` and `gate`. The defaults keep the standard run to a
/// few minutes on a 2-core machine.
struct BenchOptions: ParsableArguments {
    @Option(name: .customLong("backend"), help: "Measure only these backends (repeatable).")
    var backends: [BackendID] = []

    @Option(help: "Rounds per scenario; each round measures every backend, in rotating order.")
    var rounds = 3

    @Option(help: "Wake-ups per backend per round (scenario wakeup).")
    var wakeups = 2000

    @Option(help: "Blocks posted per backend per round (scenario perform).")
    var performItems = 1_000_000

    @Option(help: "Timer callouts per timer and backend, in rounds of 100 (scenario timers).")
    var timerFires = 2000

    @Option(parsing: .upToNextOption, help: "Rates of the one-loop timers, Hz (scenario timercpu).")
    var timerRates = [60, 100, 250, 1000]

    @Option(help: "Loops with a 100 Hz timer each, all in this process (scenario timercpu).")
    var timerLoops = 100

    @Option(help: "Seconds each timer CPU measurement's window lasts (scenario timercpu).")
    var timerCPUSeconds = 1.0

    @Option(parsing: .upToNextOption,
            help: "Timer counts N (scenario scaling). Default: 1000 10000 100000 1000000; gate: 100000.")
    var scalingCounts: [Int] = []

    @Option(help: "Largest N measured for CF in scenario scaling (CF adds and cancels in O(N)).")
    var cfScalingMax = 100_000

    @Option(parsing: .upToNextOption, help: "Items N in the outer mode (scenario modes).")
    var modeCounts = [0, 100, 1000, 10_000]

    @Option(help: "Nested runs per measurement (scenario modes).")
    var modeSwitches = 2000

    @Option(parsing: .upToNextOption, help: "Thread counts, one loop each (scenario footprint).")
    var footprintLoops = [100, 1000, 4000]

    @Option(help: "Main-queue blocks per backend per round (scenario mainqueue).")
    var mainQueueBlocks = 2000

    @Option(help: "Actor hops per actor per round (scenario actorhop).")
    var hops = 2000

    @Option(parsing: .upToNextOption,
            help: "Count instructions for these operations only (scenario instructions; default: all).")
    var operations: [InstructionOperation] = []

    @Flag(help: "Do not pin loop threads to one CPU and the driving thread to another.")
    var noPin = false

    @Flag(help: "Tiny sizes: checks that everything runs, measures nothing worth keeping.")
    var quick = false

    /// Only these figures, each for the backends it is compared on, where a scenario can
    /// measure less than all of its own (the gate: the instruction counts and wake-up layouts
    /// its limits name).
    var onlyFigures: [String: Set<BackendID>]?

    /// Fills in defaults that depend on the command, then shrinks everything if `--quick`.
    mutating func resolve(defaultScalingCounts: [Int]) {
        if scalingCounts.isEmpty { scalingCounts = defaultScalingCounts }
        if noPin { Pinning.shared.disable() }
        guard quick else { return }
        rounds = 2
        wakeups = 100
        performItems = 20_000
        timerFires = 100
        timerCPUSeconds = 0.2
        scalingCounts = Array(Set(scalingCounts.map { Swift.min($0, 10_000) })).sorted()
        modeCounts = [0, 1000]
        modeSwitches = 200
        footprintLoops = [50]
        mainQueueBlocks = 100
        hops = 100
    }

    /// The peers (SwiftNIO, libdispatch) to measure beside the backends: the selected ones, or
    /// all if no backend was selected.
    func selectedPeers() -> Set<BackendID> {
        Set(Peers.all.filter { backends.isEmpty || backends.contains($0) })
    }

    /// The backends to measure: the selection, or every one compiled in and working here; for
    /// the timer scenarios RunLoopKit's other timer precision too.
    func selectedBackends(for scenario: ScenarioID? = nil) -> [any Backend] {
        var all = availableBackends()
        if let scenario, [.timers, .timercpu].contains(scenario) {
            all.insert(contentsOf: timerPrecisionVariants(), at: min(1, all.count))
        }
        return backends.isEmpty ? all : all.filter { backends.contains($0.id) }
    }

    /// Measures one scenario on `backends` and returns its figures.
    func measure(_ scenario: ScenarioID, on backends: [any Backend], peers: Set<BackendID>? = nil) -> [Figure] {
        let peers = peers ?? selectedPeers()
        return switch scenario {
        case .wakeup:
            WakeupScenario(samplesPerRound: wakeups, rounds: rounds, peers: Array(peers).sorted(),
                           onlyFigures: onlyFigures).run(backends)
        case .perform: PerformScenario(items: performItems, rounds: rounds).run(backends)
        case .timers: TimerLatenessScenario(fires: timerFires, peers: Array(peers).sorted()).run(backends)
        case .timercpu:
            TimerCPUScenario(rates: timerRates, manyLoops: timerLoops, windowSeconds: timerCPUSeconds,
                             rounds: rounds, peers: Array(peers).sorted(), onlyFigures: onlyFigures)
                .run(backends)
        case .scaling:
            TimerScalingScenario(counts: scalingCounts, cfMaxCount: cfScalingMax, rounds: rounds).run(backends)
        case .modes:
            ModeSwitchScenario(counts: modeCounts, switches: modeSwitches, rounds: rounds).run(backends)
        case .footprint: FootprintScenario(loopCounts: footprintLoops).run(backends)
        case .mainqueue: MainQueueScenario(samplesPerRound: mainQueueBlocks, rounds: rounds).run(backends)
        case .stallmonitor:
            StallMonitorScenario(iterations: quick ? 20_000 : 200_000, idle: quick ? .milliseconds(100) : .seconds(1), rounds: rounds)
                .run(backends)
        case .instructions:
            InstructionsScenario(backends: Set(backends.map(\.id)).union(peers), quick: quick,
                                 onlyFigures: onlyFigures, operations: operations).run()
        case .hiredis:
            HiredisScenario(rounds: rounds, pipelined: quick ? 20_000 : 200_000, sequential: quick ? 1_000 : 10_000).run(backends)
        case .actorhop:
            // The default actor is no `Backend`: it is measured unless --backend leaves it out.
            ActorHopScenario(samplesPerRound: hops, rounds: rounds,
                             runloopkit: backends.contains { $0.id == .runloopkit },
                             defaultActor: self.backends.isEmpty || self.backends.contains(.defaultActor),
                             peers: Array(peers).sorted())
                .run()
        }
    }

    /// Runs `scenarios` in order and collects their figures, the run's context and notes.
    /// `only` restricts a scenario to some backends (the gate measures only what it compares).
    func measure(_ scenarios: [ScenarioID], only: [ScenarioID: Set<BackendID>] = [:]) -> BenchResults {
        let backends = selectedBackends()
        var results = BenchResults()
        results.backends = backends.map(\.id).sorted()
        results.context = context()
        results.notes = notes(for: scenarios, backends: backends.map(\.id))
        let plan = scenarios.map { scenario in
            (scenario, chosen(scenario, only: only, from: selectedBackends(for: scenario)))
        }
        Progress.shared.begin(plan.map { scenario, chosen in
            (scenario, expectedSeconds(scenario, backends: Set(chosen.0.map(\.id)), peers: chosen.1))
        })
        for (scenario, (backends, peers)) in plan {
            Progress.shared.enter(scenario)
            results.append(measure(scenario, on: backends, peers: peers))
            Progress.shared.leave()
        }
        // Every backend with a cell (a value, or "—" for no equivalent), in report order; the
        // default actor comes from actorhop, not from the selected backends.
        results.backends = BackendID.allCases.filter { id in results.figures.contains { $0.shows(id) } }
        return results
    }

    /// The backends and peers `scenario` measures: the selection, narrowed by `only`.
    func chosen(_ scenario: ScenarioID, only: [ScenarioID: Set<BackendID>],
                from backends: [any Backend]) -> ([any Backend], Set<BackendID>) {
        let chosen = only[scenario].map { wanted in backends.filter { wanted.contains($0.id) } } ?? backends
        let peers = only[scenario].map { selectedPeers().intersection($0) } ?? selectedPeers()
        return (chosen, peers)
    }

    private func notes(for scenarios: [ScenarioID], backends: [BackendID]) -> [String] {
        var notes: [String] = []
        if !backends.contains(.runloopkit) {
            notes.append("RunLoopKit was not measured in this run; its columns and ratios are empty.")
        }
        if scenarios.contains(.timers) || scenarios.contains(.timercpu) {
            notes.append("libev's figures are a plain ev_timer on its epoll backend, which waits at least 1 ms and "
                + "rounds every wait up to a whole millisecond: a 1 ms repeating timer then fires a wake-up's delay "
                + "later each period until it is a whole period behind and libev restarts it from now, so its "
                + "lateness spreads over 0–1 ms (p50 near 500 µs), and a 100 µs timer waits a whole millisecond. "
                + "A minimal C program with one ev_timer reads the same; libev io_uring waits to the microsecond.")
        }
        if scenarios.contains(.timers) {
            if !backends.contains(.libevIOURing) {
                notes.append("libev io_uring: not measured (ev_loop_new(EVBACKEND_IOURING) gives "
                    + "no io_uring loop on this kernel, or it was not selected).")
            }
        }
        if scenarios.contains(.timercpu) {
            notes.append("Timer CPU: the timers run unpinned; after a warm-up, the process's CPU time (getrusage, "
                + "user + system) over a window of \(timerCPUSeconds) s is divided by the callouts in it. "
                + "RunLoopKit is its default (the kernel wakes the loop at the deadline); RunLoopKit precise sets "
                + "timerPrecision = .precise (the deadline armed early and waited out awake). libev: a repeating "
                + "ev_timer; CF: a repeating CFRunLoopTimer; NIO: scheduleRepeatedTask, whose next run is due its "
                + "delay after the previous run ended. The \(timerLoops) loops start their timers spread over one "
                + "interval, as independent timers are.")
        }
        if scenarios.contains(.scaling), backends.contains(.cf), let top = scalingCounts.max(), top > cfScalingMax {
            notes.append("CF keeps a mode's timers in a sorted array (O(N) per add and cancel); "
                + "it is measured up to N = \(TimerScalingScenario.label(cfScalingMax)) only.")
        }
        if scenarios.contains(.modes) {
            notes.append("libev has no modes: its mode-switch figure is one nested "
                + "ev_run(EVRUN_NOWAIT) of the same loop.")
        }
        if scenarios.contains(.mainqueue) {
            notes.append("Main queue: on the process's main thread, RunLoopKit is "
                + "EvRunLoop.main.run(mode: .default) and CF is Foundation's RunLoop.main.run(mode: "
                + ".default, before:); libev has no main loop that services libdispatch's main queue.")
        }
        if scenarios.contains(.actorhop) {
            notes.append("Actor hop: RunLoopKit is an actor on an EvRunLoopExecutor (two thread hops "
                + "per round trip); SwiftNIO an actor on its event loop's executor; libdispatch an actor "
                + "on a serial executor over a DispatchQueue; the default actor is run by the Swift runtime, "
                + "on the caller's thread when it is idle, the floor of any hop. No thread is pinned in this scenario.")
        }
        if scenarios.contains(.wakeup) {
            notes.append("Wake-up layouts: unpinned is what a new user measures and where the library's own "
                + "cost shows (the gate uses it); same-CPU pins loop and driver to one CPU, so a wake-up is a "
                + "context switch; cross-CPU pins them to different CPUs, and every backend then pays this "
                + "machine's cross-CPU wake-up, which hides the library's cost. libdispatch runs unpinned only.")
        }
        if scenarios.contains(.footprint) {
            notes.append("Footprint grows with the number of loops: libev sizes each loop's descriptor table "
                + "by the highest descriptor number that loop watches, and with N loops alive the newest "
                + "loops' descriptors are numbered near 2 N, so the tables add up to O(N²). RunLoopKit's "
                + "loops are libev loops watching one descriptor too (the timerfd comes at a loop's first "
                + "sleep with a deadline) and grow the same way; CF keeps no per-descriptor table. Each "
                + "child makes and discards one loop before its baseline, so what the first loop costs once "
                + "per process (code pages, lazily made runtime state) is not counted per loop; each child "
                + "runs 5 times and the figure is the median, since a code page first touched after the "
                + "baseline adds 64 KiB (the kernel's fault-around) to one run of any child.")
        }
        if scenarios.contains(.instructions) {
            notes.append("Instructions: valgrind's callgrind on a strip -g copy of the benchmark, counting "
                + "N and then 5 N operations in client-request windows with nothing else inside; the "
                + "figure is the difference over 4 N, every thread included (see runloop-bench --help).")
        }
        return notes
    }

    private func context() -> [String: String] {
        var name = utsname()
        uname(&name)
        func string<T>(_ field: inout T) -> String {
            withUnsafeBytes(of: &field) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        }
        let labels = { (counts: [Int]) in counts.map(TimerScalingScenario.label).joined(separator: " ") }
        return [
            "kernel": "Linux \(string(&name.release)) \(string(&name.machine))",
            "cores": String(ProcessInfo.processInfo.activeProcessorCount),
            "libev": "\(ev_version_major()).\(ev_version_minor())",
            "date": ISO8601DateFormatter().string(from: Date()),
            "pinning": Pinning.shared.description,
            "sizes": "rounds \(rounds), wake-ups \(wakeups)/round, perform \(performItems)/round, "
                + "timer fires \(timerFires), timer CPU \(timerRates.map(String.init).joined(separator: " ")) Hz "
                + "and \(timerLoops) loops × 100 Hz in \(timerCPUSeconds) s windows, scaling N \(labels(scalingCounts)), "
                + "mode N \(labels(modeCounts)) × \(modeSwitches), footprint \(footprintLoops.map(String.init).joined(separator: " ")) loops, "
                + "main-queue blocks \(mainQueueBlocks)/round, actor hops \(hops)/round",
        ]
    }
}
