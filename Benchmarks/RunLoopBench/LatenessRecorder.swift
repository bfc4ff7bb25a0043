import Synchronization

/// How a backend reschedules a repeating timer that fell behind by a whole interval.
enum CatchUpPolicy: Sendable {
    /// CF and RunLoopKit (R42): the next fire date stays on the original grid, skipping
    /// missed slots.
    case grid
    /// libev: `at + repeat`, or now if that has passed (the grid restarts from now).
    case resetToNow
    /// SwiftNIO's `scheduleRepeatedTask`: the next run is due `delay` after the previous one
    /// ended (the caller reports the end with ``LatenessRecorder/ran(untilNs:)``).
    case delayAfterRun
}

/// Records the lateness of each timer callout against the fire date the backend was asked
/// for, and says when to stop: after a number of fires, or when a ``TimerWindow`` closes.
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
    /// If set, callouts are recorded only while it is open, and the timer stops once it closed.
    private let window: TimerWindow?
    private var warmFires = 0

    init(fires: Int, policy: CatchUpPolicy, intervalNs: UInt64) {
        remaining = fires
        self.policy = policy
        self.intervalNs = intervalNs
        window = nil
    }

    /// A recorder for a repeating timer that runs until `window` closes.
    init(window: TimerWindow, policy: CatchUpPolicy, intervalNs: UInt64) {
        remaining = .max
        self.policy = policy
        self.intervalNs = intervalNs
        self.window = window
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
        if let window {
            switch window.phase {
            case .warming:
                warmFires += 1
                if warmFires == TimerWindow.warmFires { window.loopWarmed() }
                if intervalNs > 0 { advance(now: now) }
                return true
            case .open: break
            case .closed: return false
            }
        }
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

    /// A callout of a `.delayAfterRun` timer ended at `end`: its next run is due an interval later.
    func ran(untilNs end: UInt64) {
        if policy == .delayAfterRun { dueNs = end + intervalNs }
    }

    private func advance(now: UInt64) {
        guard policy != .delayAfterRun else { return }
        var next = dueNs + intervalNs
        if next <= now {
            switch policy {
            case .grid: next += ((now - next) / intervalNs + 1) * intervalNs
            case .resetToNow, .delayAfterRun: next = now
            }
        }
        dueNs = next
    }
}

/// The measuring window of scenario `timercpu`, shared by every loop of one measurement: loops
/// warm up (their callouts are not recorded), the window opens (callouts are recorded and the
/// process's CPU time is read at both ends), then it closes and each timer stops at its next
/// callout.
final class TimerWindow: Sendable {
    enum Phase: Int { case warming, open, closed }

    /// Callouts a loop makes before it counts as warm.
    static let warmFires = 3

    private let rawPhase = Atomic<Int>(Phase.warming.rawValue)
    private let warmed = Atomic<Int>(0)

    var phase: Phase { Phase(rawValue: rawPhase.load(ordering: .acquiring))! }

    /// How many loops have made their warm-up callouts.
    var warmLoops: Int { warmed.load(ordering: .relaxed) }

    func loopWarmed() { warmed.add(1, ordering: .relaxed) }

    func open() { rawPhase.store(Phase.open.rawValue, ordering: .releasing) }

    func close() { rawPhase.store(Phase.closed.rawValue, ordering: .releasing) }
}
