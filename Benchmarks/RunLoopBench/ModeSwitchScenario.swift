/// Scenario 5: mode switching. With N timers and N sources in the default (outer) mode, a
/// default-mode callout runs the loop `switches` times in another mode (one poll each: the
/// inner mode holds one far-future timer so it is not empty); ns per nested run as N grows.
/// libev has no modes: its figure is one nested `ev_run(EVRUN_NOWAIT)` of the same loop.
struct ModeSwitchScenario {
    var counts: [Int]
    var switches: Int
    var rounds: Int

    func run(_ backends: [any Backend]) -> [Figure] {
        let backends = backends.filter { $0.id != .libevIOURing }
        var totals: [Int: [BackendID: [Double]]] = [:]
        for round in 0..<rounds {
            let sizes = counts.map(TimerScalingScenario.label).joined(separator: ", ")
            Progress.shared.round(round, of: rounds, "N = \(sizes)")
            for n in counts {
                for backend in rotated(backends, by: round + n) {
                    let ns = BenchThread.run { backend.switchModes(items: n, switches: switches) }
                    totals[n, default: [:]][backend.id, default: []].append(Double(ns) / Double(switches))
                }
            }
        }
        return counts.map { n in
            var f = Figure(id: "modes.switch.\(TimerScalingScenario.label(n))", scenario: "modes",
                           label: "nested run in another mode, N = \(TimerScalingScenario.label(n))",
                           unit: "ns", better: .lower)
            for (backend, values) in totals[n] ?? [:] { f.values[backend] = median(values) }
            return f
        }
    }
}
