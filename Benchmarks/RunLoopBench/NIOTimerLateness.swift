import Dispatch
import NIOCore
import NIOPosix

/// SwiftNIO's timers in scenario `timers`: `EventLoop.scheduleTask(deadline:)` on a one-thread
/// `MultiThreadedEventLoopGroup` (a fresh `NIORunningLoop`, its thread where every loop thread
/// goes). NIO's deadlines count CLOCK_MONOTONIC nanoseconds (`NIODeadline.uptimeNanoseconds`),
/// the clock every lateness here is read with, so each task is scheduled for exactly the instant
/// its lateness is measured against.
///
/// NIO has no repeating timer on a grid (`scheduleRepeatedTask` waits a fixed delay after each
/// run, so it drifts), so the repeating figure re-schedules from each callout for the grid's next
/// slot, skipping missed ones as CF and RunLoopKit do (R42). The re-armed one-shot is what
/// RunLoopKit's and CF's callouts do: schedule the next task `delay` after the callout.
enum NIOTimerLateness {
    /// A task every `intervalNs` on a grid from now, until `recorder` has had its fires.
    static func runRepeating(intervalNs: UInt64, recorder: LatenessRecorder) {
        let loop = NIORunningLoop(onSignal: {})
        defer { loop.stop() }
        let first = nowNs() + intervalNs
        recorder.start(firstDueNs: first)
        run(on: loop.eventLoop, firstDueNs: first) { now in
            recorder.fired(atNs: now) ? recorder.nextDueNs : nil
        }
    }

    /// A task `delayNs` ahead, scheduled again from each callout, until `recorder` has had its
    /// fires.
    static func runRearmed(delayNs: UInt64, recorder: LatenessRecorder) {
        let loop = NIORunningLoop(onSignal: {})
        defer { loop.stop() }
        let first = nowNs() + delayNs
        recorder.expect(dueNs: first)
        run(on: loop.eventLoop, firstDueNs: first) { _ in
            guard recorder.fired(atNs: nowNs()) else { return nil }
            let next = nowNs() + delayNs
            recorder.expect(dueNs: next)
            return next
        }
    }

    /// Schedules a task at `firstDueNs` whose callout (given the time it started, read first
    /// thing) returns when the next one is due, or nil to stop; returns once it stopped.
    private static func run(on eventLoop: any EventLoop, firstDueNs: UInt64,
                            callout: @escaping @Sendable (UInt64) -> UInt64?) {
        let done = DispatchSemaphore(value: 0)
        schedule(on: eventLoop, atNs: firstDueNs, done: done, callout: callout)
        done.wait()
    }

    private static func schedule(on eventLoop: any EventLoop, atNs dueNs: UInt64, done: DispatchSemaphore,
                                 callout: @escaping @Sendable (UInt64) -> UInt64?) {
        eventLoop.scheduleTask(deadline: .uptimeNanoseconds(dueNs)) {
            if let next = callout(nowNs()) {
                schedule(on: eventLoop, atNs: next, done: done, callout: callout)
            } else {
                done.signal()
            }
        }
    }
}
