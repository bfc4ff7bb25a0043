// A timer on time while calls on the loop's thread fail.
import Dispatch
import FaultInjection
import Foundation
import RunLoopKit
import Synchronization

/// A timer fires on time while `spec` fails calls on the loop's thread.
func timerOnTime(under spec: String) {
    let outcome = onNewThread { () -> String in
        let loop = EvRunLoop.current
        let fired = Mutex<ContinuousClock.Instant?>(nil)
        let start = ContinuousClock.now
        arm(spec + "@thread")
        loop.add(EvTimer(after: .milliseconds(100)) { _ in fired.withLock { $0 = .now } }, forMode: .default)
        let result = loop.run(mode: .default, timeout: .seconds(10), returnAfterSourceHandled: false)
        runloopkit_faults_disarm()
        guard let firedAt = fired.withLock({ $0 }) else { return "the timer never fired (run: \(result))" }
        let late = elapsed(since: start) - 0.1
        let firedAfter = Double((firedAt - start).components.attoseconds) / 1e18 + Double((firedAt - start).components.seconds)
        // Never before its date (R46), and never a whole sleep late: well under a second.
        guard firedAfter >= 0.1, late < 1 else { return "fired after \(firedAfter) s" }
        return "ok"
    }
    guard outcome == "ok" else { fail("\(spec): \(outcome)") }
    print("\(spec): timer on time")
}
