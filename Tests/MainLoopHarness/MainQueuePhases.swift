import CFConformanceSupport
import Dispatch
import Foundation
import RunLoopKit

/// The main loop whose observer phases a scenario records: CF's own (CFRunLoopGetMain, C2) or
/// `EvRunLoop.main`. The process's main thread runs either, never both in one process.
enum MainLoopUnderTest: String {
    case cf, runLoopKit
}

/// What the scenario saw, in order: observer phases and main-queue work (main thread only).
nonisolated(unsafe) private var phaseLog: [String] = []

private let activityNames: [(UInt32, String)] = [
    (1 << 0, "entry"), (1 << 1, "beforeTimers"), (1 << 2, "beforeSources"),
    (1 << 5, "beforeWaiting"), (1 << 6, "afterWaiting"), (1 << 7, "exit"),
]
private let allActivities: UInt32 = activityNames.reduce(0) { $0 | $1.0 }

private func logActivity(_ activity: UInt32) {
    phaseLog.append(activityNames.first { $0.0 == activity }?.1 ?? "0x\(String(activity, radix: 16))")
}

/// C114: the main-queue shortcut is never taken in a run's first pass, nor in the pass right
/// after one that serviced the main queue, so there pending main-queue work is found by the wait
/// (beforeWaiting, afterWaiting); after a pass that serviced nothing from the main queue (here a
/// timer fired) it is taken: the work runs with no waiting phase. Returns one line per run.
func mainQueuePhases(on engine: MainLoopUnderTest) -> [String] {
    let loop = MainLoopDriver(engine)
    var lines: [String] = []

    // Run 1: work queued before the run, and work that work queues.
    DispatchQueue.main.async {
        phaseLog.append("A")
        DispatchQueue.main.async {
            phaseLog.append("B")
            loop.stop()
        }
    }
    lines.append("run 1: " + loop.run())

    // Run 2: a due timer fires in the first pass (its wait reports the timer, not the main
    // queue) and queues work; the next pass takes the shortcut.
    loop.addDueTimer {
        phaseLog.append("timer")
        DispatchQueue.main.async {
            phaseLog.append("C")
            loop.stop()
        }
    }
    lines.append("run 2: " + loop.run())
    return lines
}

/// Main-queue work already queued when a run's wait also finds a due timer whose handler runs the
/// loop nested: the nested run (of a common mode, not in main-queue work) services that work. CF's
/// pass handles the timer alone and leaves the queue's signal to the nested run's wait. Returns
/// one line.
func mainQueueWorkForARunNestedInATimer(on engine: MainLoopUnderTest) -> [String] {
    let loop = MainLoopDriver(engine)
    DispatchQueue.main.async { phaseLog.append("A") }
    loop.addDueTimer {
        phaseLog.append("timer")
        // Not serviced, the work would wait out this timeout.
        phaseLog.append("nested \(loop.runOnce(seconds: 5, returnAfterSourceHandled: true))")
        loop.stop()
    }
    return ["run: " + loop.run()]
}

/// The few calls the scenario makes, on CF's main loop or on `EvRunLoop.main`.
private struct MainLoopDriver: Sendable {
    let engine: MainLoopUnderTest

    init(_ engine: MainLoopUnderTest) {
        self.engine = engine
        switch engine {
        case .cf:
            var context = CFRunLoopObserverContext(version: 0, info: nil, retain: nil, release: nil, copyDescription: nil)
            let observer = CFRunLoopObserverCreate(nil, CFOptionFlags(allActivities), 1, 0, { _, activity, _ in
                logActivity(UInt32(activity))
            }, &context).takeRetainedValue()
            CFRunLoopAddObserver(CFRunLoopGetMain().takeUnretainedValue(), observer, kCFRunLoopDefaultMode)
        case .runLoopKit:
            let observer = EvObserver(activities: EvRunLoop.Activity(rawValue: allActivities)) { _, activity in
                logActivity(activity.rawValue)
            }
            EvRunLoop.main.add(observer, forMode: .default)
        }
    }

    /// Runs the default mode (30 s at most) and returns the log of the run and its result.
    func run() -> String {
        phaseLog = []
        let result = runOnce(seconds: 30)
        return (phaseLog + [result]).joined(separator: " ")
    }

    /// Runs the default mode once and returns its result, named as EvRunLoop.RunResult names it.
    func runOnce(seconds: Int, returnAfterSourceHandled: Bool = false) -> String {
        switch engine {
        case .cf:
            let code = Int(CFRunLoopRunInMode(kCFRunLoopDefaultMode, CFTimeInterval(seconds), returnAfterSourceHandled ? 1 : 0))
            let names = [kCFRunLoopRunFinished: "finished", kCFRunLoopRunStopped: "stopped",
                         kCFRunLoopRunTimedOut: "timedOut", kCFRunLoopRunHandledSource: "handledSource"]
            return names[code] ?? "result \(code)"
        case .runLoopKit:
            return "\(EvRunLoop.main.run(mode: .default, timeout: .seconds(seconds), returnAfterSourceHandled: returnAfterSourceHandled))"
        }
    }

    func stop() {
        switch engine {
        case .cf: CFRunLoopStop(CFRunLoopGetMain().takeUnretainedValue())
        case .runLoopKit: EvRunLoop.main.stop()
        }
    }

    /// Adds a one-shot timer, already due, to the default mode.
    func addDueTimer(_ body: @escaping @Sendable () -> Void) {
        switch engine {
        case .cf:
            let box = Unmanaged.passRetained(TimerBody(body))
            // CF releases the box when it frees the timer, after its one fire.
            var context = CFRunLoopTimerContext(version: 0, info: box.toOpaque(), retain: nil, release: { info in
                Unmanaged<TimerBody>.fromOpaque(info!).release()
            }, copyDescription: nil)
            let timer = CFRunLoopTimerCreate(nil, CFAbsoluteTimeGetCurrent() - 1, 0, 0, 0, { _, info in
                Unmanaged<TimerBody>.fromOpaque(info!).takeUnretainedValue().body()
            }, &context).takeRetainedValue()
            CFRunLoopAddTimer(CFRunLoopGetMain().takeUnretainedValue(), timer, kCFRunLoopDefaultMode)
        case .runLoopKit:
            EvRunLoop.main.add(EvTimer(fireAt: .now.advanced(by: .seconds(-1))) { _ in body() }, forMode: .default)
        }
    }
}

/// A CF timer's callout body (its context's info, released with the timer).
private final class TimerBody: Sendable {
    let body: @Sendable () -> Void
    init(_ body: @escaping @Sendable () -> Void) { self.body = body }
}
