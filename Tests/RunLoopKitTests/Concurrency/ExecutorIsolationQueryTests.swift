import Foundation
import RunLoopKit
import Testing

/// An actor pinned to a loop, for asking its executor whether the caller is isolated to it.
private actor QueriedPinned {
    let executor: EvRunLoopExecutor
    init(loop: EvRunLoop) { executor = EvRunLoopExecutor(loop) }
    nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }

    /// What the actor's serial executor answers inside one of the actor's jobs.
    func answerInAJob() -> Bool? { Self.answer(executor) }

    /// What the serial executor that actors pinned to `executor` hold answers on the calling thread.
    nonisolated static func answer(_ executor: EvRunLoopExecutor) -> Bool? {
        executor.asUnownedSerialExecutor().asSerialExecutor()?.isIsolatingCurrentContext()
    }
}

/// A global actor whose jobs run on a worker's loop; touched only inside an exit test's child
/// process, so that its thread never outlives a test of this process.
@globalActor private actor LoopGlobalActor {
    static let worker: EvWorkerThread = {
        let worker = EvWorkerThread(name: "global-actor")
        _ = try! worker.start()
        return worker
    }()
    static let shared = LoopGlobalActor()
    let executor = EvRunLoopExecutor(LoopGlobalActor.worker.runLoop!)
    nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }
}

private protocol Greeter { func greet() -> String }

/// Conforms to `Greeter` only where the caller is isolated to the loop's global actor.
@LoopGlobalActor private final class LoopGreeter: @LoopGlobalActor Greeter {
    nonisolated init() {}
    func greet() -> String { "hello" }
}

/// Whether a cast finds `LoopGreeter`'s isolated conformance on the calling thread.
private func castFindsTheIsolatedConformance() -> Bool {
    let value: Any = LoopGreeter()
    return (value as? any Greeter) != nil
}

/// The runtime's check that must not stop the program (`isIsolatingCurrentContext()`): it
/// answers for plain callouts on the loop's thread as `assumeIsolated` does.
@Suite struct ExecutorIsolationQueryTests {
    @Test func theExecutorIsIsolatingOnItsLoopsThreadInCalloutsAndJobs() async throws {
        let worker = EvWorkerThread(name: "isolation-query")
        let loop = try worker.start()
        let pinned = QueriedPinned(loop: loop)
        let executor = pinned.executor
        #expect(try await worker.submit { QueriedPinned.answer(executor) } == true)  // a plain block
        #expect(await pinned.answerInAJob() == true)
        // Unknown elsewhere, so that assumeIsolated goes on to checkIsolated() and its message.
        #expect(QueriedPinned.answer(executor) == nil)
        #expect(executor.isIsolatingCurrentContext() == nil)
        await worker.stop()
        // The loop's thread has exited: its jobs run on the queue that stands in for it.
        #expect(await pinned.answerInAJob() == true)
        #expect(QueriedPinned.answer(executor) == nil)
    }

    /// A conformance isolated to a global actor pinned to a loop is found by a cast made on the
    /// loop's thread, in a timer's handler as in the actor's jobs, and only there.
    @Test func anIsolatedConformanceIsFoundByACastInACalloutOnTheLoopsThread() async {
        let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            let worker = LoopGlobalActor.worker
            let inATimer = try! worker.submitAndWait { () -> Bool in
                var found: Bool?
                let loop = EvRunLoop.current
                loop.addTimer(interval: .milliseconds(1), repeats: false) { _ in found = castFindsTheIsolatedConformance() }
                _ = loop.run(until: .now + .seconds(30), orUntil: { found != nil })
                return found == true
            }
            let inAJob = await Task { @LoopGlobalActor in castFindsTheIsolatedConformance() }.value
            let offTheLoop = await Task.detached { castFindsTheIsolatedConformance() }.value
            let answers = "timer: \(inATimer), job: \(inAJob), off the loop: \(offTheLoop)"
            FileHandle.standardError.write(Data(answers.utf8))
            exit(inATimer && inAJob && !offTheLoop ? 0 : 1)
        }
        #expect(String(decoding: result?.standardErrorContent ?? [], as: UTF8.self) == "timer: true, job: true, off the loop: false")
    }
}
