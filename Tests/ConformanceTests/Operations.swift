/// The operation language of the conformance harness: what a scenario does to a run loop, the
/// same for the real CFRunLoop and for RunLoopKit (see `Interpreter`).
///
/// Items (timers, sources, observers) and perform-blocks are named by small integers chosen by
/// the scenario. Modes are named by strings: `"default"`, `"common"` (only where CF accepts
/// `kCFRunLoopCommonModes`: adding, removing, blocks) and custom names such as `"A"`.
///
/// Timer dates are never absolute: `.past` and `.future` take the next slot of a counter that
/// both interpreters advance in execution order, so every timer has its own date, dates grow in
/// the order they are set (which CF needs, see `KnownDifference.pastFireDatesClampedToNow`) and
/// no trace depends on how long anything took.
indirect enum Op: Hashable, Sendable, CustomStringConvertible {
    /// Creates timer `id` firing at `date`, every `interval` seconds (0: one-shot), and adds it
    /// to each of `modes` in turn.
    case addTimer(Int, FireDate, interval: Double, modes: [String])
    /// Creates version-0 source `id` with `order` and adds it to each of `modes`.
    case addSource(Int, order: Int, modes: [String])
    /// Creates version-1 source `id` with `order`, backed by an eventfd the interpreter owns (a
    /// port), and adds it to each of `modes`. Its callout drains the eventfd, then is traced as
    /// `portPerform`. It has no schedule or cancel callouts (CF calls those for version 0 only).
    case addPortSource(Int, order: Int, modes: [String])
    /// Makes port source `id` ready: writes to its eventfd (R37, R38), from the thread that runs
    /// the operation.
    case makeReady(Int)
    /// Creates observer `id` (activity bits as in CF) and adds it to each of `modes`.
    case addObserver(Int, activities: UInt32, order: Int, repeats: Bool, modes: [String])
    /// Adds existing item `id` to one more mode.
    case add(Int, mode: String)
    case remove(Int, mode: String)
    case invalidate(Int)
    case signal(Int)
    case setFireDate(Int, FireDate)
    case addCommonMode(String)
    /// Schedules perform-block `id` for `modes` (one name, several, or `"common"`).
    case performBlock(Int, modes: [String])
    /// CFRunLoopRunInMode / `run(mode:timeout:returnAfterSourceHandled:)`; records the result.
    case run(String, RunTimeout, returnAfterSourceHandled: Bool)
    /// CFRunLoopRun / `run()`: the default mode until a run is stopped or finds it empty (R31).
    case runDefaultUntilDone
    case stop
    case wakeUp
    /// The next callout of item or block `id` (perform, fire, observe, run) runs `ops` first.
    case onCallout(Int, [Op])
    /// Runs `ops` on a new thread, without waiting for it: `stop`, `wakeUp`, `signal` (which
    /// also wakes the loop, as a signalling thread must, R22), `setFireDate`, `invalidate`,
    /// `makeReady` (which wakes the loop by itself, R22).
    case onOtherThread([Op])
    /// Runs `ops` on a new thread and waits for that thread to end: the same cross-thread calls
    /// as `onOtherThread`, made at a fixed point of the loop's thread (C75, C80, C51–C53).
    case fromOtherThread([Op])
    /// Records the current mode and every mode of the loop.
    case queryModes
    /// Records whether item `id` is valid (and a version-0 source signalled, a timer's next fire
    /// date).
    case query(Int)
    /// Records whether the loop holds item `id` in `mode`; for `"common"`, whether it is a common
    /// item (a timer only while it is in a mode, C21).
    case contains(Int, mode: String)
    /// Records which timers' fire date a mode's next timer fire date is (C84): never the date itself.
    case nextTimerFireDate(String)

    /// The next callout of `id` stops the innermost run.
    static func stopFromCallout(_ id: Int) -> Op { .onCallout(id, [.stop]) }

    /// The next callout of `id` runs the loop again: a nested run (R58).
    static func nestedRunFromCallout(
        _ id: Int, mode: String, _ timeout: RunTimeout, returnAfterSourceHandled: Bool = false
    ) -> Op {
        .onCallout(id, [.run(mode, timeout, returnAfterSourceHandled: returnAfterSourceHandled)])
    }

    var description: String {
        func list(_ modes: [String]) -> String { "[" + modes.map { "\"\($0)\"" }.joined(separator: ", ") + "]" }
        switch self {
        case .addTimer(let id, let date, let interval, let modes):
            return ".addTimer(\(id), .\(date), interval: \(interval), modes: \(list(modes)))"
        case .addSource(let id, let order, let modes): return ".addSource(\(id), order: \(order), modes: \(list(modes)))"
        case .addPortSource(let id, let order, let modes): return ".addPortSource(\(id), order: \(order), modes: \(list(modes)))"
        case .makeReady(let id): return ".makeReady(\(id))"
        case .addObserver(let id, let activities, let order, let repeats, let modes):
            return ".addObserver(\(id), activities: \(Activity.describe(activities)), order: \(order), repeats: \(repeats), modes: \(list(modes)))"
        case .add(let id, let mode): return ".add(\(id), mode: \"\(mode)\")"
        case .remove(let id, let mode): return ".remove(\(id), mode: \"\(mode)\")"
        case .invalidate(let id): return ".invalidate(\(id))"
        case .signal(let id): return ".signal(\(id))"
        case .setFireDate(let id, let date): return ".setFireDate(\(id), .\(date))"
        case .addCommonMode(let mode): return ".addCommonMode(\"\(mode)\")"
        case .performBlock(let id, let modes): return ".performBlock(\(id), modes: \(list(modes)))"
        case .run(let mode, let timeout, let rash): return ".run(\"\(mode)\", .\(timeout), returnAfterSourceHandled: \(rash))"
        case .runDefaultUntilDone: return ".runDefaultUntilDone"
        case .stop: return ".stop"
        case .wakeUp: return ".wakeUp"
        case .onCallout(let id, let ops): return ".onCallout(\(id), [" + ops.map(\.description).joined(separator: ", ") + "])"
        case .onOtherThread(let ops): return ".onOtherThread([" + ops.map(\.description).joined(separator: ", ") + "])"
        case .fromOtherThread(let ops): return ".fromOtherThread([" + ops.map(\.description).joined(separator: ", ") + "])"
        case .queryModes: return ".queryModes"
        case .query(let id): return ".query(\(id))"
        case .contains(let id, let mode): return ".contains(\(id), mode: \"\(mode)\")"
        case .nextTimerFireDate(let mode): return ".nextTimerFireDate(\"\(mode)\")"
        }
    }
}

