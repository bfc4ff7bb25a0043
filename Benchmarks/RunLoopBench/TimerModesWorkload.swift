import CCFRunLoop
import Foundation
#if canImport(RunLoopKit)
import RunLoopKit
#endif

/// `instructions.timer-modes.<M>`: one timer added to each of M modes (one add call per mode)
/// and then invalidated, on the loop's thread; the figure is per mode. An invalidate costs
/// O(the item's modes) — so a growth factor (per mode at the largest M ÷ per mode at the
/// smallest) near 1 — where a quadratic one took 3.2 s for a timer in 100,000 modes. The modes
/// are made before the window (a first timer joins and leaves them all), so the count is the
/// adds and the invalidate, not the creation of the modes.
struct TimerModesWorkload {
    /// How many modes the timer joins.
    var modes: Int
    /// How many timers go through the cycle inside the counting window.
    var count: Int

    private static let descriptorLimit = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)

    /// Whether CF can make `modes` modes in this process: each of its modes opens a timerfd and
    /// an epoll set, so M modes need 2 M descriptors (with the soft limit raised to the hard one).
    static func cfHasDescriptors(forModes modes: Int) -> Bool {
        var limit = rlimit()
        guard getrlimit(Self.descriptorLimit, &limit) == 0 else { return false }
        return limit.rlim_max >= rlim_t(2 * modes + 256)  // RLIM_INFINITY is the largest value
    }

    /// Runs the cycle `count` times in a counting window (the caller dumps the count).
    func run(on backend: BackendID) {
        if backend == .cf {  // two descriptors per mode (see cfHasDescriptors)
            var limit = rlimit()
            if getrlimit(Self.descriptorLimit, &limit) == 0, limit.rlim_cur < limit.rlim_max {
                limit.rlim_cur = limit.rlim_max
                _ = setrlimit(Self.descriptorLimit, &limit)
            }
        }
        let names = (0..<modes).map { "bench.timer-modes.\($0)" }
        let churn: any ModeChurn = switch backend {
        #if canImport(RunLoopKit)
        case .runloopkit: RunLoopKitModeChurn(names: names, timers: count + 1)
        #endif
        case .cf: CFModeChurn(names: names, timers: count + 1)
        default: fatalError("no modes on \(backend.rawValue)")
        }
        churn.cycle(count)  // warm: every mode exists from now on
        bench_callgrind_start()
        for i in 0..<count { churn.cycle(i) }
        bench_callgrind_stop()
    }
}

/// One backend's timers and modes for ``TimerModesWorkload``, all made at init.
private protocol ModeChurn {
    /// Adds timer `index` to every mode, then invalidates it.
    func cycle(_ index: Int)
}

#if canImport(RunLoopKit)
private struct RunLoopKitModeChurn: ModeChurn {
    let loop = EvRunLoop.current
    let modes: [EvRunLoop.Mode]
    let timers: [EvTimer]

    init(names: [String], timers count: Int) {
        modes = names.map(EvRunLoop.Mode.init)
        let fireAt = ContinuousClock.now + .seconds(3600)
        timers = (0..<count).map { _ in EvTimer(fireAt: fireAt) { _ in } }
    }

    func cycle(_ index: Int) {
        let timer = timers[index]
        for mode in modes { loop.add(timer, forMode: mode) }
        timer.invalidate()
    }
}
#endif

private struct CFModeChurn: ModeChurn {
    let loop = CFRunLoopGetCurrent().takeUnretainedValue()
    let modes: [CFString]
    let timers: [CFRunLoopTimer]

    init(names: [String], timers count: Int) {
        modes = names.map { CFStringCreateWithCString(nil, $0, CFStringEncoding(kCFStringEncodingUTF8)).takeRetainedValue() }
        let fireAt = CFAbsoluteTimeGetCurrent() + 3600
        timers = (0..<count).map { _ in CFRunLoopTimerCreate(nil, fireAt, 0, 0, 0, { _, _ in }, nil).takeRetainedValue() }
    }

    func cycle(_ index: Int) {
        let timer = timers[index]
        for mode in modes { CFRunLoopAddTimer(loop, timer, mode) }
        CFRunLoopTimerInvalidate(timer)
    }
}
