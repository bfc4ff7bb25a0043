import Dispatch
import NIOCore
import NIOPosix

/// What scenario `timercpu` runs one measurement on: a backend's loops, or SwiftNIO's.
enum TimerLoopKind: Sendable {
    /// `loops` threads, each running `runRepeatingTimer` on its own loop of the backend.
    case backend(any Backend)
    /// SwiftNIO: a group with a thread per loop, a `scheduleRepeatedTask` on each.
    case nio

    var id: BackendID {
        switch self {
        case .backend(let backend): backend.id
        case .nio: .nio
        }
    }

    /// How the kind reschedules its repeating timer, so lateness is read against its own due time.
    var policy: CatchUpPolicy {
        switch self {
        case .backend(let backend): backend.catchUp
        case .nio: .delayAfterRun
        }
    }

    /// Starts one repeating timer of `intervalNs` per recorder, each on a loop of its own,
    /// each started `intervalNs / count` after the one before, so that the timers' phases spread
    /// over the interval as independent timers' would. The timers run until the recorders'
    /// window closes; `finish` waits for that.
    func start(intervalNs: UInt64, recorders: [LatenessRecorder]) -> RunningTimerLoops {
        let gap = intervalNs / UInt64(max(recorders.count, 1))
        switch self {
        case .backend(let backend):
            let t0 = nowNs()
            let threads = recorders.enumerated().map { i, recorder in
                let at = t0 + UInt64(i) * gap
                let now = nowNs()
                if now < at { pause(ns: at - now) }
                return BenchThread(stackSize: 512 << 10) {
                    backend.runRepeatingTimer(intervalNs: intervalNs, recorder: recorder)
                }
            }
            return RunningTimerLoops { threads.forEach { $0.join() } }
        case .nio:
            return NIORepeatedTimers.start(intervalNs: intervalNs, gapNs: gap, recorders: recorders)
        }
    }
}

/// Timer loops of one measurement, running until their window closes.
struct RunningTimerLoops {
    /// Waits until every timer has stopped and its loop is gone.
    let finish: () -> Void
}

/// SwiftNIO's repeating timer: `EventLoop.scheduleRepeatedTask`, whose next run is due `delay`
/// after the previous run ended (NIO reads its clock once the task's future completed, a little
/// after the callout's own last read, so lateness reads up to about a microsecond high).
enum NIORepeatedTimers {
    static func start(intervalNs: UInt64, gapNs: UInt64, recorders: [LatenessRecorder]) -> RunningTimerLoops {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: recorders.count)
        let stopped = DispatchSemaphore(value: 0)
        let delay = TimeAmount.nanoseconds(Int64(intervalNs))
        for (i, (eventLoop, recorder)) in zip(group.makeIterator(), recorders).enumerated() {
            let initial = intervalNs + UInt64(i) * gapNs
            recorder.start(firstDueNs: nowNs() + initial)
            eventLoop.scheduleRepeatedTask(initialDelay: .nanoseconds(Int64(initial)), delay: delay) { task in
                if recorder.fired(atNs: nowNs()) {
                    recorder.ran(untilNs: nowNs())
                } else {
                    task.cancel()
                    stopped.signal()
                }
            }
        }
        let count = recorders.count
        return RunningTimerLoops {
            for _ in 0..<count { stopped.wait() }
            try? group.syncShutdownGracefully()
        }
    }
}
