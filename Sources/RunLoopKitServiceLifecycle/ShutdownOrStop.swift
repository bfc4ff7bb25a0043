#if ServiceLifecycle
import ServiceLifecycle

/// The body of a service's `run()` once its threads run: suspends until the service group's
/// graceful shutdown, the task's cancellation, or `waitUntilStopped` returns (someone else
/// stopped the threads); then calls `stop`, and returns once it has.
///
/// The stop is awaited in full: `stop` returns once the threads' loops are torn down, however
/// cancelled the task is, while the child waiting for them ends at the group's cancellation.
func runUntilShutdownOrStopped(
    waitUntilStopped: @escaping @Sendable () async -> Void, stop: () async -> Void
) async {
    await withTaskGroup(of: Void.self) { group in
        group.addTask { try? await gracefulShutdown() }  // throws when cancelled: stop all the same
        group.addTask { await waitUntilStopped() }
        _ = await group.next()
        group.cancelAll()
        await stop()
    }
}
#endif
