#if canImport(RunLoopKit)
import Dispatch
import Foundation
import RunLoopKit
import Synchronization

/// RunLoopKit's `EvRunLoop`: the library under test, driven exactly like the CF backend.
struct RunLoopKitBackend: Backend {
    /// Whether its timer loops wait out a deadline awake (`.precise`) instead of the library's
    /// default, where the kernel wakes the loop at the deadline.
    var precise = false

    var id: BackendID { precise ? .runloopkitPrecise : .runloopkit }
    /// R42: a repeating timer stays on its original grid.
    var catchUp: CatchUpPolicy { .grid }

    /// The loop of this thread, in this backend's timer precision.
    private func timerLoop() -> EvRunLoop {
        let loop = EvRunLoop.current
        loop.timerPrecision = precise ? .precise : .standard
        return loop
    }

    func startLoop(onSignal: @escaping @Sendable () -> Void) -> any RunningLoop {
        RunLoopKitRunningLoop(onSignal: onSignal)
    }

    // MARK: Timer lateness

    func runRepeatingTimer(intervalNs: UInt64, recorder: LatenessRecorder) {
        let loop = timerLoop()
        let interval = Duration.nanoseconds(intervalNs)
        // The recorded due date is read before the library's clock: if anything, lateness is
        // overstated by the gap between the two readings, and no fire counts as early that was not.
        let due = nowNs() + intervalNs
        let fireAt = ContinuousClock.now + interval
        let timer = EvTimer(fireAt: fireAt, interval: interval) { timer in
            let now = nowNs()
            if !recorder.fired(atNs: now) { timer.invalidate() }
        }
        recorder.start(firstDueNs: due)
        loop.add(timer, forMode: .default)
        _ = loop.run(mode: .default, timeout: nil)  // `finished` once the timer is invalidated
    }

    /// Like CF's: a one-shot timer is invalidated after its callout (R43), so this is a timer
    /// with a huge interval whose callout sets the next fire date (R44).
    func runRearmedTimer(delayNs: UInt64, recorder: LatenessRecorder) {
        let loop = timerLoop()
        let delay = Duration.nanoseconds(delayNs)
        let due = nowNs() + delayNs  // read first, as in runRepeatingTimer
        let fireAt = ContinuousClock.now + delay
        let timer = EvTimer(fireAt: fireAt, interval: .seconds(100_000_000)) { timer in
            let now = nowNs()
            guard recorder.fired(atNs: now) else {
                timer.invalidate()
                return
            }
            recorder.expect(dueNs: nowNs() + delayNs)
            timer.fireDate = ContinuousClock.now + delay
        }
        recorder.expect(dueNs: due)
        loop.add(timer, forMode: .default)
        _ = loop.run(mode: .default, timeout: nil)
    }

    // MARK: Timer scaling

    func churnTimers(offsetsNs: [UInt64], cancelOrder: [Int]) -> ChurnTimes {
        let loop = EvRunLoop.current
        let now = ContinuousClock.now
        let timers = offsetsNs.map { offset in EvTimer(fireAt: now + .nanoseconds(offset)) { _ in } }
        let t0 = nowNs()
        for timer in timers { loop.add(timer, forMode: .default) }
        let t1 = nowNs()
        for i in cancelOrder { timers[i].invalidate() }
        let t2 = nowNs()
        var stillValid = 0
        for i in cancelOrder where timers[i].isValid { stillValid += 1 }
        let t3 = nowNs()
        precondition(stillValid == 0, "a cancelled timer is still valid")
        return ChurnTimes(addNs: t1 - t0, cancelNs: t2 - t1, visitNs: t3 - t2)
    }

    // MARK: Mode switching

    func switchModes(items: Int, switches: Int) -> UInt64 {
        let loop = EvRunLoop.current
        let inner = EvRunLoop.Mode("bench.inner")
        let now = ContinuousClock.now
        var timers: [EvTimer] = []
        var sources: [EvSource] = []
        for i in 0..<items {
            timers.append(EvTimer(fireAt: now + .seconds(3600 + i)) { _ in })
            loop.add(timers[i], forMode: .default)
            sources.append(EvSource {})
            loop.add(sources[i], forMode: .default)
        }
        let keepInnerAlive = EvTimer(fireAt: now + .seconds(7200)) { _ in }
        loop.add(keepInnerAlive, forMode: inner)
        let total = ResultSlot<UInt64>()
        let trigger = EvSource {
            let t0 = nowNs()
            for _ in 0..<switches { _ = loop.run(mode: inner, timeout: .zero) }
            total.value = nowNs() - t0
        }
        loop.add(trigger, forMode: .default)
        trigger.signal()
        _ = loop.run(mode: .default, timeout: nil, returnAfterSourceHandled: true)
        trigger.invalidate()
        keepInnerAlive.invalidate()
        timers.forEach { $0.invalidate() }
        sources.forEach { $0.invalidate() }
        return total.value ?? 0
    }

