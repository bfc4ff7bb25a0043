// A timer that survives a tracking mode because it is in the common modes (R11–R13):
// UIKit switches the main loop to UITrackingRunLoopMode while the user scrolls; a timer added
// only to the default mode stops, one added to `.common` keeps firing. When scrolling ends, the
// default-mode timer fires once, however many ticks it missed (R41), and then stays on its grid.
//
//     swift run CommonModeTimer

import RunLoopKit
import Synchronization

let tracking = EvRunLoop.Mode("UITrackingRunLoopMode")
let loop = EvRunLoop.current
loop.addCommonMode(tracking)  // UIKit makes its tracking mode common

let defaultTicks = Atomic<Int>(0)
let commonTicks = Atomic<Int>(0)
let interval = Duration.milliseconds(50)
let defaultOnly = EvTimer(after: interval, interval: interval) { _ in defaultTicks.add(1, ordering: .relaxed) }
let everywhere = EvTimer(after: interval, interval: interval) { _ in commonTicks.add(1, ordering: .relaxed) }
loop.add(defaultOnly, forMode: .default)
loop.add(everywhere, forMode: .common)

func phase(_ name: String, mode: EvRunLoop.Mode, for duration: Duration) {
    let (before1, before2) = (defaultTicks.load(ordering: .relaxed), commonTicks.load(ordering: .relaxed))
    loop.run(mode: mode, timeout: duration)
    let (after1, after2) = (defaultTicks.load(ordering: .relaxed), commonTicks.load(ordering: .relaxed))
    print("\(name) (\(mode.name), \(duration)):".padding(68)
        + "default-mode timer +\(after1 - before1), common-modes timer +\(after2 - before2)")
}

phase("idle", mode: .default, for: .milliseconds(500))
phase("user scrolls", mode: tracking, for: .milliseconds(500))
phase("scrolling ends: one iteration", mode: .default, for: .zero)
phase("idle again", mode: .default, for: .milliseconds(500))
print("The default-mode timer stood still while scrolling and fired once when it ended;")
print("the timer in .common fired all along.")

defaultOnly.invalidate()
everywhere.invalidate()

extension String {
    func padding(_ width: Int) -> String { count >= width ? self : self + String(repeating: " ", count: width - count) }
}
