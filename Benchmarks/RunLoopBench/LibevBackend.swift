import BenchLibev
import Foundation

/// Raw libev through CLibev: the floor of this design. Timers are plain `ev_timer`s (with the
/// epoll backend libev rounds every wait up to a whole millisecond; that is the honest floor).
struct LibevBackend: Backend {
    enum Flavor: Sendable { case epoll, ioUring }
    let flavor: Flavor

    var id: BackendID { flavor == .epoll ? .libev : .libevIOURing }
    /// libev reschedules a repeating timer at `at + repeat`, or at `now` if that has passed.
    var catchUp: CatchUpPolicy { .resetToNow }
    private var flags: UInt32 { flavor == .epoll ? UInt32(EVFLAG_AUTO) : UInt32(EVBACKEND_IOURING) }

    /// Whether `ev_loop_new(EVBACKEND_IOURING)` gives an io_uring loop on this kernel.
    static func ioUringWorks() -> Bool {
        guard ev_supported_backends() & UInt32(EVBACKEND_IOURING) != 0,
              let loop = ev_loop_new(UInt32(EVBACKEND_IOURING)) else { return false }
        defer { ev_loop_destroy(loop) }
        return ev_backend(loop) == UInt32(EVBACKEND_IOURING)
    }

    private func newLoop() -> OpaquePointer {
        guard let loop = ev_loop_new(flags) else { fatalError("ev_loop_new(\(flags)) failed") }
        return loop
    }

    func startLoop(onSignal: @escaping @Sendable () -> Void) -> any RunningLoop {
        LibevRunningLoop(flags: flags, onSignal: onSignal)
    }

    // MARK: Timer lateness

    /// What a timer callout needs; reached through the watcher's data pointer.
    private final class TimerContext {
        let recorder: LatenessRecorder
        let delay: Double
        init(recorder: LatenessRecorder, delay: Double) { self.recorder = recorder; self.delay = delay }
        static func from(_ w: UnsafeMutablePointer<ev_timer>?) -> TimerContext {
            Unmanaged<TimerContext>.fromOpaque(clibev_get_data(w)!).takeUnretainedValue()
        }
    }

    func runRepeatingTimer(intervalNs: UInt64, recorder: LatenessRecorder) {
        let interval = Double(intervalNs) / 1e9
        runTimer(recorder: recorder, delay: interval, repeating: true) { loop, w, _ in
            let now = nowNs()
            if !TimerContext.from(w).recorder.fired(atNs: now) { ev_timer_stop(loop, w) }
        }
    }

    func runRearmedTimer(delayNs: UInt64, recorder: LatenessRecorder) {
        runTimer(recorder: recorder, delay: Double(delayNs) / 1e9, repeating: false) { loop, w, _ in
            let now = nowNs()
            let context = TimerContext.from(w)
            guard context.recorder.fired(atNs: now) else { return }
            // Re-arm as libev's manual says (ev_timer_set + ev_timer_start on the stopped watcher),
            // from a fresh ev_now so libev's deadline and the recorded one agree.
            // The recorded due date is read before libev's clock (see RunLoopKitBackend).
            context.recorder.expect(dueNs: nowNs() + UInt64(context.delay * 1e9))
            ev_now_update(loop)
            w!.pointee.at = context.delay  // ev_timer_set(w, delay, 0)
            w!.pointee.repeat = 0
            ev_timer_start(loop, w)
        }
    }

    private func runTimer(recorder: LatenessRecorder, delay: Double, repeating: Bool,
                          callback: clibev_timer_cb) {
        let loop = newLoop()
        defer { ev_loop_destroy(loop) }
        let watcher = UnsafeMutablePointer<ev_timer>.allocate(capacity: 1)
        defer { watcher.deallocate() }
        let context = TimerContext(recorder: recorder, delay: delay)
        clibev_timer_init(watcher, callback, delay, repeating ? delay : 0)
        clibev_set_data(watcher, Unmanaged.passUnretained(context).toOpaque())
        let due = nowNs() + UInt64(delay * 1e9)  // read first, as in the re-armed timer
        ev_now_update(loop)
        if repeating { recorder.start(firstDueNs: due) } else { recorder.expect(dueNs: due) }
        ev_timer_start(loop, watcher)
        ev_run(loop, 0)  // returns when the timer is stopped: no active watchers left
        withExtendedLifetime(context) {}
    }

