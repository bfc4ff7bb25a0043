import Foundation
import Synchronization

/// What the run is doing, on standard error while it runs: the scenario and its step out of how
/// many, the time spent and an estimate of the time left. On a terminal one status line is
/// redrawn in place (and every second, so the clock moves); anywhere else (CI logs, a file)
/// each step is one plain line. Standard output keeps only the report.
final class Progress: Sendable {
    static let shared = Progress()

    private struct State {
        var plan = ProgressPlan(expected: [])
        var startNs: UInt64 = 0
        var scenario: ScenarioID?
        var scenarioStartNs: UInt64 = 0
        var step = 0
        var steps = 1
        var detail = ""
        /// The status line is on the terminal now (and must be cleared before other output).
        var shown = false
        /// While set, nothing is redrawn (a measurement of the process's CPU time is running).
        var quiet = 0
    }

    private let state = Mutex(State())
    private let interactive: Bool
    private let ticks = DispatchSemaphore(value: 0)
    private let ticking = Atomic<Bool>(false)
    private let ticker = Mutex<BenchThread?>(nil)

    private init() {
        interactive = isatty(STDERR_FILENO) != 0 && ProcessInfo.processInfo.environment["TERM"] != "dumb"
    }

    /// Starts a run of `expected` scenarios (each with the seconds it is expected to take).
    func begin(_ expected: [(ScenarioID, Double)]) {
        state.withLock {
            $0.plan = ProgressPlan(expected: expected)
            $0.startNs = nowNs()
        }
        startTicker()
    }

    /// Adds a scenario measured again (the gate's retries) to the plan.
    func expectAgain(_ scenario: ScenarioID, seconds: Double) {
        state.withLock { $0.plan.append(scenario, seconds: seconds) }
    }

    /// A scenario starts.
    func enter(_ scenario: ScenarioID) {
        state.withLock {
            $0.scenario = scenario
            $0.scenarioStartNs = nowNs()
            $0.step = 0
            $0.steps = 1
            $0.detail = ""
        }
        show(newStep: true)
    }

    /// The current scenario reached step `index` (0-based) of `count`, described by `detail`
    /// ("unpinned, round 2/3").
    func step(_ index: Int, of count: Int, _ detail: String) {
        state.withLock {
            $0.step = min(index, count)
            $0.steps = max(count, 1)
            $0.detail = detail
        }
        show(newStep: true)
    }

    /// Round `index` (0-based) of `count` of the current scenario starts.
    func round(_ index: Int, of count: Int, _ what: String = "") {
        step(index, of: count, "round \(index + 1)/\(count)" + (what.isEmpty ? "" : ", \(what)"))
    }

    /// The current scenario finished; says how long it took.
    func leave() {
        let (name, seconds) = state.withLock { s -> (String, Double) in
            defer {
                s.plan.finish()
                s.scenario = nil
            }
            return (s.scenario?.rawValue ?? "?", Double(nowNs() - s.scenarioStartNs) / 1e9)
        }
        message("\(name): done in \(String(format: "%.1f", seconds)) s")
    }

    /// The run is over: the status line goes, the ticker stops.
    func end() {
        ticking.store(false, ordering: .relaxed)
        ticks.signal()
        ticker.withLock { $0.take() }?.join()
        state.withLock { s in
            if s.shown { Self.write("\r\u{1B}[K") }
            s.shown = false
            s.scenario = nil
        }
    }

    /// Runs `body` with no redraw meanwhile, so that a measurement of the process's CPU time
    /// counts the work measured and nothing of the progress line.
    func quietly<T>(_ body: () -> T) -> T {
        state.withLock { $0.quiet += 1 }
        defer { state.withLock { $0.quiet -= 1 } }
        return body()
    }

    /// A line of its own (on a terminal, above the status line).
    func message(_ text: String) {
        state.withLock { s in
            let line = "[bench] \(text)\n"
            if s.shown { Self.write("\r\u{1B}[K" + line + status(s)) } else { Self.write(line) }
        }
    }

    private func show(newStep: Bool) {
        state.withLock { s in
            guard s.scenario != nil, newStep || s.quiet == 0 else { return }
            if interactive {
                Self.write("\r\u{1B}[K" + status(s))
                s.shown = true
            } else if newStep {
                Self.write(status(s) + "\n")
            }
        }
    }

    /// "[bench] 3/11 timers · 1m42s spent, about 3m10s left · round 7/20" (the detail last, where
    /// a narrow terminal cuts it).
    private func status(_ s: State) -> String {
        guard let scenario = s.scenario else { return "" }
        let now = nowNs()
        let spent = Double(now - s.startNs) / 1e9
        let fraction = Double(s.step) / Double(s.steps)
        let left = s.plan.secondsLeft(spent: spent, currentFraction: fraction)
        let position = "\(s.plan.position)/\(s.plan.count) \(scenario.rawValue)"
        let detail = s.detail.isEmpty ? "" : " · \(s.detail)"
        let line = "[bench] \(position) · \(Self.clock(spent)) spent, about \(Self.clock(left)) left\(detail)"
        return interactive ? String(line.prefix(Self.columns())) : line
    }

    /// Redraws the status line every second on a terminal, except while quiet.
    private func startTicker() {
        guard interactive, !ticking.exchange(true, ordering: .relaxed) else { return }
        let thread = BenchThread(stackSize: 256 << 10) { [self] in
            while ticking.load(ordering: .relaxed) {
                _ = ticks.wait(timeout: .now() + .seconds(1))
                guard ticking.load(ordering: .relaxed) else { break }
                show(newStep: false)
            }
        }
        ticker.withLock { $0 = thread }
    }

    private static func write(_ text: String) {
        FileHandle.standardError.write(Data(text.utf8))
    }

    /// The terminal's width, so the status line never wraps (a wrapped line is not redrawn).
    private static func columns() -> Int {
        var size = winsize()
        guard ioctl(STDERR_FILENO, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 20 else { return 100 }
        return Int(size.ws_col) - 1
    }

    /// 75 → "1m15s", 8 → "8s".
    static func clock(_ seconds: Double) -> String {
        let s = Int(seconds.rounded())
        return s >= 60 ? "\(s / 60)m\(String(format: "%02d", s % 60))s" : "\(s)s"
    }
}
