import Synchronization

/// One request made with ``EvRunLoop/perform(after:inModes:target:_:)``: a one-shot timer that
/// runs a block once, unless cancelled first (Foundation's `perform(_:with:afterDelay:)`).
public final class EvDelayedPerform: Sendable {
    /// Where a request is in its life.
    public enum State: Sendable, Equatable {
        /// Waiting for its time and one of its modes.
        case pending
        /// Its block is running on the loop's thread.
        case running
        /// Its block has run.
        case performed
        /// Cancelled before its block started; it never runs.
        case cancelled
        /// The loop's thread exited before the block started (R4); it never runs.
        case loopExited
    }

    /// The loop the request was made on.
    public let loop: EvRunLoop
    let core: DelayedPerformCore
    let timer: EvTimer

    init(loop: EvRunLoop, core: DelayedPerformCore, timer: EvTimer) {
        self.loop = loop
        self.core = core
        self.timer = timer
    }

    /// Where the request is in its life. Safe from any thread.
    ///
    /// A request reaches ``State/performed``, ``State/cancelled`` or ``State/loopExited`` only
    /// once its block and target have been released: until then it still reads as it was
    /// (``State/running``, or ``State/pending`` while another thread cancels it or its loop's
    /// thread ends it).
    public var state: State { core.state }

    /// Cancels the request if its block has not started: its timer leaves every mode (so it no
    /// longer keeps them from being empty, R16) and the block and target are released.
    ///
    /// - Thread: any. From the loop's own thread the answer is exact; from another thread a
    ///   block that has already started is not interrupted (the call then returns `false`).
    /// - Returns: `true` if this call cancelled it; `false` if it had already run, started or
    ///   been cancelled, or its loop's thread had exited (or another thread is cancelling it, or
    ///   its loop's thread is ending it, at this moment).
    @discardableResult
    public func cancel() -> Bool {
        guard core.claim(.cancelled) else { return false }
        timer.invalidate()
        core.finish(as: .cancelled)
        return true
    }
}

extension EvRunLoop {
    /// Runs `block` on this loop's thread once `delay` has passed and one of `modes` runs
    /// (Foundation's `perform(_:with:afterDelay:inModes:)`): a one-shot timer (R43) in
    /// each of `modes`, so it follows the timer rules — it never fires early (R46), a mode that
    /// is not running holds it back and it fires once when the mode comes back (R41), and while
    /// pending it keeps its modes from being empty (R16).
    ///
    /// - Parameters:
    ///   - delay: how long to wait at least; zero runs it at the loop's next timer step.
    ///   - modes: where it may run; Foundation's default is `.default` only. ``Mode/common``
    ///     means every common mode (R12).
    ///   - target: an object the request belongs to, for ``cancelPerformRequests(target:)``
    ///     (Foundation's `cancelPreviousPerformRequests(withTarget:)`). It is held until the
    ///     request has run or was cancelled, as Foundation holds its target.
    ///   - block: what to run, on the loop's thread.
    /// - Returns: the request, which can be cancelled on its own. If the loop's thread exits
    ///   before the block started, the request's state becomes ``EvDelayedPerform/State/loopExited``
    ///   and the block and target are released: a request never stays pending for ever.
    /// - Thread: any; the loop's wait is re-armed if the request is due before it (R44).
    /// - Throws: ``EvPerformError/loopExited`` if the loop's thread has exited.
    /// - Precondition: `delay` is not negative; `modes` is not empty.
    @discardableResult
    public func perform(
        after delay: Duration, inModes modes: [Mode] = [.default], target: (any AnyObject & Sendable)? = nil,
        _ block: @escaping @Sendable () -> Void
    ) throws(EvPerformError) -> EvDelayedPerform {
        require(delay >= .zero, "EvRunLoop.perform(after:inModes:target:_:): delay must not be negative (got \(delay))")
        require(!modes.isEmpty, "EvRunLoop.perform(after:inModes:target:_:): modes must not be empty")
        let core = DelayedPerformCore(loop: self, block: block, target: target)
        let timer = EvTimer(after: delay) { _ in core.fire() }
        let request = EvDelayedPerform(loop: self, core: core, timer: timer)
        // Registered before the timer is added, so a timer that fires at once finds it.
        DelayedPerformRegistry.add(request)
        // R4: a loop whose thread exits drops its timers; the exit hook then ends the request.
        // Registering fails only on a dead loop, where the timer could never be added either.
        guard core.watchExit(of: self) else {
            core.finish(as: .loopExited)
            throw .loopExited
        }
        for mode in modes { add(timer, forMode: mode) }
        return request
    }

    /// Cancels every pending request made on this loop with ``perform(after:inModes:target:_:)``
    /// for `target` (Foundation's `cancelPreviousPerformRequests(withTarget:)`): their timers
    /// leave their modes and their blocks never run.
    ///
    /// - Thread: any. From the loop's own thread — the usual case, e.g. from a callout — no block
    ///   of `target` can be mid-run; from another thread one that has already started finishes.
    /// - Returns: how many requests this call cancelled.
    @discardableResult
    public func cancelPerformRequests(target: any AnyObject & Sendable) -> Int {
        DelayedPerformRegistry.take(loop: self, target: target).reduce(0) { $0 + ($1.cancel() ? 1 : 0) }
    }
}

