#if ServiceLifecycle
import RunLoopKit
import ServiceLifecycle

/// A loop group is a swift-service-lifecycle `Service`: put it in a `ServiceGroup` and the group
/// stops its threads on graceful shutdown or cancellation.
extension EvLoopGroup: Service {
    /// Runs the group as a service: its threads, started by its initializer, keep running until
    /// the group's graceful shutdown (or the task's cancellation); then it stops them — work
    /// submitted before then still runs — and returns once every loop has been torn down, without
    /// blocking a thread of the cooperative pool (``RunLoopKit/EvLoopGroup/stop()``).
    ///
    /// When someone else stops the group first, this returns once its loops have been torn down:
    /// the service has ended, and a `ServiceGroup` acts on its `successTerminationBehavior` (by
    /// default it ends the group, reporting that the service finished unexpectedly).
    ///
    /// - Thread: the service group's task; not from one of the group's own loops.
    public func run() async {
        await runUntilShutdownOrStopped(waitUntilStopped: waitUntilStopped, stop: stop)
    }
}
#endif
