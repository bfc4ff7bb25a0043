import CFConformanceSupport
import Foundation
import TestSupport

/// Runs a list of `Op`s against one run-loop implementation on a fresh thread and records what
/// the loop did. `CFInterpreter` and `RunLoopKitInterpreter` supply the primitives; the meaning
/// of every operation (scripts on callouts, date slots, the run guard) lives here, once.
///
/// `@unchecked Sendable`: an interpreter is created on the test's thread, handed to the one
/// thread that runs the scenario, and read again only after that thread was joined. Callouts
/// reach it on the scenario's thread only (teardown callouts too, as that thread exits); the
/// trace is behind a lock all the same.
class Interpreter: @unchecked Sendable {
    private let events = TestLocked<[TraceEvent]>([])
    /// Scripts waiting for the next callout of an item or block, oldest first.
    private var scripts: [Int: [[Op]]] = [:]
    /// Per run in progress, innermost last: how it was started.
    private(set) var runs: [RunTimeout] = []
    /// Dates are slots of one counter (see `Op`): `past` and `future` keep their order.
    private var nextSlot = 0
    /// Timers whose date was in the past when set, and those that fired since: the next date of
    /// such a timer depends on when its date was set, which CF and RunLoopKit read differently
    /// (`KnownDifference.pastFireDatesClampedToNow`), so `query` does not report it.
    private var pastDated: Set<Int> = []
    private var firedSinceSet: Set<Int> = []
    /// Whether the scenario's thread is still running the program (teardown callouts come later).
    private(set) var isRunningProgram = false
    private var helpers: [pthread_t] = []
    /// The eventfd behind each port source, opened by `addPortSource` and closed once the program
    /// is over (after `finish()` invalidated the sources).
    private var ports: [Int: Int32] = [:]
    /// The scenario thread's kernel id and how many runs it has in progress, for `untilAsleep`.
    private var scenarioThread: Int32 = 0
    private let runDepth = TestLocked(0)

    /// The trace so far (complete once the scenario's thread was joined).
    var trace: [TraceEvent] { events.withLock { $0 } }

    func record(_ event: TraceEvent) { events.withLock { $0.append(event) } }

    /// Runs `program` on the calling thread (the scenario's fresh thread).
    final func execute(_ program: [Op]) {
        isRunningProgram = true
        scenarioThread = cfc_thread_id()
        start()
        for op in program { execute(op) }
        for helper in helpers { pthread_join(helper, nil) }
        finish()
        for port in ports.values { close(port) }
        ports = [:]
        isRunningProgram = false
        record(.threadExit)
    }

    private func execute(_ op: Op) {
        record(.operation)
        switch op {
        case .addTimer(let id, let date, let interval, let modes):
            guard !exists(id) else { return }
            let seconds = seconds(for: date)
            if seconds < 0 { pastDated.insert(id) }
            createTimer(id, at: seconds, interval: interval)
            for mode in modes { add(id, to: mode) }
        case .addSource(let id, let order, let modes):
            guard !exists(id) else { return }
            createSource(id, order: order)
            for mode in modes { add(id, to: mode) }
        case .addPortSource(let id, let order, let modes):
            guard !exists(id) else { return }
            let port = cfc_port_open()
            precondition(port >= 0, "eventfd failed: errno \(errno)")
            ports[id] = port
            createPortSource(id, order: order, port: port)
            for mode in modes { add(id, to: mode) }
        case .makeReady(let id):
            if let port = ports[id] { cfc_port_make_ready(port) }
        case .addObserver(let id, let activities, let order, let repeats, let modes):
            guard !exists(id) else { return }
            createObserver(id, activities: activities, order: order, repeats: repeats)
            for mode in modes { add(id, to: mode) }
        case .add(let id, let mode): if exists(id) { add(id, to: mode) }
        case .remove(let id, let mode): if exists(id) { remove(id, from: mode) }
        case .invalidate(let id): if exists(id) { invalidate(id) }
        case .signal(let id): signal(id)
        case .setFireDate(let id, let date):
            guard isTimer(id) else { return }
            let seconds = seconds(for: date)
            firedSinceSet.remove(id)
            if seconds < 0 { pastDated.insert(id) } else { pastDated.remove(id) }
            setFireDate(id, seconds)
        case .addCommonMode(let mode): addCommonMode(mode)
        case .performBlock(let id, let modes): performBlock(id, modes: modes)
        case .run(let mode, let timeout, let rash):
            if timeout == .guarded { installGuard(in: mode) }
            runs.append(timeout)
            runDepth.withLock { $0 = runs.count }
            let sleepGuard = timeout == .untilAsleep ? SleepGuard(self, depth: runs.count) : nil
            let result = run(mode, timeout, returnAfterSourceHandled: rash)
            sleepGuard?.cancel()
            runs.removeLast()
            runDepth.withLock { $0 = runs.count }
            record(.result(depth: runs.count + 1, mode: mode, result: result))
        case .runDefaultUntilDone:
            runs.append(.unguarded)
            runDepth.withLock { $0 = runs.count }
            runDefaultUntilDone()
            runs.removeLast()
            runDepth.withLock { $0 = runs.count }
            record(.result(depth: runs.count + 1, mode: "default", result: "done"))
        case .stop: stop()
        case .wakeUp: wakeUp()
        case .onCallout(let id, let ops): scripts[id, default: []].append(ops)
        case .onOtherThread(let ops):
            let actions = ops.compactMap { op -> (@Sendable () -> Void)? in
                if case .makeReady(let id) = op {
                    guard let port = ports[id] else { return nil }
                    return { cfc_port_make_ready(port) }
                }
                return crossThreadAction(op)
            }
            helpers.append(spawnThread { for action in actions { action() } })
        case .fromOtherThread(let ops):
            let actions = ops.compactMap { op -> (@Sendable () -> Void)? in
                if case .makeReady(let id) = op {
                    guard let port = ports[id] else { return nil }
                    return { cfc_port_make_ready(port) }
                }
                return crossThreadAction(op)
            }
            pthread_join(spawnThread { for action in actions { action() } }, nil)
        case .queryModes:
            let (current, all) = modes()
            record(.modes(current: current ?? "none", all: all.sorted()))
        case .query(let id):
            if let state = query(id) { record(state) }
        case .contains(let id, let mode):
            if exists(id) { record(.containment(id, mode: mode, contained: contains(id, in: mode))) }
        case .nextTimerFireDate(let mode):
            record(.nextTimer(mode: mode, timers: timersAtNextFireDate(of: mode)?.sorted()))
        }
    }

