#if ServiceLifecycle
import ServiceLifecycle

/// The body of a service's `run()` once its threads run: suspends until the service group's
/// graceful shutdown, the task's cancellation, or `waitUntilStopped` returns (someone else
/// stopped the threads); then calls `stop`, and returns once it has.
///
/// The stop is made inside the task group: its child waiting for the threads to stop ends only
/// once they have, and the group's scope waits for every child.
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
