import BenchLibev
import CCFRunLoop
import Dispatch
import Foundation
#if canImport(RunLoopKit)
import RunLoopKit
#endif

/// The operations whose instructions `runloop-bench instructions` counts.
enum InstructionOperation: String, CaseIterable, Codable, Sendable {
    /// One cross-thread wake-up cycle: the driver signals the sleeping loop's source and waits
    /// for its callout (both threads' instructions, the driver's wait included).
    case wakeup
    /// The same with a timer due in a day in the loop's mode, so that every sleep has a
    /// deadline and every pass has a timer to look at (the wake-up figure's loop has none).
    case wakeupTimer = "wakeup-timer"
    /// The same with an idle descriptor watched (a pipe never written), as a loop with an
    /// `EvFileDescriptorSource` has.
    case wakeupDescriptor = "wakeup-descriptor"
    /// Raw libev's wake-up cycle with an `ev_prepare` and an `ev_check` watcher started: what a
    /// host that hangs its phases on libev's iteration pays, against entering `ev_run` once per
    /// sleep as RunLoopKit does (libev only; compare with its wake-up figure).
    case wakeupPhaseWatchers = "wakeup-phase-watchers"
    /// One fire of a repeating 1 ms timer, the loop's only item: the kernel wakes the loop, the
    /// timer's callout runs (it notes its lateness, as in scenario timers), the loop sleeps again.
    case timerFire = "timer-fire"
    /// One cross-thread perform: post a block plus a wake-up; the loop runs it (in a burst).
    case perform
    /// One actor hop round trip from a task to an actor on the loop's executor and back.
    case actorhop
    /// One timer added to a mode (loop) that holds `population` timers, on the loop's thread.
    case timerAdd = "timer-add"
    /// One timer cancelled (invalidated, stopped) among `population`, on the loop's thread.
    case timerCancel = "timer-cancel"
    /// One nested run of another mode (one poll) from inside a callout.
    case modeswitch
    /// One run of the default mode (one pass) that runs a block, behind `population` blocks
    /// pending for a mode that never runs (see `BlocksStepWorkload`).
    case blocksStep = "blocks-step"
    /// One timer added to each of `population` modes and invalidated, per mode (see
    /// `TimerModesWorkload`).
    case timerModes = "timer-modes"
    /// One readiness handled among `population` descriptors ready at once (see
    /// `ReadyDescriptorsWorkload`).
    case readyDescriptors = "ready-descriptors"

    /// Who has an equivalent of the operation.
    var backends: [BackendID] {
        switch self {
        case .wakeup, .perform: [.runloopkit, .libev, .cf, .nio, .dispatch]
        case .actorhop: [.runloopkit, .nio, .dispatch]
        case .wakeupTimer, .timerFire, .timerAdd, .timerCancel, .modeswitch: [.runloopkit, .libev, .cf]
        case .wakeupDescriptor, .readyDescriptors: [.runloopkit, .libev]
        case .wakeupPhaseWatchers: [.libev]
        case .blocksStep, .timerModes: [.runloopkit, .cf]
        }
    }
}

/// What runs inside valgrind (`runloop-bench instructions-child`): for each of `counts`, sets up
/// the operation's loop and state with callgrind's instrumentation off, turns it on, performs the
/// operation that many times with nothing else in between (no clock reads kept, no sample
/// recorded), turns it off and dumps the count (one numbered callgrind file per length). The
/// parent divides the difference of two lengths by the extra operations, so set-up, tear-down and
/// the edges of the window cancel out.
struct InstructionWorkload {
    var operation: InstructionOperation
    var backend: BackendID
    var count: Int
    /// Timers already in the mode (timer-add, timer-cancel); blocks for another mode
    /// (blocks-step); modes (timer-modes); descriptors ready at once (ready-descriptors).
    var population: Int
    var warmup = 50
    /// Before each wake-up and hop: long enough that the loop is asleep again, even under valgrind.
    var pauseNs: UInt64 = 100_000

    /// Runs the operation `count` times in a counting window, then dumps the count.
    func run() {
        measure()
        bench_callgrind_dump()
    }

    private func measure() {
        switch operation {
        case .wakeup, .wakeupTimer, .wakeupDescriptor, .wakeupPhaseWatchers: wakeups()
        case .timerFire:
            BenchThread.run { timerFires() }
        case .perform: performs()
        case .actorhop: hops()
        case .timerAdd, .timerCancel:
            BenchThread.run { timerChurn() }
        case .blocksStep:
            BenchThread.run { BlocksStepWorkload.run(backend: backend, population: population, count: count) }
        case .timerModes:
            let workload = TimerModesWorkload(modes: population, count: count)
            BenchThread.run { workload.run(on: backend) }
        case .readyDescriptors:
            BenchThread.run { ReadyDescriptorsWorkload.run(backend: backend, descriptors: population, count: count) }
        case .modeswitch:
            let backend = Self.backend(backend)
            BenchThread.run {
                _ = backend.switchModes(items: 0, switches: 10)  // warm
                bench_callgrind_start()
                _ = backend.switchModes(items: 0, switches: count)
                bench_callgrind_stop()
            }
        }
    }

