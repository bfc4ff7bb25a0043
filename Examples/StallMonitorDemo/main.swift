// A stall ("卡顿") monitor on the main run loop catching a 300 ms block: an observer in the
// common modes timestamps each phase; a watchdog thread reports when one phase outlasts 80 ms
// three times in a row, with a backtrace of the stalled main thread.
//
//     swift run StallMonitorDemo

import RunLoopKit
import Synchronization

/// Simulates heavy work on the main thread — say, decoding a large image synchronously. It
/// computes rather than sleeps: the monitor's capture signal would cut a `usleep` short.
@inline(never)
func decodeHugeImage(for duration: Duration) -> UInt64 {
    let end = ContinuousClock.now + duration
    var pixels: UInt64 = 0
    while ContinuousClock.now < end { pixels &+= 1 }
    return pixels
}

let main = EvRunLoop.main
let reports = Atomic<Int>(0)
// Reports go to stderr by default (as below); the callback receives them too, on the watchdog.
let monitor = EvStallMonitor(loop: main) { report in
    reports.add(1, ordering: .relaxed)
    let frames = report.backtrace?.frames.count ?? 0
    print("callback: \(report.phase) stalled \(report.duration) in mode \(report.mode?.name ?? "-"), \(frames) frames captured")
}
try monitor.start()

// A short task (30 ms): no report, it stays under 80 ms × 3.
main.add(EvTimer(after: .milliseconds(50)) { _ in
    _ = decodeHugeImage(for: .milliseconds(30))
    print("30 ms of work on the main thread: not a stall")
}, forMode: .common)

// The 300 ms block: reported once, while it is still going on.
main.add(EvTimer(after: .milliseconds(200)) { _ in
    print("blocking the main thread for 300 ms…")
    _ = decodeHugeImage(for: .milliseconds(300))
    print("…done")
}, forMode: .common)

// Idle time (the loop sleeping) is not a stall either: end the demo after a quiet second.
main.add(EvTimer(after: .milliseconds(1_500)) { _ in EvRunLoop.current.stop() }, forMode: .common)
main.run(mode: .default, timeout: .seconds(10))

monitor.stop()
print("stall reports: \(reports.load(ordering: .relaxed)); watchdog statistics: \(monitor.statistics)")