    // MARK: Timer scaling

    func churnTimers(offsetsNs: [UInt64], cancelOrder: [Int]) -> ChurnTimes {
        let loop = newLoop()
        defer { ev_loop_destroy(loop) }
        let n = offsetsNs.count
        let watchers = UnsafeMutablePointer<ev_timer>.allocate(capacity: n)
        defer { watchers.deallocate() }
        for i in 0..<n {
            clibev_timer_init(watchers + i, { _, _, _ in }, Double(offsetsNs[i]) / 1e9, 0)
        }
        ev_now_update(loop)
        let t0 = nowNs()
        for i in 0..<n { ev_timer_start(loop, watchers + i) }
        let t1 = nowNs()
        for i in cancelOrder { ev_timer_stop(loop, watchers + i) }
        let t2 = nowNs()
        var stillActive = 0
        for i in cancelOrder where watchers[i].active != 0 { stillActive += 1 }
        let t3 = nowNs()
        precondition(stillActive == 0, "a stopped ev_timer is still active")
        return ChurnTimes(addNs: t1 - t0, cancelNs: t2 - t1, visitNs: t3 - t2)
    }

    // MARK: Mode switching

    /// libev has no modes: the floor of a "switch" is one nested `ev_run(EVRUN_NOWAIT)` of the
    /// same loop, with the `items` timers and asyncs still active.
    func switchModes(items: Int, switches: Int) -> UInt64 {
        let loop = newLoop()
        defer { ev_loop_destroy(loop) }
        let timers = UnsafeMutablePointer<ev_timer>.allocate(capacity: max(items, 1))
        let asyncs = UnsafeMutablePointer<ev_async>.allocate(capacity: max(items, 1))
        let trigger = UnsafeMutablePointer<ev_async>.allocate(capacity: 1)
        defer { timers.deallocate(); asyncs.deallocate(); trigger.deallocate() }
        for i in 0..<items {
            clibev_timer_init(timers + i, { _, _, _ in }, 3600 + Double(i), 0)
            ev_timer_start(loop, timers + i)
            clibev_async_init(asyncs + i) { _, _, _ in }
            ev_async_start(loop, asyncs + i)
        }
        let result = SwitchContext(switches: switches)
        clibev_async_init(trigger) { loop, w, _ in
            let context = Unmanaged<SwitchContext>.fromOpaque(clibev_get_data(w)!).takeUnretainedValue()
            let t0 = nowNs()
            for _ in 0..<context.switches { ev_run(loop, Int32(EVRUN_NOWAIT)) }
            context.totalNs = nowNs() - t0
            ev_break(loop, Int32(EVBREAK_ALL))
        }
        clibev_set_data(trigger, Unmanaged.passUnretained(result).toOpaque())
        ev_async_start(loop, trigger)
        ev_async_send(loop, trigger)
        ev_run(loop, 0)
        for i in 0..<items { ev_timer_stop(loop, timers + i); ev_async_stop(loop, asyncs + i) }
        ev_async_stop(loop, trigger)
        return result.totalNs
    }

    private final class SwitchContext {
        let switches: Int
        var totalNs: UInt64 = 0
        init(switches: Int) { self.switches = switches }
    }

    // MARK: Footprint

    /// A thread's libev loop with one `ev_async`, destroyed when the handle goes.
    private final class LoopHandle {
        let loop: OpaquePointer
        let watcher = UnsafeMutablePointer<ev_async>.allocate(capacity: 1)
        init(loop: OpaquePointer) {
            self.loop = loop
            clibev_async_init(watcher) { _, _, _ in }
            ev_async_start(loop, watcher)
            ev_run(loop, Int32(EVRUN_NOWAIT))
        }
        deinit {
            ev_async_stop(loop, watcher)
            watcher.deallocate()
            ev_loop_destroy(loop)
        }
    }

    func touchLoop() -> AnyObject? { LoopHandle(loop: newLoop()) }
}