    private static func backend(_ id: BackendID) -> any Backend {
        guard let found = availableBackends().first(where: { $0.id == id }) else {
            fatalError("backend \(id.rawValue) is not available in this build")
        }
        return found
    }

    private func startLoop(onSignal: @escaping @Sendable () -> Void) -> any RunningLoop {
        Peers.all.contains(backend) ? Peers.startLoop(backend, onSignal: onSignal)
            : Self.backend(backend).startLoop(onSignal: onSignal)
    }

    private func wakeups() {
        let probe = WakeProbe()
        let loop = startLoop { probe.hit() }
        defer { loop.stop() }
        if operation == .wakeupTimer {
            guard let holder = loop as? any TimerHoldingLoop else { fatalError("\(backend.rawValue) cannot hold a timer") }
            holder.holdFarOffTimer()
        }
        if operation == .wakeupDescriptor {
            guard let watcher = loop as? any DescriptorWatchingLoop else { fatalError("\(backend.rawValue) cannot watch a descriptor") }
            watcher.watchIdleDescriptor()
        }
        if operation == .wakeupPhaseWatchers {
            guard let watcher = loop as? any PhaseWatchingLoop else { fatalError("\(backend.rawValue) has no phase watchers") }
            watcher.watchPhases()
        }
        func cycle() {
            pause(ns: pauseNs)
            loop.signal()
            _ = probe.waitForHit()
        }
        for _ in 0..<warmup { cycle() }
        bench_callgrind_start()
        for _ in 0..<count { cycle() }
        bench_callgrind_stop()
    }

    /// A repeating timer fires `count` times on a loop of this thread. The loop and the timer
    /// are made inside the window, the same for both lengths, so they cancel out.
    private func timerFires() {
        let backend = Self.backend(backend)
        let intervalNs: UInt64 = 1_000_000
        func fires(_ n: Int) {
            backend.runRepeatingTimer(intervalNs: intervalNs, recorder: LatenessRecorder(fires: n, policy: backend.catchUp, intervalNs: intervalNs))
        }
        fires(warmup)
        bench_callgrind_start()
        fires(count)
        bench_callgrind_stop()
    }

    /// A burst: the loop is held inside a block while the driver posts `count` blocks, each with
    /// its wake-up, then let go to run them all. Counting a loop that drains as the posts arrive
    /// would depend on how valgrind interleaves the two threads (±20 %); a burst does not.
    private func performs() {
        let probe = WakeProbe()
        let loop = startLoop {}
        defer { loop.stop() }
        func burst(_ items: Int) {
            let held = DispatchSemaphore(value: 0)
            let release = DispatchSemaphore(value: 0)
            loop.post({ held.signal(); release.wait() }, count: 1)
            held.wait()
            let counter = ItemCounter(target: items, probe: probe)
            loop.post({ counter.tick() }, count: items)
            release.signal()
            _ = probe.waitForHit()
            // The loop may still be tidying up after the burst's last block (releasing the
            // batch): one more block, run after that, makes the end of the burst deterministic.
            let fenced = DispatchSemaphore(value: 0)
            loop.post({ fenced.signal() }, count: 1)
            fenced.wait()
        }
        burst(1000)
        bench_callgrind_start()
        burst(count)
        bench_callgrind_stop()
    }

    private func hops() {
        let target: any HopTarget
        let loop: any RunningLoop
        switch backend {
        #if canImport(RunLoopKit)
        case .runloopkit:
            let running = RunLoopKitRunningLoop(cpu: nil, onSignal: {})
            loop = running
            target = LoopPinnedActor(EvRunLoopExecutor(running.loop))
        #endif
        default:
            loop = Peers.startLoop(backend, onSignal: {})
            target = Peers.hopTarget(backend, on: loop)
        }
        defer { loop.stop() }
        // From a task on the global executor; counting is switched on and off by this (main)
        // thread while it waits for the task (one task's creation is in both lengths alike).
        let pauseNs = pauseNs
        func hopTask(_ hops: Int) {
            let done = DispatchSemaphore(value: 0)
            Task.detached {
                for _ in 0..<hops {
                    pause(ns: pauseNs)
                    await target.ping()
                }
                done.signal()
            }
            done.wait()
        }
        hopTask(warmup)
        bench_callgrind_start()
        hopTask(count)
        bench_callgrind_stop()
    }