    /// Turns a date into seconds from the interpreter's base time.
    final func seconds(for date: FireDate) -> Double {
        defer { nextSlot += 1 }
        switch date {
        case .past: return -1000 + 2 * Double(nextSlot) + 0.5
        case .future: return 100_000 + 2 * Double(nextSlot) + 0.5
        case .soon: return 0.05
        case .at(let seconds): return seconds
        }
    }

    /// The whole second a date slot is in (what `query` reports).
    func slot(ofSeconds seconds: Double) -> Int { Int(seconds.rounded(.down)) }

    /// Whether a timer's date may be reported: not while it depends on when it was set.
    func reportsFireDate(of id: Int) -> Bool { !(firedSinceSet.contains(id) && pastDated.contains(id)) }

    /// To be called by subclasses first thing in every callout of `id`: records `event` and runs
    /// the script waiting for `id`, if any.
    final func callout(_ id: Int, _ event: TraceEvent) {
        guard isRunningProgram else {
            record(event)  // teardown: record, run nothing
            return
        }
        record(event)
        if isWaiting() { record(.waitingInCallout) }
        if case .timer = event { firedSinceSet.insert(id) }
        guard var queue = scripts[id], !queue.isEmpty else { return }
        let script = queue.removeFirst()
        scripts[id] = queue
        for op in script { execute(op) }
    }

    /// The callout of port source `id`: drains its eventfd (CF has already read it; RunLoopKit's
    /// file-descriptor source leaves that to the handler), then records it as `callout` does.
    final func portCallout(_ id: Int) {
        if let port = ports[id] { cfc_port_drain(port) }
        callout(id, .portPerform(id, mode: currentModeName()))
    }

    /// The helper thread of an `untilAsleep` run: stops the run once the scenario's thread sleeps
    /// in that run's wait (not in a nested run's), unless the run ended first.
    private final class SleepGuard: @unchecked Sendable {
        private let cancelled = TestLocked(false)
        private var thread: pthread_t?

        init(_ interpreter: Interpreter, depth: Int) {
            let stop = interpreter.crossThreadAction(.stop)!
            let tid = interpreter.scenarioThread, runDepth = interpreter.runDepth, cancelled = cancelled
            thread = spawnThread {
                while !cancelled.withLock({ $0 }) {
                    // Asleep twice, a millisecond apart: a wait that returns at once is never seen so.
                    if cfc_thread_is_asleep_in_wait(tid) != 0 {
                        usleep(1000)
                        let stopped = cancelled.withLock { cancelled -> Bool in
                            guard !cancelled, runDepth.withLock({ $0 }) == depth, cfc_thread_is_asleep_in_wait(tid) != 0 else {
                                return false
                            }
                            stop()
                            return true
                        }
                        if stopped { return }
                    }
                    usleep(100)
                }
            }
        }

