/// Work that must happen when a loop's thread exits (R4): finishing what waits on the loop — an
/// async stream of its ticks, a caller awaiting a block — so that nothing waits for ever on a
/// loop that is gone.
///
/// A hook runs once, on the exiting thread, after the loop's items have been detached and its
/// pending blocks dropped, with no lock held. Registering succeeds until the hooks are run at
/// the very end of the teardown, so a hook registered while the teardown is under way still
/// runs once it is complete; registering after that fails, and the caller handles the exit
/// itself, at once.
extension EvRunLoop {
    /// Identifies a registered exit hook, for ``removeExitHook(_:)``.
    struct ExitHookID: Hashable, Sendable {
        fileprivate let value: UInt64
    }

    /// The hooks waiting for the loop's thread to exit, guarded by the loop's lock.
    struct ExitHooks {
        private var hooks: [UInt64: @Sendable () -> Void] = [:]
        private var nextID: UInt64 = 0
        /// The hooks were taken to run: none can be added any more.
        fileprivate private(set) var isClosed = false
        /// How many hooks wait.
        var count: Int { hooks.count }

        fileprivate mutating func add(_ hook: @escaping @Sendable () -> Void) -> ExitHookID {
            defer { nextID += 1 }
            hooks[nextID] = hook
            return ExitHookID(value: nextID)
        }

        fileprivate mutating func remove(_ id: ExitHookID) -> (@Sendable () -> Void)? {
            hooks.removeValue(forKey: id.value)
        }

        /// Every hook, in registration order, leaving none.
        fileprivate mutating func takeAll() -> [@Sendable () -> Void] {
            defer { hooks = [:]; isClosed = true }
            return hooks.sorted { $0.key < $1.key }.map(\.value)
        }
    }

    /// Registers `hook` to run once when this loop's thread exits. Safe from any thread.
    ///
    /// - Returns: the hook's id, or `nil` when the thread has exited and its teardown is over
    ///   (the hook is then not kept and never runs).
    func addExitHook(_ hook: @escaping @Sendable () -> Void) -> ExitHookID? {
        state.withLock { state in
            // Not `isDead`, set when the teardown begins: a hook added meanwhile runs at its end,
            // so that whoever waits on it knows the teardown is complete.
            let waiters = state.madeWaiters()
            guard !waiters.exitHooks.isClosed else { return nil }
            return waiters.exitHooks.add(hook)
        }
    }

    /// Suspends until this loop's thread has exited and its teardown is over; at once if it is.
    /// Cancellation does not end it: a stop awaits its teardown whatever happens to its task.
    func untilTornDown() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            if addExitHook({ continuation.resume() }) == nil { continuation.resume() }
        }
    }

    /// ``untilTornDown()``, or until the task is cancelled (at once if it is), whichever comes
    /// first; a cancelled wait removes its hook.
    func untilTornDownOrCancelled() async {
        let hookID = Locked<ExitHookID?>(nil)
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let added = state.withLock { state in
                    // Under the lock the handler below takes: either it finds the hook, or the
                    // wait sees the cancellation.
                    let waiters = state.madeWaiters()
                    guard !waiters.exitHooks.isClosed, !Task.isCancelled else { return false }
                    let id = waiters.exitHooks.add { continuation.resume() }
                    hookID.withLock { $0 = id }
                    return true
                }
                if !added { continuation.resume() }
            }
        } onCancel: {
            let hook = state.withLock { state in hookID.withLock { $0 }.flatMap { state.waiters?.exitHooks.remove($0) } }
            hook?()
        }
    }

    /// How many exit hooks wait (what waits on the loop's end: tests look).
    var exitHookCount: Int { state.withLock { $0.waiters?.exitHooks.count ?? 0 } }

    /// Forgets a hook that is no longer needed (its work finished another way). Safe from any
    /// thread; does nothing if the hook already ran or was removed.
    func removeExitHook(_ id: ExitHookID) {
        // Released outside the lock: a hook's captures may run deinits that use the loop.
        let removed = state.withLock { $0.waiters?.exitHooks.remove(id) }
        withExtendedLifetime(removed) {}
    }

    /// Runs every registered hook (the end of the teardown, on the exiting thread); no hook can
    /// be added after this.
    func runExitHooks() {
        let hooks = state.withLock { $0.madeWaiters().exitHooks.takeAll() }
        for hook in hooks { hook() }
    }
}
