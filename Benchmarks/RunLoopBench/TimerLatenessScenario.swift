/// Scenario 3: timer lateness (callout time − scheduled fire time). A 1 ms repeating timer
/// fires `fires` times, and a 100 µs one-shot timer is re-armed from its own callout `fires`
/// times. Each backend runs a fresh loop on its own thread; backends alternate in rounds of
/// `firesPerRound` callouts, so machine drift hits all of them alike. The peer SwiftNIO is
/// measured beside them with `scheduleTask` (see `NIOTimerLateness`).
struct TimerLatenessScenario {
    var fires: Int
    /// Peers measured beside the backends: SwiftNIO's `scheduleTask` (libdispatch is not).
    var peers: [BackendID] = []
    var firesPerRound = 100
    var repeatIntervalNs: UInt64 = 1_000_000
    var oneShotDelayNs: UInt64 = 100_000

    func run(_ backends: [any Backend]) -> [Figure] {
        var repeating: [BackendID: Latencies] = [:]
        var oneShot: [BackendID: Latencies] = [:]
        var early: [BackendID: Int] = [:]
        let perRound = max(1, min(firesPerRound, fires))
        let rounds = max(1, (fires + perRound - 1) / perRound)
        let ids = backends.map(\.id) + peers.filter { $0 == .nio }
        for round in 0..<rounds {
            Progress.shared.round(round, of: rounds, "\(perRound) fires per timer and backend")
            for id in rotated(ids, by: round) {
                let backend = backends.first { $0.id == id }
                let policy = backend?.catchUp ?? .grid  // NIO: re-scheduled on the grid
                let r = LatenessRecorder(fires: perRound, policy: policy, intervalNs: repeatIntervalNs)
                let o = LatenessRecorder(fires: perRound, policy: policy, intervalNs: 0)
                if let backend {
                    BenchThread.run { backend.runRepeatingTimer(intervalNs: repeatIntervalNs, recorder: r) }
                    BenchThread.run { backend.runRearmedTimer(delayNs: oneShotDelayNs, recorder: o) }
                } else {
                    NIOTimerLateness.runRepeating(intervalNs: repeatIntervalNs, recorder: r)
                    NIOTimerLateness.runRearmed(delayNs: oneShotDelayNs, recorder: o)
                }
                repeating[id, default: Latencies()].merge(r.latencies)
                oneShot[id, default: Latencies()].merge(o.latencies)
                early[id, default: 0] += r.early + o.early
            }
        }
        for (backend, count) in early where count > 0 {
            log("timers: \(backend.title) fired \(count) callouts before their fire date (counted as 0)")
        }
        let repeatingMs = Double(repeatIntervalNs) / 1e6
        let oneShotUs = Double(oneShotDelayNs) / 1e3
        return Latencies.percentileFigures(
            prefix: "timer.repeat", scenario: "timers",
            label: "\(formatted(repeatingMs)) ms repeating timer lateness", of: repeating,
            goals: ["p50": .all([.ratioAtMost(1, against: .cf), .of(.runloopkitPrecise, .atMost(20))]),
                    "p99": .below(.cf)])
            + Latencies.percentileFigures(
                prefix: "timer.oneshot", scenario: "timers",
                label: "\(formatted(oneShotUs)) µs re-armed timer lateness", of: oneShot)
    }

    private func formatted(_ value: Double) -> String {
        value == value.rounded() ? String(Int(value)) : String(value)
    }
}
