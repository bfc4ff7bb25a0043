import Dispatch
import Synchronization

/// Scenario 1: one-way cross-thread wake-up latency. The loop sleeps; the driver thread reads
/// the monotonic clock and signals the loop's source (plus a wake-up); the source's callout
/// reads the clock again. Before each trigger the driver waits for the previous callout and
/// then pauses, so the loop is really asleep. Backends alternate sample by sample (in an
/// order that rotates), so a burst of machine noise hits all of them alike.
struct WakeupScenario {
    var samplesPerRound: Int
    var rounds: Int
    var warmup = 200
    var pauseNs: UInt64 = 200_000

    func run(_ backends: [any Backend]) -> [Figure] {
        Pinning.shared.asDriver { measure(backends) }
    }

    private func measure(_ backends: [any Backend]) -> [Figure] {
        let backends = backends.filter { $0.id != .libevIOURing }
        let probes = backends.map { _ in WakeProbe() }
        let loops = zip(backends, probes).map { backend, probe in
            backend.startLoop(onSignal: { probe.hit() })
        }
        defer { loops.forEach { $0.stop() } }
        var latencies = Array(repeating: Latencies(), count: backends.count)
        for (loop, probe) in zip(loops, probes) {
            for _ in 0..<warmup { _ = sample(loop, probe) }
        }
        for round in 0..<rounds {
            log("wakeup: round \(round + 1)/\(rounds), \(samplesPerRound) wake-ups per backend")
            for n in 0..<samplesPerRound {
                for i in rotated(Array(backends.indices), by: round + n) {
                    latencies[i].record(sample(loops[i], probes[i]))
                }
            }
        }
        let byBackend = Dictionary(uniqueKeysWithValues: zip(backends.map(\.id), latencies))
        return Latencies.percentileFigures(
            prefix: "wakeup", scenario: "wakeup", label: "wake-up", of: byBackend,
            goals: ["p50": .ratioAtMost(1.15, against: .libev),
                    "p99": .ratioAtMost(1.15, against: .libev)])
    }

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
