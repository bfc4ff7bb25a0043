#if ServiceLifecycle
import Logging
import RunLoopKit
import RunLoopKitServiceLifecycle
import ServiceLifecycle
import ServiceLifecycleTestKit
import Synchronization
import Testing

/// RunLoopKitServiceLifecycle: EvWorkerThread as a swift-service-lifecycle Service.
@Suite struct WorkerServiceTests {
    @Test func gracefulShutdownStopsTheWorkerAfterItsQueuedWork() async throws {
        let worker = EvWorkerThread(name: "service-test")
        try await testGracefulShutdown { trigger in
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await worker.run() }
                // run() starts the worker; wait until it has.
                let loop = try await waitForLoop(of: worker)
                let ran = Mutex<[Int]>([])
                for index in 0..<5 { loop.perform(inModes: [.common]) { ran.withLock { $0.append(index) } } }
                loop.wakeUp()
                trigger.triggerGracefulShutdown()
                try await group.waitForAll()
                #expect(ran.withLock { $0 } == Array(0..<5))
            }
        }
        #expect(worker.state == .stopped)
    }

    @Test func aServiceGroupStartsTheWorkerAndStopsItWhenCancelled() async throws {
        let worker = EvWorkerThread(name: "service-group")
        let group = ServiceGroup(services: [worker], logger: Logger(label: "test"))
        let running = Task { try await group.run() }
        _ = try await waitForLoop(of: worker)
        #expect(worker.state == .running)
        running.cancel()
        try await running.value
        #expect(worker.state == .stopped)
    }

    /// A worker stopped before throws, as starting it would, instead of a service that waits
    /// for shutdown with no thread behind it. Before, run() did not throw and waited.
    @Test func runningAStoppedWorkerThrowsStopped() async {
        let worker = EvWorkerThread(name: "service-stopped")
        worker.stop(waitUntilExited: true)
        await #expect(throws: EvWorkerThreadError.stopped) { try await worker.run() }
    }

    /// A worker stopped by someone else ends its service: run() returns once the loop is torn
    /// down, and the ServiceGroup ends, reporting that the service finished unexpectedly.
    /// Before, run() waited for a shutdown with no thread behind it, and the group never ended.
    @Test func aWorkerStoppedBySomeoneElseEndsItsServiceGroup() async throws {
        let worker = EvWorkerThread(name: "service-ended")
        let group = ServiceGroup(services: [worker], logger: Logger(label: "test"))
        let running = Task { try await group.run() }
        _ = try await waitForLoop(of: worker)
        await worker.stop()
        let (ended, error) = await outcome(of: running)
        #expect(ended, "the service group did not notice that its worker stopped")
        #expect((error as? ServiceGroupError)?.errorCode == .serviceFinishedUnexpectedly, "ended with \(String(describing: error))")
        #expect(worker.state == .stopped)
    }

    /// `waitUntilStopped()` returns once the worker's loop is torn down, whoever stopped it; at
    /// once for a worker never started.
    @Test func waitUntilStoppedReturnsOnceTheWorkerIsStopped() async throws {
        await EvWorkerThread(name: "never-started").waitUntilStopped()
        let worker = EvWorkerThread(name: "wait-stopped")
        let loop = try worker.start()
        let waiting = Task { await worker.waitUntilStopped() }
        worker.stop(waitUntilExited: false)
        await waiting.value
        #expect(throws: EvPerformError.loopExited) { try loop.execute {} }
    }

    /// The worker's loop once run() has started it (polled with yields: start happens in the
    /// service's own task, which has no event to wait on). The safety net is wide: the suite's
    /// long synchronous tests can hold every thread of the cooperative pool for a minute under
    /// ThreadSanitizer, and run() needs one of them.
    private func waitForLoop(of worker: EvWorkerThread) async throws -> EvRunLoop {
        let deadline = ContinuousClock.now + .seconds(300)
        while ContinuousClock.now < deadline {
            if let loop = worker.runLoop { return loop }
            await Task.yield()
        }
        throw CancellationError()
    }
}
#endif
