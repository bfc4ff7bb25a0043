import Dispatch
import Synchronization

/// Scenario 1: one-way cross-thread wake-up latency, in three thread layouts (see `Pinning`). The loop sleeps; the driver thread reads
/// the monotonic clock and signals the loop's source (plus a wake-up); the source's callout
/// reads the clock again. Before each trigger the driver waits for the previous callout and
/// then pauses, so the loop is really asleep. Backends alternate sample by sample (in an
/// order that rotates), so a burst of machine noise hits all of them alike.
struct WakeupScenario {
    var samplesPerRound: Int
    var rounds: Int
    /// SwiftNIO and libdispatch, measured beside the backends (see `Peers`).
    var peers: [BackendID] = []
    /// If set, only the layouts with a figure here are measured (the gate's).
    var onlyFigures: [String: Set<BackendID>]? = nil
    var warmup = 200
    var pauseNs: UInt64 = 200_000

    /// Measured unpinned first (as a new user runs it: the gate's figures, `wakeup.*`), then
    /// same-CPU (`wakeup.samecpu.*`) and cross-CPU (`wakeup.crosscpu.*`) where pinning is on.
    func run(_ backends: [any Backend]) -> [Figure] {
        let layouts: [(Pinning.Layout, String, String)] = [
            (.unpinned, "wakeup", "wake-up"), (.sameCPU, "wakeup.samecpu", "wake-up same-CPU"),
            (.crossCPU, "wakeup.crosscpu", "wake-up cross-CPU"),
        ]
        let measured = layouts.filter { layout, prefix, _ in
            (layout == .unpinned || Pinning.shared.isAvailable)
                && onlyFigures.map { only in only.keys.contains { $0.hasPrefix(prefix + ".p") } } ?? true
        }
        var figures: [Figure] = []
        for (index, (layout, prefix, label)) in measured.enumerated() {
            let steps = (first: index * rounds, count: measured.count * rounds)
            figures += Pinning.shared.with(layout) {
                Pinning.shared.asDriver {
                    measure(backends, prefix: prefix, label: label, gated: layout == .unpinned, steps: steps)
                }
            }
        }
        return figures
    }

    private func measure(_ backends: [any Backend], prefix: String, label: String, gated: Bool,
                         steps: (first: Int, count: Int)) -> [Figure] {
        let backends = backends.filter { $0.id != .libevIOURing }
        // libdispatch's worker threads would inherit a pinned driver's CPU for good (and the
        // Swift runtime's pool runs on them): it is measured unpinned only.
        let ids = backends.map(\.id) + peers.filter { $0 != .dispatch || gated }
        let probes = ids.map { _ in WakeProbe() }
        let loops: [any RunningLoop] = zip(ids, probes).map { id, probe in
            if let backend = backends.first(where: { $0.id == id }) {
                return backend.startLoop(onSignal: { probe.hit() })
            }
            return Peers.startLoop(id, onSignal: { probe.hit() })
        }
        defer { loops.forEach { $0.stop() } }
        var latencies = Array(repeating: Latencies(), count: ids.count)
        for (loop, probe) in zip(loops, probes) {
            for _ in 0..<warmup { _ = sample(loop, probe) }
        }
        for round in 0..<rounds {
            Progress.shared.step(steps.first + round, of: steps.count,
                                 "\(label), round \(round + 1)/\(rounds), \(samplesPerRound) wake-ups per backend")
            for n in 0..<samplesPerRound {
                for i in rotated(Array(ids.indices), by: round + n) {
                    latencies[i].record(sample(loops[i], probes[i]))
                }
            }
        }
        let byBackend = Dictionary(uniqueKeysWithValues: zip(ids, latencies))
        return Latencies.percentileFigures(
            prefix: prefix, scenario: "wakeup", label: label, of: byBackend,
            goals: gated ? Self.goals : [:])
    }

    /// The targets for the unpinned run: within 1.05× libev's median and 1.2× its p99,
    /// twice as fast as CF at the median, and no slower than SwiftNIO's `execute`.
    static let goals: [String: Goal] = [
        "p50": .all([.ratioAtMost(1.05, against: .libev), .ratioAtMost(0.5, against: .cf), .ratioAtMost(1, against: .nio)]),
        "p99": .ratioAtMost(1.2, against: .libev),
    ]

    /// One wake-up: pause so the loop is asleep, trigger, wait for the callout; trigger →
    /// callout in ns.
    private func sample(_ loop: any RunningLoop, _ probe: WakeProbe) -> UInt64 {
        pause(ns: pauseNs)
        let start = nowNs()
        loop.signal()
        return probe.waitForHit() &- start
    }
}

/// Where a loop's callout reports back: it stores the time of the hit and posts a semaphore.
/// The semaphore orders the store before the driver's read.
final class WakeProbe: Sendable {
    private let hitAt = Atomic<UInt64>(0)
    private let hits = DispatchSemaphore(value: 0)

    /// Called on the loop thread, first thing in the callout.
    func hit() {
        hitAt.store(nowNs(), ordering: .relaxed)
        hits.signal()
    }

    /// Blocks until the next hit and returns its time.
    func waitForHit() -> UInt64 {
        hits.wait()
        return hitAt.load(ordering: .relaxed)
    }
}