/// A timer date, turned into a date by the interpreter when the operation runs.
enum FireDate: Hashable, Sendable {
    /// Long gone (over 900 s ago): due as soon as the timer's mode runs.
    case past
    /// A day or more ahead: never fires during a test.
    case future
    /// 50 ms ahead (named scenarios only: a timer the loop must sleep for).
    case soon
    /// This many seconds from the interpreter's start (named scenarios only).
    case at(Double)
}

/// How long a run may last. Never a short finite timeout: its expiry would race the work.
enum RunTimeout: Hashable, Sendable {
    /// Zero: exactly one iteration that polls (R25).
    case zero
    /// 30 s, and the harness's own observer stops the run at its first BeforeWaiting, so the run
    /// sleeps exactly once (woken by that stop) and never waits for the clock.
    case guarded
    /// 30 s and no guard: the scenario ends the run itself (a timer, a stop from a callout or
    /// another thread); the 30 s are only a safety net.
    case unguarded
    /// A timeout so large that it means "no deadline" (R26): CF 1e300 s, RunLoopKit
    /// `.seconds(Int64.max)`; the scenario ends the run itself.
    case huge
    /// 30 s, and a helper thread stops the run once the loop's thread is asleep in the run's
    /// wait (seen in /proc, not guessed from time): unlike `.guarded`, a wait that returns at once
    /// (an earlier wake-up was kept, C53) shows as one more pass before the sleep that is stopped.
    case untilAsleep
    /// 50 ms (named scenarios only), for a run that sleeps with nothing to wake it but its
    /// deadline, so the expiry races nothing.
    case short
}

/// CF's observer activity bits (CFRunLoopActivity), the same as `EvRunLoop.Activity`'s.
enum Activity {
    static let entry: UInt32 = 1 << 0
    static let beforeTimers: UInt32 = 1 << 1
    static let beforeSources: UInt32 = 1 << 2
    static let beforeWaiting: UInt32 = 1 << 5
    static let afterWaiting: UInt32 = 1 << 6
    static let exit: UInt32 = 1 << 7
    static let all: UInt32 = entry | beforeTimers | beforeSources | beforeWaiting | afterWaiting | exit
    static let names: [(UInt32, String)] = [
        (entry, "entry"), (beforeTimers, "beforeTimers"), (beforeSources, "beforeSources"),
        (beforeWaiting, "beforeWaiting"), (afterWaiting, "afterWaiting"), (exit, "exit"),
    ]

