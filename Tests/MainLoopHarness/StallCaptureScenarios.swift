// Scenarios in which a stall monitor captures backtraces while the process's mappings change
// (monitors started and stopped, libraries loaded and unloaded). They run in this child process
// because on a broken capture the process dies (SIGSEGV); StallBacktraceSafetyTests checks the
// exit status and output.
import Foundation
import RunLoopKit
import TestSupport

enum StallCaptureScenarios {
    /// Blocks `milliseconds`, sleeping on through the capture signals that interrupt the sleep.
    static func stall(milliseconds: Int) {
        var request = timespec(tv_sec: 0, tv_nsec: milliseconds * 1_000_000)
        var remaining = timespec()
        while nanosleep(&request, &remaining) == -1 && errno == EINTR { request = remaining }
    }

    /// A loop thread whose loop stalls over and over: a timer every millisecond blocks
    /// `milliseconds`.
    static func stallingLoop(milliseconds: Int = 10) -> EvRunLoop {
        let handOver = DispatchSemaphore(value: 0)
        nonisolated(unsafe) var loop: EvRunLoop?
        Thread {
            loop = EvRunLoop.current
            EvRunLoop.current.add(EvTimer(after: .zero, interval: .milliseconds(1)) { _ in stall(milliseconds: milliseconds) }, forMode: .default)
            handOver.signal()
            while true { EvRunLoop.current.run(mode: .default, timeout: .seconds(3600)) }
        }.start()
        handOver.wait()
        return loop!
    }

    /// A monitor that captures a backtrace of `loop` with `style` on each stall it sees.
    static func monitor(_ loop: EvRunLoop, _ style: EvStallMonitor.BacktraceStyle, signal: Int32, captures: Captures) -> EvStallMonitor {
        let configuration = EvStallMonitor.Configuration(
            threshold: .milliseconds(2), consecutiveThresholds: 1, modes: [.default], backtrace: style,
            reportsToStandardError: false, backtraceSignal: signal, watchdogName: "ev-stall-churn")
        return EvStallMonitor(loop: loop, configuration: configuration) { report in
            if report.backtrace != nil { captures.count.withLock { $0 += 1 } }
            if let reason = report.backtraceUnavailableReason { captures.reasons.withLock { _ = $0.insert(reason) } }
        }
    }

    /// Shared by the monitors' watchdog threads. Locked with `TestLocked` (a pthread mutex), not
    /// Synchronization's `Mutex`: ThreadSanitizer (`make test-tsan`) does not see that one's
    /// futex as a lock, and two watchdogs recording at once were reported as a race (exit 66).
    final class Captures: Sendable {
        let count = TestLocked(0)
        let reasons = TestLocked<Set<String>>([])
        private let start = Date()
        private let seconds: Double
        private let wanted: Int
        init(seconds: Double, wanted: Int = 20) { (self.seconds, self.wanted) = (seconds, wanted) }

        /// Whether a scenario should go on: for `seconds`, and beyond until `wanted` backtraces
        /// were captured (a loaded machine misses many stalls), but never beyond a minute.
        var goOn: Bool {
            let elapsed = Date().timeIntervalSince(start)
            return elapsed < 60 && (elapsed < seconds || count.withLock { $0 } < wanted)
        }
        /// The line the tests look for, then why some reports had no backtrace.
        func summary() -> String {
            "survived; backtraces captured: \(count.withLock { $0 } > 0)"
                + reasons.withLock { $0.sorted().map { "\nno backtrace: \($0)" }.joined() }
        }
    }

    /// Three threads start and stop monitors (each with its own watchdog thread and image cache)
    /// on a stalling loop for `seconds`.
    static func monitorChurn(_ style: EvStallMonitor.BacktraceStyle, seconds: Double, wanted: Int) {
        let loop = stallingLoop()
        let captures = Captures(seconds: seconds, wanted: wanted)
        let group = DispatchGroup()
        for index in 0..<3 {
            group.enter()
            Thread {
                while captures.goOn {
                    let monitor = monitor(loop, style, signal: __libc_current_sigrtmax() - 3 - Int32(index), captures: captures)
                    try! monitor.start()
                    usleep(UInt32.random(in: 50_000...300_000))
                    monitor.stop()
                }
                group.leave()
            }.start()
        }
        group.wait()
        print(captures.summary())
    }

    /// Three monitors, each on a loop of its own, capture while two threads load and unload
    /// libraries not otherwise loaded, so their mappings come and go, for `seconds`.
    static func libraryChurn(_ style: EvStallMonitor.BacktraceStyle, seconds: Double) {
        let maps = (try? String(contentsOfFile: "/proc/self/maps", encoding: .utf8)) ?? ""
        let candidates = ["libgmp.so.10", "libsqlite3.so.0", "libexpat.so.1", "libbz2.so.1.0", "liblzma.so.5"]
        let libraries = candidates.filter { library in
            guard !maps.contains(library), dlopen(library, RTLD_NOW | RTLD_NOLOAD) == nil,
                let probe = dlopen(library, RTLD_NOW | RTLD_LOCAL) else { return false }
            dlclose(probe)
            return true
        }.prefix(2)
        guard !libraries.isEmpty else {
            print("no unloaded library to churn")
            exit(3)
        }
        let captures = Captures(seconds: seconds)
        let monitors = (0..<3).map { index in
            monitor(stallingLoop(), style, signal: __libc_current_sigrtmax() - 3 - Int32(index), captures: captures)
        }
        for monitor in monitors { try! monitor.start() }
        let group = DispatchGroup()
        for library in libraries {
            group.enter()
            Thread {
                while captures.goOn {
                    if let handle = dlopen(library, RTLD_NOW | RTLD_LOCAL) { dlclose(handle) }
                }
                group.leave()
            }.start()
        }
        group.wait()
        for monitor in monitors { monitor.stop() }
        print(captures.summary())
    }
}
