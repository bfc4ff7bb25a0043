/// Scenario 2: cross-thread perform throughput. The driver thread posts `items` blocks to a
/// loop running on another thread, each post followed by a wake-up; the figure is items per
/// second from the first post to the end of the last block. Each round measures every backend
/// once; the figure is the median over rounds.
struct PerformScenario {
    var items: Int
    var rounds: Int

    func run(_ backends: [any Backend]) -> [Figure] {
        Pinning.shared.asDriver { measureAll(backends) }
    }

    private func measureAll(_ backends: [any Backend]) -> [Figure] {
        let backends = backends.filter { $0.id != .libevIOURing }
        let probes = backends.map { _ in WakeProbe() }
        let loops = zip(backends, probes).map { backend, probe in
            backend.startLoop(onSignal: { probe.hit() })
        }
        defer { loops.forEach { $0.stop() } }
        var rates: [BackendID: [Double]] = [:]
        for (loop, probe) in zip(loops, probes) { _ = measure(loop, probe, items: items / 20) }
        for round in 0..<rounds {
            Progress.shared.round(round, of: rounds, "\(items) blocks per backend")
            for i in rotated(Array(backends.indices), by: round) {
                rates[backends[i].id, default: []].append(measure(loops[i], probes[i], items: items))
            }
        }
        var figure = Figure(id: "perform.rate", scenario: "perform",
                            label: "perform throughput (median)", unit: "M items/s",
                            better: .higher, goal: .all([.ratioAtLeast(0.9, against: .libev), .ratioAtLeast(6, against: .cf)]))
        for (backend, values) in rates { figure.values[backend] = median(values) / 1e6 }
        return [figure]
    }

    private func measure(_ loop: any RunningLoop, _ probe: WakeProbe, items: Int) -> Double {
        let counter = ItemCounter(target: items, probe: probe)
        let start = nowNs()
        loop.post({ counter.tick() }, count: items)
        let end = probe.waitForHit()
        return Double(items) / (Double(end - start) / 1e9)
    }
}

/// Counts performed blocks and reports the last one to the probe.
/// `@unchecked Sendable`: `count` is touched only by the loop thread that runs the blocks.
final class ItemCounter: @unchecked Sendable {
    private var count = 0
    private let target: Int
    private let probe: WakeProbe

    init(target: Int, probe: WakeProbe) {
        self.target = target
        self.probe = probe
    }

    func tick() {
        count += 1
        if count == target { probe.hit() }
    }
}

func median(_ values: [Double]) -> Double {
    guard !values.isEmpty else { return .nan }
    let sorted = values.sorted()
    let mid = sorted.count / 2
    return sorted.count % 2 == 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2
}
