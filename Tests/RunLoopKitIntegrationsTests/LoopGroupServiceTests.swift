#if ServiceLifecycle
import Logging
import RunLoopKit
import RunLoopKitServiceLifecycle
import ServiceLifecycle
import ServiceLifecycleTestKit
import Synchronization
import Testing

/// RunLoopKitServiceLifecycle: EvLoopGroup as a swift-service-lifecycle Service.
@Suite struct LoopGroupServiceTests {
    @Test func gracefulShutdownStopsEveryLoopAfterItsQueuedWork() async throws {
        let group = try EvLoopGroup(numberOfThreads: 2, name: "svc-group")
        let ran = Mutex<[Int]>([])
        try await testGracefulShutdown { trigger in
            try await withThrowingTaskGroup(of: Void.self) { tasks in
                tasks.addTask { await group.run() }
                for (index, loop) in group.loops.enumerated() {
                    for item in 0..<5 { try loop.execute { ran.withLock { $0.append(index * 10 + item) } } }
                }
                trigger.triggerGracefulShutdown()
                try await tasks.waitForAll()
            }
        }
        #expect(ran.withLock { $0.sorted() } == [0, 1, 2, 3, 4, 10, 11, 12, 13, 14])
        for loop in group.loops {
            #expect(throws: EvPerformError.loopExited) { try loop.execute {} }
        }
    }

    /// A loop group stopped by someone else ends its service, and the ServiceGroup ends,
    /// reporting that the service finished unexpectedly. Before, the group never ended.
    @Test func aLoopGroupStoppedBySomeoneElseEndsItsServiceGroup() async throws {
        let loops = try EvLoopGroup(numberOfThreads: 2, name: "svc-ended")
        let services = ServiceGroup(services: [loops], logger: Logger(label: "test"))
        let running = Task { try await services.run() }
        #expect(try await loops.next().submit { 6 * 7 } == 42)
        loops.stop(waitUntilExited: false)
        let (ended, error) = await outcome(of: running)
        #expect(ended, "the service group did not notice that its loops stopped")
        #expect((error as? ServiceGroupError)?.errorCode == .serviceFinishedUnexpectedly, "ended with \(String(describing: error))")
        for loop in loops.loops {
            #expect(throws: EvPerformError.loopExited) { try loop.execute {} }
        }
    }

    @Test func aServiceGroupStopsTheLoopsWhenCancelled() async throws {
        let group = try EvLoopGroup(numberOfThreads: 2, name: "svc-cancel")
        let services = ServiceGroup(services: [group], logger: Logger(label: "test"))
        let running = Task { try await services.run() }
        // The loops run before and while the service does.
        #expect(try await group.next().submit { 6 * 7 } == 42)
        running.cancel()
        try await running.value
        for loop in group.loops {
            #expect(throws: EvPerformError.loopExited) { try loop.execute {} }
        }
    }
}
#endif