/// The part of a request its timer's handler holds. It holds neither the timer nor the request,
/// so no reference cycle keeps a request alive (a loop that dies drops its timers, R4).
final class DelayedPerformCore: Sendable {
    private static let pending: UInt8 = 0, running: UInt8 = 1, performed: UInt8 = 2, cancelled: UInt8 = 3
    private static let loopExited: UInt8 = 4
    /// Claimed by a cancel or the loop's exit, releasing its block and target: still pending to
    /// an observer, so that one who sees the end also sees them released.
    private static let ending: UInt8 = 5
    private let phase = Atomic<UInt8>(DelayedPerformCore.pending)
    private let payload: Locked<(block: (@Sendable () -> Void)?, target: (any AnyObject & Sendable)?)>
    /// The hook that ends the request if the loop's thread exits first; removed once it is done.
    private let exitHook = Locked<(loop: EvRunLoop, id: EvRunLoop.ExitHookID)?>(nil)
    /// Where the request is registered (the registry keeps the loop and the target alive, so
    /// the identifiers stay unique while it is there).
    let loopID: ObjectIdentifier
    let targetID: ObjectIdentifier?

    init(loop: EvRunLoop, block: @escaping @Sendable () -> Void, target: (any AnyObject & Sendable)?) {
        payload = Locked((block, target))
        loopID = ObjectIdentifier(loop)
        targetID = target.map { ObjectIdentifier($0) }
    }

    var state: EvDelayedPerform.State {
        switch phase.load(ordering: .acquiring) {
        case Self.pending, Self.ending: .pending
        case Self.running: .running
        case Self.performed: .performed
        case Self.loopExited: .loopExited
        default: .cancelled
        }
    }

    /// Takes a pending request for `state` (`.running`, `.cancelled` or `.loopExited`); exactly
    /// one of fire, cancel and the loop's exit wins. Only `.running` shows at once; the others
    /// show once ``finish(as:)`` has released the block and target.
    func claim(_ state: EvDelayedPerform.State) -> Bool {
        let next = state == .running ? Self.running : Self.ending
        return phase.compareExchange(expected: Self.pending, desired: next, ordering: .acquiringAndReleasing).exchanged
    }

    /// Arranges for the request to end as `.loopExited` if `loop`'s thread exits before it ran.
    /// Returns false if the thread has already exited.
    func watchExit(of loop: EvRunLoop) -> Bool {
        // The hook holds this core, not the request: the loop keeps no timer alive (R4).
        let id = loop.addExitHook { [self] in
            guard claim(.loopExited) else { return }
            finish(as: .loopExited)
        }
        guard let id else { return false }
        exitHook.withLock { $0 = (loop, id) }
        return true
    }

    /// The timer's handler, on the loop's thread.
    func fire() {
        guard claim(.running) else { return }
        DelayedPerformRegistry.remove(self)
        runBlock()
        finish(as: .performed)
    }

    /// Runs the block; the copy taken for the call is released when this returns.
    @inline(never)
    private func runBlock() {
        let block = payload.withLock { $0.block }
        block?()
    }

    /// Once the request is done (run, cancelled, or dropped with its loop): leaves the registry,
    /// forgets the exit hook, drops the block and the target, and only then shows `state`.
    func finish(as state: EvDelayedPerform.State) {
        DelayedPerformRegistry.remove(self)
        if let hook = exitHook.withLock({ hook in defer { hook = nil }; return hook }) {
            hook.loop.removeExitHook(hook.id)
        }
        dropPayload()
        let final = switch state {
        case .cancelled: Self.cancelled
        case .loopExited: Self.loopExited
        default: Self.performed
        }
        phase.store(final, ordering: .releasing)
    }

    /// Releases the block and the target, whose deinits have run when this returns.
    @inline(never)
    private func dropPayload() {
        let released = payload.withLock { payload in defer { payload = (nil, nil) }; return payload }
        withExtendedLifetime(released) {}  // a target's deinit runs with no lock held
    }
}

/// The requests that have a target, by loop and target, for ``EvRunLoop/cancelPerformRequests(target:)``.
///
/// A request leaves it when it runs, is cancelled, or its loop's thread exits (the request's
/// exit hook), so dead loops do not accumulate.
enum DelayedPerformRegistry {
    private struct LoopRequests {
        let loop: EvRunLoop
        var byTarget: [ObjectIdentifier: [EvDelayedPerform]] = [:]
    }

    private static let loops = Locked<[ObjectIdentifier: LoopRequests]>([:])

    static func add(_ request: EvDelayedPerform) {
        guard let target = request.core.targetID else { return }
        let loopID = ObjectIdentifier(request.loop)
        loops.withLock { loops in
            loops[loopID, default: LoopRequests(loop: request.loop)].byTarget[target, default: []].append(request)
        }
    }

    static func remove(_ core: DelayedPerformCore) {
        guard let target = core.targetID else { return }
        let loopID = core.loopID
        loops.withLock { loops in
            guard var requests = loops[loopID]?.byTarget[target] else { return }
            requests.removeAll { $0.core === core }
            loops[loopID]!.byTarget[target] = requests.isEmpty ? nil : requests
            if loops[loopID]!.byTarget.isEmpty { loops[loopID] = nil }
        }
    }

    /// Takes every request of `target` on `loop` out of the registry.
    static func take(loop: EvRunLoop, target: AnyObject) -> [EvDelayedPerform] {
        let loopID = ObjectIdentifier(loop)
        return loops.withLock { loops in
            guard let requests = loops[loopID]?.byTarget.removeValue(forKey: ObjectIdentifier(target)) else { return [] }
            if loops[loopID]!.byTarget.isEmpty { loops[loopID] = nil }
            return requests
        }
    }
}
