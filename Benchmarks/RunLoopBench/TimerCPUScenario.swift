import Glibc

/// Scenario `timercpu`: what a repeating timer costs in CPU time, beside how late it fires.
/// Each measurement runs repeating timers on loops of their own (unpinned, as a server's
/// threads run), lets them warm up, then reads the process's CPU time (getrusage, user + system)
/// at both ends of a window of `windowSeconds`, while every callout in the window records its
/// lateness. CPU per fire is the window's CPU time ÷ the callouts in it: the loops' wake-ups,
/// system calls and dispatch, whatever thread of the process pays them. Cases: one loop at each
/// of `rates`, and `manyLoops` loops at `manyRate` each in one process. Each round measures
/// every backend once per case, in rotating order; CPU per fire is the median of the rounds,
/// lateness the percentiles of all rounds' callouts.
struct TimerCPUScenario {
    /// One shape of measurement: `loops` loops, each with one timer repeating at `rateHz`.
    struct Case: Equatable {
        let loops: Int
        let rateHz: Int

        /// Figure ids start `timercpu.<key>.`: "100x100hz", "60hz".
        var key: String { loops > 1 ? "\(loops)x\(rateHz)hz" : "\(rateHz)hz" }

        var title: String { loops > 1 ? "\(loops) loops × \(rateHz) Hz" : "one loop at \(rateHz) Hz" }

        var intervalNs: UInt64 { 1_000_000_000 / UInt64(rateHz) }
    }

    var rates: [Int]
    var manyLoops: Int
    var manyRate = 100
    var windowSeconds: Double
    var rounds: Int
    /// Peers measured beside the backends: SwiftNIO's `scheduleRepeatedTask`.
    var peers: [BackendID] = []
    /// If set, only the cases with a figure here are measured (the gate's).
    var onlyFigures: [String: Set<BackendID>]? = nil

    /// The cases measured: the many-loops case first, then one loop at each rate.
    static func cases(rates: [Int], manyLoops: Int, manyRate: Int = 100,
                      onlyFigures: [String: Set<BackendID>]?) -> [Case] {
        let all = [Case(loops: manyLoops, rateHz: manyRate)] + rates.map { Case(loops: 1, rateHz: $0) }
        guard let only = onlyFigures else { return all }
        return all.filter { c in only.keys.contains { $0.hasPrefix("timercpu.\(c.key).") } }
    }

    /// The goals for RunLoopKit's default precision, on the many-loops case.
    static let cpuGoal: Goal = .all([.ratioAtMost(1, against: .nio), .ratioAtMost(1.5, against: .libev)])
    static let latenessGoal: Goal = .ratioAtMost(1, against: .cf)

    func run(_ backends: [any Backend]) -> [Figure] {
        let kinds = backends.filter { $0.id != .libevIOURing }.map(TimerLoopKind.backend)
            + (peers.contains(.nio) ? [.nio] : [])
        let cases = Self.cases(rates: rates, manyLoops: manyLoops, manyRate: manyRate, onlyFigures: onlyFigures)
        var cpu: [Int: [BackendID: [Double]]] = [:]
        var share: [Int: [BackendID: [Double]]] = [:]
        var lateness: [Int: [BackendID: Latencies]] = [:]
        for round in 0..<rounds {
            for (index, c) in cases.enumerated() {
                Progress.shared.step(round * cases.count + index, of: rounds * cases.count,
                                     "round \(round + 1)/\(rounds), \(c.title)")
                for kind in rotated(kinds, by: round + index) {
                    let m = measure(kind, c)
                    cpu[index, default: [:]][kind.id, default: []].append(m.cpuPerFireUs)
                    share[index, default: [:]][kind.id, default: []].append(m.coreShare)
                    lateness[index, default: [:]][kind.id, default: Latencies()].merge(m.latencies)
                }
            }
        }
        return cases.enumerated().flatMap { index, c in
            figures(c, many: c.loops > 1, cpu: cpu[index] ?? [:], share: share[index] ?? [:],
                    lateness: lateness[index] ?? [:])
        }
    }

    private func figures(_ c: Case, many: Bool, cpu: [BackendID: [Double]], share: [BackendID: [Double]],
                         lateness: [BackendID: Latencies]) -> [Figure] {
        let prefix = "timercpu.\(c.key)"
        var perFire = Figure(id: "\(prefix).cpu", scenario: "timercpu", label: "CPU per fire, \(c.title)",
                             unit: "µs", better: .lower, goal: many ? Self.cpuGoal : nil)
        perFire.values = cpu.mapValues(median)
        var core = Figure(id: "\(prefix).core", scenario: "timercpu", label: "CPU, \(c.title)",
                          unit: "% of a core", better: .lower)
        core.values = share.mapValues(median)
        var p50 = Figure(id: "\(prefix).p50", scenario: "timercpu", label: "lateness p50, \(c.title)",
                         unit: "µs", better: .lower, goal: many ? Self.latenessGoal : nil)
        var p99 = Figure(id: "\(prefix).p99", scenario: "timercpu", label: "lateness p99, \(c.title)",
                         unit: "µs", better: .lower)
        for (id, values) in lateness where values.count > 0 {
            p50.values[id] = values.microseconds(atPercentile: 50)
            p99.values[id] = values.microseconds(atPercentile: 99)
        }
        p50.distribution = lateness.filter { $0.value.count > 0 }
        return many ? [perFire, core, p50, p99] : [perFire, p50, p99]
    }

    /// One measurement of `kind` in case `c`.
    private func measure(_ kind: TimerLoopKind, _ c: Case) -> (cpuPerFireUs: Double, coreShare: Double, latencies: Latencies) {
        let window = TimerWindow()
        let recorders = (0..<c.loops).map { _ in
            LatenessRecorder(window: window, policy: kind.policy, intervalNs: c.intervalNs)
        }
        let loops = kind.start(intervalNs: c.intervalNs, recorders: recorders)
        let warmUntil = nowNs() + 5_000_000_000
        while window.warmLoops < c.loops && nowNs() < warmUntil { pause(ns: 2_000_000) }
        if window.warmLoops < c.loops {
            log("timercpu: \(kind.id.title), \(c.title): only \(window.warmLoops) loops warmed up in 5 s")
        }
        let (cpuUs, wallNs) = Progress.shared.quietly { () -> (Double, UInt64) in
            let cpu0 = Self.processCPUMicroseconds()
            let t0 = nowNs()
            window.open()
            pause(ns: UInt64(windowSeconds * 1e9))
            window.close()
            let t1 = nowNs()
            return (Self.processCPUMicroseconds() - cpu0, t1 - t0)
        }
        loops.finish()
        var latencies = Latencies()
        for recorder in recorders { latencies.merge(recorder.latencies) }
        let fires = Double(max(latencies.count, 1))
        return (cpuUs / fires, cpuUs / (Double(wallNs) / 1e3) * 100, latencies)
    }

    /// User plus system CPU time of the whole process, µs.
    static func processCPUMicroseconds() -> Double {
        var usage = rusage()
        getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
        return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) * 1e6
            + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec)
    }
}