    /// Adds `count` timers at random fire dates among `population` others (and, for cancel,
    /// cancels them in random order); only the measured half is inside the window.
    private func timerChurn() {
        var random = SplitMix64(seed: 11)
        let hour: UInt64 = 3_600_000_000_000
        // The population in fire-date order (cheap to build for CF's sorted array), the measured
        // timers at random dates among them.
        let populationOffsets = (0..<population).map { hour + UInt64($0) * (hour / UInt64(max(population, 1))) }
        let offsets = (0..<count).map { _ in hour + random.next() % hour }
        let cancelOrder = Array(0..<count).shuffled(using: &random)
        let churn: TimerChurn = switch backend {
        #if canImport(RunLoopKit)
        case .runloopkit: RunLoopKitTimerChurn(population: populationOffsets, measured: offsets)
        #endif
        case .libev: LibevTimerChurn(population: populationOffsets, measured: offsets)
        case .cf: CFTimerChurn(population: populationOffsets, measured: offsets)
        default: fatalError("no timers on \(backend.rawValue)")
        }
        if operation == .timerAdd { bench_callgrind_start() }
        churn.add()
        if operation == .timerAdd { bench_callgrind_stop() }
        if operation == .timerCancel { bench_callgrind_start() }
        churn.cancel(order: cancelOrder)
        if operation == .timerCancel { bench_callgrind_stop() }
        churn.tearDown()
    }
}

/// One backend's timers for `InstructionWorkload.timerChurn`: made (and the population added)
/// at init, the measured ones added by `add`, cancelled by `cancel`.
protocol TimerChurn {
    func add()
    func cancel(order: [Int])
    func tearDown()
}

#if canImport(RunLoopKit)
private struct RunLoopKitTimerChurn: TimerChurn {
    let loop = EvRunLoop.current
    let population: [EvTimer]
    let measured: [EvTimer]

    init(population: [UInt64], measured: [UInt64]) {
        let now = ContinuousClock.now
        self.population = population.map { offset in EvTimer(fireAt: now + .nanoseconds(offset)) { _ in } }
        self.measured = measured.map { offset in EvTimer(fireAt: now + .nanoseconds(offset)) { _ in } }
        for timer in self.population { loop.add(timer, forMode: .default) }
    }

    func add() { for timer in measured { loop.add(timer, forMode: .default) } }
    func cancel(order: [Int]) { for i in order { measured[i].invalidate() } }
    func tearDown() { for timer in population { timer.invalidate() } }
}
#endif

private struct LibevTimerChurn: TimerChurn {
    let loop: OpaquePointer
    let population: UnsafeMutablePointer<ev_timer>
    let measured: UnsafeMutablePointer<ev_timer>
    let populationCount: Int
    let measuredCount: Int

    init(population offsets: [UInt64], measured measuredOffsets: [UInt64]) {
        loop = ev_loop_new(UInt32(EVFLAG_AUTO))!
        populationCount = offsets.count
        measuredCount = measuredOffsets.count
        population = .allocate(capacity: max(offsets.count, 1))
        measured = .allocate(capacity: max(measuredOffsets.count, 1))
        ev_now_update(loop)
        for (i, offset) in offsets.enumerated() {
            clibev_timer_init(population + i, { _, _, _ in }, Double(offset) / 1e9, 0)
            ev_timer_start(loop, population + i)
        }
        for (i, offset) in measuredOffsets.enumerated() {
            clibev_timer_init(measured + i, { _, _, _ in }, Double(offset) / 1e9, 0)
        }
    }

    func add() { for i in 0..<measuredCount { ev_timer_start(loop, measured + i) } }
    func cancel(order: [Int]) { for i in order { ev_timer_stop(loop, measured + i) } }
    func tearDown() {
        for i in 0..<populationCount { ev_timer_stop(loop, population + i) }
        population.deallocate()
        measured.deallocate()
        ev_loop_destroy(loop)
    }
}

private struct CFTimerChurn: TimerChurn {
    let loop = CFRunLoopGetCurrent().takeUnretainedValue()
    let population: [CFRunLoopTimer]
    let measured: [CFRunLoopTimer]

    init(population offsets: [UInt64], measured measuredOffsets: [UInt64]) {
        let now = CFAbsoluteTimeGetCurrent()
        func timer(_ offset: UInt64) -> CFRunLoopTimer {
            CFRunLoopTimerCreate(nil, now + Double(offset) / 1e9, 0, 0, 0, { _, _ in }, nil).takeRetainedValue()
        }
        population = offsets.map(timer)
        measured = measuredOffsets.map(timer)
        for timer in population { CFRunLoopAddTimer(loop, timer, kCFRunLoopDefaultMode) }
    }

    func add() { for timer in measured { CFRunLoopAddTimer(loop, timer, kCFRunLoopDefaultMode) } }
    func cancel(order: [Int]) { for i in order { CFRunLoopTimerInvalidate(measured[i]) } }
    func tearDown() { for timer in population { CFRunLoopTimerInvalidate(timer) } }
}
