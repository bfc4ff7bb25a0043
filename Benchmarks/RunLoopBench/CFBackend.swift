import CCFRunLoop
import Foundation

/// The real CFRunLoop inside Swift's Foundation on Linux, through the C API that
/// libFoundation.so exports (declared in CCFRunLoop). CF follows R42 for repeating timers.
struct CFBackend: Backend {
    var id: BackendID { .cf }
    var catchUp: CatchUpPolicy { .grid }

    func startLoop(onSignal: @escaping @Sendable () -> Void) -> any RunningLoop {
        CFRunningLoop(onSignal: onSignal)
    }

    // MARK: Timer lateness

    /// What a timer callout needs; reached through the timer context's info pointer.
    private final class TimerBox {
        let recorder: LatenessRecorder
        let delay: Double
        init(recorder: LatenessRecorder, delay: Double) { self.recorder = recorder; self.delay = delay }
        static func from(_ info: UnsafeMutableRawPointer?) -> TimerBox {
            Unmanaged<TimerBox>.fromOpaque(info!).takeUnretainedValue()
        }
    }

    func runRepeatingTimer(intervalNs: UInt64, recorder: LatenessRecorder) {
        let interval = Double(intervalNs) / 1e9
        runTimer(recorder: recorder, delay: interval, interval: interval, repeating: true) { timer, info in
            let now = nowNs()
            if !TimerBox.from(info).recorder.fired(atNs: now) { CFRunLoopTimerInvalidate(timer) }
        }
    }

    /// A one-shot CF timer is invalidated after its callout (R43), so the re-armed timer is a
    /// repeating one with a huge interval whose callout sets the next fire date (R44).
    func runRearmedTimer(delayNs: UInt64, recorder: LatenessRecorder) {
        let delay = Double(delayNs) / 1e9
        runTimer(recorder: recorder, delay: delay, interval: 1e8, repeating: false) { timer, info in
            let now = nowNs()
            let box = TimerBox.from(info)
            guard box.recorder.fired(atNs: now) else {
                CFRunLoopTimerInvalidate(timer)
                return
            }
            // The recorded due date is read before CF's clock (see RunLoopKitBackend).
            box.recorder.expect(dueNs: nowNs() + UInt64(box.delay * 1e9))
            CFRunLoopTimerSetNextFireDate(timer, CFAbsoluteTimeGetCurrent() + box.delay)
        }
    }

    private func runTimer(recorder: LatenessRecorder, delay: Double, interval: Double,
                          repeating: Bool, callout: CFRunLoopTimerCallBack) {
        let loop = CFRunLoopGetCurrent().takeUnretainedValue()
        let box = TimerBox(recorder: recorder, delay: delay)
        var context = CFRunLoopTimerContext(
            version: 0, info: Unmanaged.passUnretained(box).toOpaque(), retain: nil, release: nil,
            copyDescription: nil)
        let due = nowNs() + UInt64(delay * 1e9)
        let date = CFAbsoluteTimeGetCurrent() + delay
        let timer = CFRunLoopTimerCreate(nil, date, interval, 0, 0, callout, &context).takeRetainedValue()
        if repeating { recorder.start(firstDueNs: due) } else { recorder.expect(dueNs: due) }
        CFRunLoopAddTimer(loop, timer, kCFRunLoopDefaultMode)
        // Returns `finished` once the callout invalidates the timer: the mode is then empty.
        _ = CFRunLoopRunInMode(kCFRunLoopDefaultMode, 1e10, 0)
        withExtendedLifetime(box) {}
    }

    // MARK: Timer scaling

    func churnTimers(offsetsNs: [UInt64], cancelOrder: [Int]) -> ChurnTimes {
        let loop = CFRunLoopGetCurrent().takeUnretainedValue()
        let now = CFAbsoluteTimeGetCurrent()
        let timers = offsetsNs.map { Self.idleTimer(at: now + Double($0) / 1e9) }
        let t0 = nowNs()
        for timer in timers { CFRunLoopAddTimer(loop, timer, kCFRunLoopDefaultMode) }
        let t1 = nowNs()
        for i in cancelOrder { CFRunLoopTimerInvalidate(timers[i]) }
        let t2 = nowNs()
        return ChurnTimes(addNs: t1 - t0, cancelNs: t2 - t1)
    }

