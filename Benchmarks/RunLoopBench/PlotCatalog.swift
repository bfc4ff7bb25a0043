/// The pictures a run draws (`--plots DIR`): for each, the figure or figures it comes from, the
/// backends that must have a curve in it, and one sentence on how to read it.
struct PlotSpec: Sendable {
    enum Kind: Sendable {
        /// HdrHistogram's percentile plot of the distribution kept on figure `figure` (a p50).
        case percentiles(figure: String, ylabel: String)
        /// CPU per fire against rate (`timercpu.<R>hz.cpu`), beside the many-loops case.
        case timerCPU
        /// Instructions per operation (`instructions.*`) as grouped bars.
        case instructions
    }

    /// File stem: DIR/<name>.svg and its data DIR/<name>.dat.
    let name: String
    let title: String
    /// How to read it, for the README and the DocC page.
    let reading: String
    /// The scenario whose table the picture illustrates.
    let scenario: ScenarioID
    let kind: Kind
    /// Who has an equivalent: of these, every backend the run measured must have its curve.
    let candidates: [BackendID]

    /// The gnuplot script that draws it (in Benchmarks/plots).
    var script: String {
        switch kind {
        case .percentiles: "percentiles.gp"
        case .timerCPU: "timer-cpu.gp"
        case .instructions: "bars.gp"
        }
    }

    /// Data files the picture is drawn from: one, or for timerCPU the rates and the loops case.
    var dataFiles: [String] {
        if case .timerCPU = kind { return ["\(name).dat", "\(name)-loops.dat"] }
        return ["\(name).dat"]
    }

    private static let everyLoop: [BackendID] = [.runloopkit, .libev, .cf, .nio]
    private static let timerKinds: [BackendID] = [.runloopkit, .runloopkitPrecise, .libev, .cf, .nio]

    /// Every picture, for a run whose many-loops timer case has `timerLoops` loops.
    static func all(timerLoops: Int) -> [PlotSpec] { [
        PlotSpec(name: "wakeup-unpinned", title: "One-way cross-thread wake-up latency, unpinned",
                 reading: "Each curve is one backend's wake-up latency at each percentile, HdrHistogram's way: "
                    + "the percentile axis is logarithmic, so every further nine (90 %, 99 %, 99.9 %, 99.99 %) "
                    + "gets the same width, and lower is better all along.",
                 scenario: .wakeup, kind: .percentiles(figure: "wakeup.p50", ylabel: "wake-up latency (µs)"),
                 candidates: everyLoop + [.dispatch]),
        PlotSpec(name: "wakeup-samecpu", title: "One-way cross-thread wake-up latency, loop and driver on one CPU",
                 reading: "The same with both threads pinned to one CPU, so each wake-up is a context switch: "
                    + "the curves' gaps are the backends' own cost.",
                 scenario: .wakeup, kind: .percentiles(figure: "wakeup.samecpu.p50", ylabel: "wake-up latency (µs)"),
                 candidates: everyLoop),
        PlotSpec(name: "wakeup-crosscpu", title: "One-way cross-thread wake-up latency, loop and driver on two CPUs",
                 reading: "The same with the loop and the driver on different CPUs: every backend pays this "
                    + "machine's cross-CPU wake-up, which can hide the backends' own cost.",
                 scenario: .wakeup, kind: .percentiles(figure: "wakeup.crosscpu.p50", ylabel: "wake-up latency (µs)"),
                 candidates: everyLoop),
        PlotSpec(name: "timer-lateness-1ms", title: "Lateness of a 1 ms repeating timer",
                 reading: "How late each callout of a 1 ms repeating timer ran, by percentile, one curve per "
                    + "backend (both axes logarithmic; lateness under 0.1 µs is drawn at 0.1 µs); lower is better.",
                 scenario: .timers, kind: .percentiles(figure: "timer.repeat.p50", ylabel: "lateness (µs)"),
                 candidates: timerKinds + [.libevIOURing]),
        PlotSpec(name: "timer-lateness-rearmed", title: "Lateness of a 100 µs timer re-armed from its callout",
                 reading: "The same for a 100 µs one-shot timer set again from each callout; libev's epoll "
                    + "backend never waits less than a millisecond, which its curve shows.",
                 scenario: .timers, kind: .percentiles(figure: "timer.oneshot.p50", ylabel: "lateness (µs)"),
                 candidates: timerKinds + [.libevIOURing]),
        PlotSpec(name: "timer-cpu", title: "CPU time per timer fire",
                 reading: "CPU time (user + system, the whole process) per timer callout: on the left for one "
                    + "loop at each timer rate, on the right for \(timerLoops) loops at 100 Hz each; lower is better, "
                    + "and libev's plain ev_timer is the baseline.",
                 scenario: .timercpu, kind: .timerCPU, candidates: timerKinds),
        PlotSpec(name: "timer-lateness-loops", title: "Timer lateness, \(timerLoops) loops × 100 Hz in one process",
                 reading: "Lateness of every callout of \(timerLoops) loops, each with a 100 Hz timer, in one "
                    + "process, by percentile, from the same windows as the CPU figures.",
                 scenario: .timercpu,
                 kind: .percentiles(figure: "timercpu.\(timerLoops)x100hz.p50", ylabel: "lateness (µs)"),
                 candidates: timerKinds),
        PlotSpec(name: "instructions", title: "Instructions per operation (callgrind, all threads)",
                 reading: "Instructions per operation, one bar per backend with an equivalent, on a "
                    + "logarithmic axis: each step up is ten times as many; a missing bar means no equivalent.",
                 scenario: .instructions, kind: .instructions, candidates: [.runloopkit, .libev, .cf, .nio, .dispatch]),
    ] }

    /// The layout a wake-up picture needs pinning for, if any.
    var needsPinning: Bool { name == "wakeup-samecpu" || name == "wakeup-crosscpu" }
}

/// Colours that stay with a backend in every picture.
extension BackendID {
    var plotColour: String {
        switch self {
        case .runloopkit: "#1f77b4"
        case .runloopkitPrecise: "#17becf"
        case .libev: "#d62728"
        case .libevIOURing: "#e377c2"
        case .cf: "#2ca02c"
        case .nio: "#ff7f0e"
        case .dispatch: "#9467bd"
        case .defaultActor: "#7f7f7f"
        }
    }
}

extension BenchOptions {
    /// The backends whose curves `spec` must show after a run with these options: each candidate
    /// that was selected and works here (and, for instructions, has one of the operations counted).
    func expectedCurves(_ spec: PlotSpec) -> [BackendID] {
        var candidates = spec.candidates
        if case .instructions = spec.kind, !operations.isEmpty {
            let counted = Set(operations.flatMap(\.backends))
            candidates = candidates.filter(counted.contains)
        }
        return candidates.filter { id in
            (backends.isEmpty || backends.contains(id)) && (id != .libevIOURing || LibevBackend.ioUringWorks())
        }
    }

    /// The pictures a run of `scenarios` draws.
    func plots(for scenarios: [ScenarioID]) -> [PlotSpec] {
        PlotSpec.all(timerLoops: timerLoops).filter { spec in
            scenarios.contains(spec.scenario) && (!spec.needsPinning || Pinning.shared.isAvailable)
        }
    }
}
