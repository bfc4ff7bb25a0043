/// The scenarios of a run, each with the seconds it is expected to take, and how far the run
/// got: the basis of the progress line's estimate of the time left.
struct ProgressPlan {
    private var expected: [(ScenarioID, Double)]
    private var finished = 0
    private var finishedSeconds = 0.0

    init(expected: [(ScenarioID, Double)]) {
        self.expected = expected
    }

    var count: Int { expected.count }

    /// 1-based position of the scenario running now.
    var position: Int { min(finished + 1, max(expected.count, 1)) }

    mutating func append(_ scenario: ScenarioID, seconds: Double) {
        expected.append((scenario, seconds))
    }

    /// The scenario running now is done.
    mutating func finish() {
        guard finished < expected.count else { return }
        finishedSeconds += expected[finished].1
        finished += 1
    }

    /// What is still expected, at the pace the run has kept so far against the expectation
    /// (bounded, so that one slow first step does not scale the rest wildly).
    func secondsLeft(spent: Double, currentFraction: Double) -> Double {
        guard finished < expected.count else { return 0 }
        let total = expected.reduce(0) { $0 + $1.1 }
        let done = finishedSeconds + currentFraction * expected[finished].1
        let pace = done > 1 ? min(max(spent / done, 0.25), 4) : 1
        return max(0, (total - done) * pace)
    }
}

extension BenchOptions {
    /// Roughly how long `scenario` takes with these sizes on `backends` (ids) plus `peers`, from
    /// what its loops do (pauses, fires, children), calibrated on the 2-core machine.
    func expectedSeconds(_ scenario: ScenarioID, backends: Set<BackendID>, peers: Set<BackendID>) -> Double {
        let looping = Double(backends.subtracting([.libevIOURing]).count)
        let rounds = Double(self.rounds)
        switch scenario {
        case .wakeup:
            let layouts = onlyFigures.map { only in
                Double(["wakeup.p", "wakeup.samecpu.p", "wakeup.crosscpu.p"]
                    .filter { p in only.keys.contains { $0.hasPrefix(p) } }.count)
            } ?? (Pinning.shared.isAvailable ? 3 : 1)
            return layouts * (rounds * Double(wakeups) + 200) * (looping + Double(peers.count)) * 0.00045 + 1
        case .perform:
            return rounds * 1.05 * Double(performItems) * looping * 0.9e-6 + 1
        case .timers:
            let ids = Double(backends.count + peers.intersection([.nio]).count)
            return Double(max(1, timerFires / 100)) * ids * 0.16 + 0.5
        case .timercpu:
            let kinds = Double(backends.subtracting([.libevIOURing]).count + peers.intersection([.nio]).count)
            let cases = Double(TimerCPUScenario.cases(rates: timerRates, manyLoops: timerLoops,
                                                      onlyFigures: onlyFigures).count)
            return rounds * cases * kinds * (timerCPUSeconds + 0.2)
        case .scaling:
            return scalingCounts.reduce(0.0) { sum, n in
                let operations = Double(max(n, 100_000))
                let cf = backends.contains(.cf) && n <= cfScalingMax ? 1.0e-6 + 0.5e-9 * Double(n) : 0
                return sum + rounds * operations * 2 * (0.4e-6 + cf) + Double(n) * 2e-7
            }
        case .modes:
            return rounds * modeCounts.reduce(0.0) { $0 + looping * (Double(modeSwitches) * 1e-6 + Double($1) * 4e-6 + 0.01) }
        case .footprint:
            return 5 * footprintLoops.reduce(0.0) { $0 + (looping + 1) * (0.6 + Double($1) * 1.5e-4) }
        case .mainqueue:
            return (rounds * Double(mainQueueBlocks) + 200) * 2 * 0.00135
        case .actorhop:
            let defaultActor = self.backends.isEmpty || self.backends.contains(.defaultActor)
            let targets = (backends.contains(.runloopkit) ? 1 : 0) + (defaultActor ? 1 : 0) + peers.count
            return (rounds * Double(hops) + 200) * Double(targets) * 0.00053
        case .stallmonitor:
            return backends.contains(.runloopkit) ? rounds * (quick ? 0.3 : 2.2) : 0
        case .instructions:
            return InstructionsScenario(backends: backends.union(peers), quick: quick,
                                        onlyFigures: onlyFigures, operations: operations).expectedSeconds
        case .hiredis:
            // Five samples of each load per round and backend, about 0.4 s a pair at full size.
            return rounds * 5 * Double(backends.intersection([.runloopkit, .libev]).count) * (quick ? 0.04 : 0.4) + 1
        }
    }
}