        /// Called when the run returned: the helper does nothing more and is joined.
        func cancel() {
            cancelled.withLock { $0 = true }
            if let thread { pthread_join(thread, nil) }
        }
    }

    /// The guard observer's callout: stops the innermost run if it is a guarded one.
    final func guardFired() {
        if runs.last == .guarded { stop() }
    }

    // MARK: Primitives, one implementation per run loop

    func start() {}
    /// Called on the scenario's thread after the program: must invalidate every port source, so
    /// that no loop watches a descriptor that is about to be closed.
    func finish() {}
    func exists(_ id: Int) -> Bool { fatalError("abstract") }
    func isTimer(_ id: Int) -> Bool { fatalError("abstract") }
    func createTimer(_ id: Int, at seconds: Double, interval: Double) { fatalError("abstract") }
    func createSource(_ id: Int, order: Int) { fatalError("abstract") }
    /// Creates a version-1 source on `port` (an eventfd) whose callout calls `portCallout(id)`.
    func createPortSource(_ id: Int, order: Int, port: Int32) { fatalError("abstract") }
    func createObserver(_ id: Int, activities: UInt32, order: Int, repeats: Bool) { fatalError("abstract") }
    func add(_ id: Int, to mode: String) { fatalError("abstract") }
    func remove(_ id: Int, from mode: String) { fatalError("abstract") }
    func invalidate(_ id: Int) { fatalError("abstract") }
    func signal(_ id: Int) { fatalError("abstract") }
    func setFireDate(_ id: Int, _ seconds: Double) { fatalError("abstract") }
    func addCommonMode(_ mode: String) { fatalError("abstract") }
    func performBlock(_ id: Int, modes: [String]) { fatalError("abstract") }
    /// Adds the harness's BeforeWaiting observer (order `Int.max`, calls `guardFired()`) to
    /// `mode` once, if the mode exists (adding an observer would create it, R7).
    func installGuard(in mode: String) { fatalError("abstract") }
    func run(_ mode: String, _ timeout: RunTimeout, returnAfterSourceHandled: Bool) -> String { fatalError("abstract") }
    func runDefaultUntilDone() { fatalError("abstract") }
    func stop() { fatalError("abstract") }
    func wakeUp() { fatalError("abstract") }
    func isWaiting() -> Bool { fatalError("abstract") }
    func currentModeName() -> String { fatalError("abstract") }
    func modes() -> (current: String?, all: [String]) { fatalError("abstract") }
    func query(_ id: Int) -> TraceEvent? { fatalError("abstract") }
    /// Whether the loop holds item `id` in `mode` (`"common"`: the pseudo-mode).
    func contains(_ id: Int, in mode: String) -> Bool { fatalError("abstract") }
    /// The valid timers whose fire date equals the mode's next timer fire date; `nil` when the
    /// loop reports none.
    func timersAtNextFireDate(of mode: String) -> [Int]? { fatalError("abstract") }
    /// What `op` does from another thread, resolved now (on the loop's thread); `makeReady` is
    /// handled here, in the base class.
    func crossThreadAction(_ op: Op) -> (@Sendable () -> Void)? { fatalError("abstract") }
}

/// The name a trace uses for a mode: CF's and RunLoopKit's default and common names shortened.
func traceName(ofMode name: String) -> String {
    switch name {
    case "kCFRunLoopDefaultMode": return "default"
    case "kCFRunLoopCommonModes": return "common"
    default: return name
    }
}

/// Runs `interpreter` over `program` on a fresh thread, waits for the thread to exit (its loop is
/// then torn down, R4) and returns the trace. A scenario that does not finish within `seconds`
/// stops the test process with the program, instead of hanging CI.
func trace(of program: [Op], with interpreter: Interpreter, timeout seconds: Double = 60, label: String) -> [TraceEvent] {
    let done = DispatchSemaphore(value: 0)
    let thread = spawnThread {
        interpreter.execute(program)
        done.signal()
    }
    if done.wait(timeout: .now() + seconds) == .timedOut {
        fatalError("\(label): the scenario did not finish within \(seconds) s; trace so far:\n"
            + interpreter.trace.map { "  \($0)" }.joined(separator: "\n") + "\nprogram:\n" + describe(program))
    }
    pthread_join(thread, nil)
    return interpreter.trace
}

/// A program as Swift source, one operation per line.
func describe(_ program: [Op]) -> String {
    "[\n" + program.map { "    \($0)," }.joined(separator: "\n") + "\n]"
}
