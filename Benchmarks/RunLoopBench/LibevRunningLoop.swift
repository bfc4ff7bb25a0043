import BenchLibev
import Foundation
import Synchronization

/// Raw libev's side of `RunningLoop`: an `ev_loop` on its own thread with three `ev_async`
/// watchers (the source, the perform queue, stop). The perform queue is the floor a run loop
/// built on libev can reach: a mutex-protected array plus `ev_async_send`.
///
/// `@unchecked Sendable`: the loop and watchers are touched only by the loop thread after
/// start, except `ev_async_send`, which libev documents as callable from any thread.
final class LibevRunningLoop: TimerHoldingLoop, DescriptorWatchingLoop, PhaseWatchingLoop, @unchecked Sendable {
    typealias Item = @Sendable () -> Void

    private let loop: OpaquePointer
    private let sourceWatcher = UnsafeMutablePointer<ev_async>.allocate(capacity: 1)
    private let queueWatcher = UnsafeMutablePointer<ev_async>.allocate(capacity: 1)
    private let stopWatcher = UnsafeMutablePointer<ev_async>.allocate(capacity: 1)
    /// Started by ``holdFarOffTimer()`` only.
    private let farOffTimer = UnsafeMutablePointer<ev_timer>.allocate(capacity: 1)
    private var farOffTimerStarted = false
    /// Started by ``watchIdleDescriptor()`` only, on the read end of `idlePipe`.
    private let idleWatcher = UnsafeMutablePointer<ev_io>.allocate(capacity: 1)
    private var idlePipe: [Int32] = []
    /// Started by ``watchPhases()`` only; their callbacks count into ``phaseCallouts``.
    private let prepareWatcher = UnsafeMutablePointer<ev_prepare>.allocate(capacity: 1)
    private let checkWatcher = UnsafeMutablePointer<ev_check>.allocate(capacity: 1)
    private var phasesWatched = false
    private var phaseCallouts = 0
    private let onSignal: @Sendable () -> Void
    private let queue = Mutex<[Item]>([])
    private var thread: BenchThread?

    init(flags: UInt32, onSignal: @escaping @Sendable () -> Void) {
        guard let loop = ev_loop_new(flags) else { fatalError("ev_loop_new(\(flags)) failed") }
        self.loop = loop
        self.onSignal = onSignal
        let me = Unmanaged.passUnretained(self).toOpaque()
        clibev_async_init(sourceWatcher) { _, w, _ in
            LibevRunningLoop.from(w).onSignal()
        }
        clibev_async_init(queueWatcher) { _, w, _ in
            LibevRunningLoop.from(w).drainQueue()
        }
        clibev_async_init(stopWatcher) { loop, _, _ in
            ev_break(loop, Int32(EVBREAK_ALL))
        }
        for w in [sourceWatcher, queueWatcher, stopWatcher] {
            clibev_set_data(w, me)
            ev_async_start(loop, w)
        }
        // Thread creation orders everything above before the loop thread's first access.
        let run = UnsafeSendable(self)
        thread = BenchThread(cpu: Pinning.shared.loopCPU) { run.value.runUntilStopped() }
    }

    deinit {
        for w in [sourceWatcher, queueWatcher, stopWatcher] { w.deallocate() }
        farOffTimer.deallocate()
        idleWatcher.deallocate()
        prepareWatcher.deallocate()
        checkWatcher.deallocate()
        ev_loop_destroy(loop)
    }

    /// The loop a watcher of it belongs to (its data pointer, set when it was made).
    private static func from<Watcher>(_ w: UnsafeMutablePointer<Watcher>?) -> LibevRunningLoop {
        Unmanaged<LibevRunningLoop>.fromOpaque(clibev_get_data(w)!).takeUnretainedValue()
    }

    /// Runs `body` with this loop on the loop's thread (libev is not thread-safe), through the
    /// queue, and returns once it has run.
    private func onLoopThread(_ body: @escaping @Sendable (LibevRunningLoop) -> Void) {
        let done = DispatchSemaphore(value: 0)
        let me = UnsafeSendable(self)
        post({
            body(me.value)
            done.signal()
        }, count: 1)
        done.wait()
    }

    private func runUntilStopped() {
        ev_run(loop, 0)
    }

    private func drainQueue() {
        let batch = queue.withLock { items -> [Item] in
            let batch = items
            items.removeAll(keepingCapacity: true)
            return batch
        }
        for item in batch { item() }
    }

    func signal() {
        ev_async_send(loop, sourceWatcher)
    }

    func post(_ item: @escaping @Sendable () -> Void, count: Int) {
        for _ in 0..<count {
            queue.withLock { $0.append(item) }
            ev_async_send(loop, queueWatcher)
        }
    }

    /// Starts the timer on the loop's thread.
    func holdFarOffTimer() {
        onLoopThread { loop in
            clibev_timer_init(loop.farOffTimer, { _, _, _ in }, 86_400, 0)
            ev_timer_start(loop.loop, loop.farOffTimer)
            loop.farOffTimerStarted = true
        }
    }

    /// Starts the watcher on the loop's thread.
    func watchIdleDescriptor() {
        var ends: [Int32] = [0, 0]
        guard pipe(&ends) == 0 else { fatalError("pipe failed") }
        idlePipe = ends
        let readEnd = ends[0]
        onLoopThread { loop in
            clibev_io_init(loop.idleWatcher, { _, _, _ in }, readEnd, Int32(EV_READ))
            ev_io_start(loop.loop, loop.idleWatcher)
        }
    }

    /// Starts the watchers on the loop's thread.
    func watchPhases() {
        onLoopThread { loop in
            clibev_prepare_init(loop.prepareWatcher) { _, w, _ in LibevRunningLoop.from(w).phaseCallouts &+= 1 }
            clibev_check_init(loop.checkWatcher) { _, w, _ in LibevRunningLoop.from(w).phaseCallouts &+= 1 }
            let data = Unmanaged.passUnretained(loop).toOpaque()
            clibev_set_data(loop.prepareWatcher, data)
            clibev_set_data(loop.checkWatcher, data)
            ev_prepare_start(loop.loop, loop.prepareWatcher)
            ev_check_start(loop.loop, loop.checkWatcher)
            loop.phasesWatched = true
        }
    }

    func stop() {
        ev_async_send(loop, stopWatcher)
        thread?.join()
        for w in [sourceWatcher, queueWatcher, stopWatcher] { ev_async_stop(loop, w) }
        if farOffTimerStarted { ev_timer_stop(loop, farOffTimer) }
        if phasesWatched {
            ev_prepare_stop(loop, prepareWatcher)
            ev_check_stop(loop, checkWatcher)
        }
        if !idlePipe.isEmpty {
            ev_io_stop(loop, idleWatcher)
            idlePipe.forEach { close($0) }
        }
    }
}

/// Carries a value whose cross-thread use is ordered by other means (thread start, join, a
/// semaphore) into a `@Sendable` closure.
struct UnsafeSendable<T>: @unchecked Sendable {
    let value: T
    init(_ value: T) { self.value = value }
}
