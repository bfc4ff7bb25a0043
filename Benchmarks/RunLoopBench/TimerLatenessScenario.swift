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
            goals: ["p50": .atMost(20), "p99": .below(.cf)])
            + Latencies.percentileFigures(
                prefix: "timer.oneshot", scenario: "timers",
                label: "\(formatted(oneShotUs)) µs re-armed timer lateness", of: oneShot)
    }

    private func formatted(_ value: Double) -> String {
        value == value.rounded() ? String(Int(value)) : String(value)
    }
}

/// How a backend reschedules a repeating timer that fell behind by a whole interval.
enum CatchUpPolicy: Sendable {
    /// CF and RunLoopKit (R42): the next fire date stays on the original grid, skipping
    /// missed slots.
    case grid
    /// libev: `at + repeat`, or now if that has passed (the grid restarts from now).
    case resetToNow
}

/// Records the lateness of each timer callout against the fire date the backend was asked
/// for, and says when to stop.
///
/// `@unchecked Sendable`: used only by the thread that runs the timer's loop; handed over to
/// and back from that thread by thread start and join.
final class LatenessRecorder: @unchecked Sendable {
    private(set) var latencies = Latencies()
    /// Callouts that came before their fire date (recorded as lateness 0).
    private(set) var early = 0
    private var remaining: Int
    private var dueNs: UInt64 = 0
    private let intervalNs: UInt64
    private let policy: CatchUpPolicy

    init(fires: Int, policy: CatchUpPolicy, intervalNs: UInt64) {
        remaining = fires
        self.policy = policy
        self.intervalNs = intervalNs
    }

    /// A repeating timer was armed to fire first at `firstDueNs`, then every `intervalNs`.
    func start(firstDueNs: UInt64) { dueNs = firstDueNs }

    /// A one-shot timer was (re-)armed to fire at `dueNs`.
    func expect(dueNs: UInt64) { self.dueNs = dueNs }

    /// When the next callout is due (after ``fired(atNs:)``, for a repeating timer: the next
    /// slot of its grid).
    var nextDueNs: UInt64 { dueNs }

    /// A callout ran at `now` (read first thing in the callout). Returns whether the backend
    /// should keep the timer going.
    func fired(atNs now: UInt64) -> Bool {
        if now >= dueNs {
            latencies.record(now - dueNs)
        } else {
            early += 1
            latencies.record(0)
        }
        if intervalNs > 0 { advance(now: now) }
        remaining -= 1
        return remaining > 0
    }

    private func advance(now: UInt64) {
        var next = dueNs + intervalNs
        if next <= now {
            switch policy {
            case .grid: next += ((now - next) / intervalNs + 1) * intervalNs
            case .resetToNow: next = now
            }
        }
        dueNs = next
    }
}
