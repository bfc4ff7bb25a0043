/// Scenario 4: timer scaling. On a loop's own thread, add N timers with random fire dates an
/// hour or two ahead (none fires), then cancel them: in the order they were added (the goal's
/// "add then cancel"), and in a second pass in random order, the worst case for memory, where
/// each cancel touches a timer no cache holds. ns per add and per cancel at each N, and where a
/// backend can, ns per visit: one read of each timer after the random-order cancels, in the
/// same order, the memory floor under any cancel. Small N are repeated so each point covers at
/// least `minOperations` adds; each point is the median of `rounds` measurements, except that a
/// backend whose two passes take over four seconds is measured once at that N. CF keeps timers in a sorted
/// array (O(n) per add and cancel), so it is measured only up to `cfMaxCount`.
struct TimerScalingScenario {
    var counts: [Int]
    var cfMaxCount: Int
    var rounds: Int
    var minOperations = 100_000
    var seed: UInt64 = 0x5EED

    func run(_ backends: [any Backend]) -> [Figure] {
        let backends = backends.filter { $0.id != .libevIOURing }
        var add: [Int: [BackendID: Double]] = [:]
        var cancel: [Int: [BackendID: Double]] = [:]
        var shuffled: [Int: [BackendID: Double]] = [:]
        var visit: [Int: [BackendID: Double]] = [:]
        for (index, n) in counts.enumerated() {
            var rng = SplitMix64(seed: seed &+ UInt64(n))
            let hour: UInt64 = 3_600_000_000_000
            let offsets = (0..<n).map { _ in UInt64.random(in: hour...(2 * hour), using: &rng) }
            let addOrder = Array(0..<n)
            let randomOrder = addOrder.shuffled(using: &rng)
            let repetitions = max(1, minOperations / n)
            Progress.shared.step(index, of: counts.count, "N = \(Self.label(n)) × \(repetitions), \(rounds) rounds")
            var adds: [BackendID: [Double]] = [:]
            var cancels: [BackendID: [Double]] = [:]
            var shuffledCancels: [BackendID: [Double]] = [:]
            var visits: [BackendID: [Double]] = [:]
            var slow: Set<BackendID> = []
            for round in 0..<rounds {
                for backend in rotated(backends, by: round) {
                    if backend.id == .cf && n > cfMaxCount || slow.contains(backend.id) { continue }
                    let start = nowNs()
                    let inOrder = churn(backend, offsets: offsets, order: addOrder, repetitions: repetitions)
                    let random = churn(backend, offsets: offsets, order: randomOrder, repetitions: repetitions)
                    if nowNs() - start > 4_000_000_000 { slow.insert(backend.id) }
                    let ops = Double(n * repetitions)
                    adds[backend.id, default: []].append(Double(inOrder.addNs) / ops)
                    cancels[backend.id, default: []].append(Double(inOrder.cancelNs) / ops)
                    shuffledCancels[backend.id, default: []].append(Double(random.cancelNs) / ops)
                    if let visitNs = random.visitNs { visits[backend.id, default: []].append(Double(visitNs) / ops) }
                }
            }
            add[n] = adds.mapValues(median)
            cancel[n] = cancels.mapValues(median)
            shuffled[n] = shuffledCancels.mapValues(median)
            visit[n] = visits.mapValues(median)
        }
        var figures: [Figure] = []
        for n in counts {
            figures.append(figure("add", n: n, values: add[n] ?? [:]))
            figures.append(figure("cancel", n: n, values: cancel[n] ?? [:]))
            figures.append(figure("cancelShuffled", n: n, values: shuffled[n] ?? [:]))
            figures.append(figure("visit", n: n, values: visit[n] ?? [:]))
        }
        if let low = counts.min(), let high = counts.max(), high > low {
            figures.append(growth("add", low: low, high: high, values: add))
            figures.append(growth("cancel", low: low, high: high, values: cancel))
            figures.append(growth("cancelShuffled", low: low, high: high, values: shuffled))
            figures.append(growth("visit", low: low, high: high, values: visit, goal: nil))
        }
        return figures
    }

    /// `repetitions` add-then-cancel passes on one fresh thread, summed.
    private func churn(_ backend: any Backend, offsets: [UInt64], order: [Int],
                       repetitions: Int) -> ChurnTimes {
        BenchThread.run {
            var sum = ChurnTimes(addNs: 0, cancelNs: 0)
            for _ in 0..<repetitions {
                let t = backend.churnTimers(offsetsNs: offsets, cancelOrder: order)
                sum.addNs += t.addNs
                sum.cancelNs += t.cancelNs
                if let visitNs = t.visitNs { sum.visitNs = (sum.visitNs ?? 0) + visitNs }
            }
            return sum
        }
    }

    /// How each operation is named in the table.
    private static let names = [
        "add": "timer add",
        "cancel": "timer cancel in add order",
        "cancelShuffled": "timer cancel in random order",
        "visit": "timer visit in random order after cancel (one read each)",
    ]

    /// `1e5` for 100000: the name used in figure ids.
    static func label(_ n: Int) -> String {
        var exponent = 0
        var rest = n
        while rest >= 10 && rest % 10 == 0 { rest /= 10; exponent += 1 }
        return rest == 1 && exponent > 0 ? "1e\(exponent)" : String(n)
    }

    private func figure(_ op: String, n: Int, values: [BackendID: Double]) -> Figure {
        let name = Self.names[op] ?? "timer \(op)"
        var f = Figure(id: "scaling.\(op).\(Self.label(n))", scenario: "scaling",
                       label: "\(name), N = \(Self.label(n))", unit: "ns/op", better: .lower)
        f.values = values
        return f
    }

    private func growth(_ op: String, low: Int, high: Int, values: [Int: [BackendID: Double]],
                        goal: Goal? = .atMost(2)) -> Figure {
        var f = Figure(id: "scaling.\(op).growth", scenario: "scaling",
                       label: "\(Self.names[op] ?? "timer \(op)") cost at \(Self.label(high)) ÷ at \(Self.label(low))",
                       unit: "×", better: .lower, goal: goal)
        for (backend, atHigh) in values[high] ?? [:] {
            if let atLow = values[low]?[backend], atLow > 0 { f.values[backend] = atHigh / atLow }
        }
        return f
    }
}