    static func name(_ bit: UInt32) -> String { names.first { $0.0 == bit }?.1 ?? "0x\(String(bit, radix: 16))" }

    /// Swift source for a mask, e.g. `Activity.entry | Activity.exit`.
    static func describe(_ mask: UInt32) -> String {
        if mask == all { return "Activity.all" }
        let parts = names.filter { mask & $0.0 != 0 }.map { "Activity.\($0.1)" }
        return parts.isEmpty ? "0" : parts.joined(separator: " | ")
    }
}

/// One thing a loop did, as seen from the callouts and queries.
enum TraceEvent: Hashable, Sendable, CustomStringConvertible {
    case observer(Int, activity: UInt32, mode: String)
    case timer(Int, mode: String)
    case perform(Int, mode: String)
    /// A version-1 (port) source's callout.
    case portPerform(Int, mode: String)
    case block(Int, mode: String)
    case schedule(Int, mode: String)
    case cancel(Int, mode: String)
    /// A run returned; `depth` 1 is the outermost.
    case result(depth: Int, mode: String, result: String)
    case modes(current: String, all: [String])
    case timerState(Int, valid: Bool, fireSlot: Int?)
    case sourceState(Int, valid: Bool, signalled: Bool)
    case portSourceState(Int, valid: Bool)
    case observerState(Int, valid: Bool)
    case containment(Int, mode: String, contained: Bool)
    /// The timers whose fire date is the mode's next timer fire date; `nil` for no date.
    case nextTimer(mode: String, timers: [Int]?)
    /// The scenario's thread returned; what follows is the loop's teardown (R4).
    case threadExit
    /// `isWaiting` was true inside a callout (R23 says never).
    case waitingInCallout
    /// An operation begins (only delimits groups for `normalized`, which drops it).
    case operation

    var description: String {
        switch self {
        case .observer(let id, let activity, let mode): return "observer \(id) \(Activity.name(activity)) in \(mode)"
        case .timer(let id, let mode): return "timer \(id) in \(mode)"
        case .perform(let id, let mode): return "perform \(id) in \(mode)"
        case .portPerform(let id, let mode): return "port perform \(id) in \(mode)"
        case .block(let id, let mode): return "block \(id) in \(mode)"
        case .schedule(let id, let mode): return "schedule \(id) in \(mode)"
        case .cancel(let id, let mode): return "cancel \(id) in \(mode)"
        case .result(let depth, let mode, let result): return "run \(mode) at depth \(depth) returned \(result)"
        case .modes(let current, let all): return "current mode \(current), modes \(all)"
        case .timerState(let id, let valid, let slot): return "timer \(id) valid \(valid) fire slot \(slot.map(String.init) ?? "-")"
        case .sourceState(let id, let valid, let signalled): return "source \(id) valid \(valid) signalled \(signalled)"
        case .portSourceState(let id, let valid): return "port source \(id) valid \(valid)"
        case .observerState(let id, let valid): return "observer \(id) valid \(valid)"
        case .containment(let id, let mode, let contained): return "\(mode) \(contained ? "contains" : "lacks") \(id)"
        case .nextTimer(let mode, let timers):
            return "next timer of \(mode): " + (timers.map { $0.isEmpty ? "another date" : "\($0)" } ?? "none")
        case .threadExit: return "thread exit"
        case .waitingInCallout: return "isWaiting true in a callout"
        case .operation: return "operation"
        }
    }

    /// Schedule and cancel callouts of one operation come in CF's hash order: compared as a set.
    var isMembershipCallout: Bool {
        switch self {
        case .schedule, .cancel: return true
        default: return false
        }
    }
}

/// Makes two traces comparable: the schedule and cancel callouts of one operation (an add,
/// remove or invalidate, which CF walks in hash order) and everything after the thread's exit
/// (teardown, whose order no rule fixes) are sorted; operation marks are dropped.
func normalized(_ trace: [TraceEvent]) -> [TraceEvent] {
    var result: [TraceEvent] = []
    var group: [TraceEvent] = []
    func flush() {
        result += group.sorted { $0.description < $1.description }
        group = []
    }
    var afterExit = false
    for event in trace {
        if event == .operation {
            flush()
        } else if afterExit || event.isMembershipCallout {
            group.append(event)
        } else {
            flush()
            result.append(event)
            if event == .threadExit { afterExit = true }
        }
    }
    flush()
    return result
}