    // MARK: Footprint

    func touchLoop() -> AnyObject? {
        let loop = EvRunLoop.current
        loop.add(EvSource {}, forMode: .default)
        _ = loop.run(mode: .default, timeout: .zero)
        return nil  // the loop lives in the thread's storage until the thread exits
    }
}

/// RunLoopKit's main loop: `EvRunLoop.main` services libdispatch's main queue while it runs a
/// common mode on the main thread (R17, R60), and running the main queue counts as a handled
/// source, like CF's.
extension RunLoopKitBackend: MainLoopBackend {
    func runMainLoopOnce() {
        _ = EvRunLoop.main.run(mode: .default, timeout: nil, returnAfterSourceHandled: true)
    }
}

/// RunLoopKit's side of `RunningLoop`: `EvRunLoop.current` of a dedicated thread, running the
/// default mode with no deadline, with one `EvSource`.
final class RunLoopKitRunningLoop: TimerHoldingLoop, DescriptorWatchingLoop {
    /// What the loop thread and the driver share.
    private final class Control: Sendable {
        let stopRequested = Atomic<Bool>(false)
        let exited = DispatchSemaphore(value: 0)
    }

    private static let postModes: [EvRunLoop.Mode] = [.default]
    /// The loop, for scenarios that schedule more than the source on it (an executor).
    let loop: EvRunLoop
    private let source: EvSource
    private let control: Control
    private let thread: BenchThread
    /// ``watchIdleDescriptor()``'s source and pipe.
    private let idlePipe = Mutex<(EvFileDescriptorSource, Int32, Int32)?>(nil)

    /// Starts the loop on a new thread, pinned to `cpu` (by default the loop CPU, see `Pinning`).
    init(cpu: Int32? = Pinning.shared.loopCPU, onSignal: @escaping @Sendable () -> Void) {
        let ready = DispatchSemaphore(value: 0)
        let made = ResultSlot<(EvRunLoop, EvSource)>()
        let control = Control()
        self.control = control
        thread = BenchThread(cpu: cpu) {
            let loop = EvRunLoop.current
            let source = EvSource { onSignal() }
            loop.add(source, forMode: .default)
            made.value = (loop, source)
            ready.signal()
            while !control.stopRequested.load(ordering: .sequentiallyConsistent) {
                _ = loop.run(mode: .default, timeout: nil)
            }
            source.invalidate()
            control.exited.signal()
        }
        ready.wait()
        (loop, source) = made.value!
    }

    func signal() {
        source.signal()
        loop.wakeUp()
    }

    /// Adding is safe from any thread (R6); the sleeping loop's deadline moves at once (R44).
    func holdFarOffTimer() {
        loop.add(EvTimer(after: .seconds(86_400)) { _ in }, forMode: .default)
    }

    /// Adding is safe from any thread (R6): the loop wakes and starts the watcher; a block
    /// performed after it runs once the loop has gone round.
    func watchIdleDescriptor() {
        var ends: [Int32] = [0, 0]
        guard pipe(&ends) == 0,
              let source = try? EvFileDescriptorSource(fileDescriptor: ends[0], events: .readable, handler: { _ in })
        else { fatalError("cannot make an idle descriptor source") }
        idlePipe.withLock { $0 = (source, ends[0], ends[1]) }
        loop.add(source, forMode: .default)
        let watched = DispatchSemaphore(value: 0)
        loop.perform(inModes: Self.postModes) { watched.signal() }
        loop.wakeUp()
        watched.wait()
    }

    func post(_ item: @escaping @Sendable () -> Void, count: Int) {
        for _ in 0..<count {
            loop.perform(inModes: Self.postModes, item)
            loop.wakeUp()
        }
    }

    func stop() {
        control.stopRequested.store(true, ordering: .sequentiallyConsistent)
        // A stop that lands between two runs does nothing (R28); repeat until the thread is out.
        repeat { loop.stop() } while control.exited.wait(timeout: .now() + .milliseconds(20)) == .timedOut
        thread.join()
        if let (source, readEnd, writeEnd) = idlePipe.withLock({ $0 }) {
            source.invalidate()
            close(readEnd)
            close(writeEnd)
        }
    }
}
#endif