    // MARK: Mode switching

    private final class SwitchBox {
        let switches: Int
        let inner: CFString
        var totalNs: UInt64 = 0
        init(switches: Int, inner: CFString) { self.switches = switches; self.inner = inner }
    }

    func switchModes(items: Int, switches: Int) -> UInt64 {
        let loop = CFRunLoopGetCurrent().takeUnretainedValue()
        let inner = CFStringCreateWithCString(nil, "bench.inner", CFStringEncoding(kCFStringEncodingUTF8))
            .takeRetainedValue()
        let now = CFAbsoluteTimeGetCurrent()
        var timers: [CFRunLoopTimer] = []
        var sources: [CFRunLoopSource] = []
        for i in 0..<items {
            timers.append(Self.idleTimer(at: now + 3600 + Double(i)))
            CFRunLoopAddTimer(loop, timers[i], kCFRunLoopDefaultMode)
            // Distinct info pointers: CF compares and hashes context-less sources by info.
            sources.append(Self.makeSource(info: UnsafeMutableRawPointer(bitPattern: i + 1)) { _ in })
            CFRunLoopAddSource(loop, sources[i], kCFRunLoopDefaultMode)
        }
        let keepInnerAlive = Self.idleTimer(at: now + 7200)
        CFRunLoopAddTimer(loop, keepInnerAlive, inner)
        let box = SwitchBox(switches: switches, inner: inner)
        let trigger = Self.makeSource(info: Unmanaged.passUnretained(box).toOpaque()) { info in
            let box = Unmanaged<SwitchBox>.fromOpaque(info!).takeUnretainedValue()
            let t0 = nowNs()
            for _ in 0..<box.switches { _ = CFRunLoopRunInMode(box.inner, 0, 0) }
            box.totalNs = nowNs() - t0
        }
        CFRunLoopAddSource(loop, trigger, kCFRunLoopDefaultMode)
        CFRunLoopSourceSignal(trigger)
        _ = CFRunLoopRunInMode(kCFRunLoopDefaultMode, 1e10, 1)
        CFRunLoopSourceInvalidate(trigger)
        CFRunLoopTimerInvalidate(keepInnerAlive)
        timers.forEach { CFRunLoopTimerInvalidate($0) }
        sources.forEach { CFRunLoopSourceInvalidate($0) }
        return box.totalNs
    }

    /// A one-shot timer that does nothing, for filling a mode.
    private static func idleTimer(at date: CFAbsoluteTime) -> CFRunLoopTimer {
        CFRunLoopTimerCreate(nil, date, 0, 0, 0, { _, _ in }, nil).takeRetainedValue()
    }

    private static func makeSource(
        info: UnsafeMutableRawPointer?, perform: @convention(c) (UnsafeMutableRawPointer?) -> Void
    ) -> CFRunLoopSource {
        var context = CFRunLoopSourceContext(
            version: 0, info: info, retain: nil, release: nil, copyDescription: nil, equal: nil,
            hash: nil, schedule: nil, cancel: nil, perform: perform)
        return CFRunLoopSourceCreate(nil, 0, &context).takeRetainedValue()
    }

    // MARK: Footprint

    func touchLoop() -> AnyObject? {
        let loop = CFRunLoopGetCurrent().takeUnretainedValue()
        let source = Self.makeSource(info: nil) { _ in }
        CFRunLoopAddSource(loop, source, kCFRunLoopDefaultMode)
        _ = CFRunLoopRunInMode(kCFRunLoopDefaultMode, 0, 0)
        return nil  // the thread's CFRunLoop keeps the source; CF tears both down at thread exit
    }
}

/// CF's main loop through Foundation, the way an app runs it: `RunLoop.main.run(mode:before:)`,
/// which is CFRunLoopRunInMode(default, limit, returnAfterSourceHandled: true). CF services the
/// main queue in the main loop's common modes and counts that as a handled source. A limit this
/// far ahead means no timeout timer (CF arms a libdispatch timer for finite ones).
extension CFBackend: MainLoopBackend {
    func runMainLoopOnce() {
        _ = RunLoop.main.run(mode: .default, before: .distantFuture)
    }
}
