#if ServiceLifecycle
import RunLoopKit
import ServiceLifecycle

/// A worker thread is a swift-service-lifecycle `Service`: put it in a `ServiceGroup` and the
/// group starts it, and stops it on graceful shutdown or cancellation.
///
/// The conformance lives in this module, behind the package trait `ServiceLifecycle`, so that the
/// RunLoopKit library itself does not depend on swift-service-lifecycle.
extension EvWorkerThread: Service {
    /// Runs the worker as a service: starts it if it was not started yet, keeps it running until
    /// the group's graceful shutdown (or the task's cancellation), then stops it — work submitted
    /// before then still runs — and returns once its run loop has been torn down, without
    /// blocking a thread of the cooperative pool (``RunLoopKit/EvWorkerThread/stop()``).
    ///
    /// When someone else stops the worker first, this returns once its loop has been torn down:
    /// the service has ended, and a `ServiceGroup` acts on its `successTerminationBehavior` (by
    /// default it ends the group, reporting that the service finished unexpectedly).
    ///
    /// - Throws: ``RunLoopKit/EvWorkerThreadError`` when the worker cannot start (it was stopped
    ///   before, or the system is out of threads or descriptors).
    public func run() async throws {
        switch state {
        case .idle: try start()
        case .running: break
        case .stopping, .stopped: throw EvWorkerThreadError.stopped  // nothing would run
        }
        await runUntilShutdownOrStopped(waitUntilStopped: waitUntilStopped, stop: stop)
    }
}
#endif
