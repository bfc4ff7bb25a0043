import Foundation
import RunLoopKit
import Testing

/// An actor whose jobs run on a run loop's thread.
private actor PinnedEcho {
    let executor: EvRunLoopExecutor
    init(loop: EvRunLoop) { executor = EvRunLoopExecutor(loop) }
    nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }
    /// Returns `value`, after checking that the actor runs in its executor's context.
    func echo(_ value: Int) -> Int {
        executor.checkIsolated()
        return value
    }
}

/// Runs `body` in a task and returns its outcome, or `nil` if it has none within `seconds` (a
/// safety net: a hang shows up as `nil` instead of hanging the test). The task runs on a worker
/// thread of its own (its executor preference) and a plain thread does the waiting, so neither
/// depends on the cooperative pool, which other tests may keep busy.
private func outcome(timeout seconds: Double = 20, _ body: @escaping @Sendable () async throws -> Int) async -> String? {
    let worker = EvWorkerThread(name: "outcome")
    guard let loop = try? worker.start() else { return "worker did not start" }
    let result = Box<String?>(nil)
    let done = Latch()
    Task.detached(executorPreference: EvRunLoopExecutor(loop)) {
        do { result.set("value \(try await body())") } catch { result.set("\(error)") }
        done.open()
    }
    let finished = await withCheckedContinuation { continuation in
        Thread { continuation.resume(returning: done.wait(timeout: seconds)) }.start()
    }
    withExtendedLifetime(worker) {}  // the task's executor runs until the outcome is in
    return finished ? result.get : nil
}

/// Nothing awaited on a loop waits forever once the loop's thread has exited (R4).
@Suite struct LoopExitedTests {
    /// A loop whose thread has exited and been torn down.
    private func exitedLoop() -> EvRunLoop {
        let tornDown = Latch()
        let loop = onLoopThread { loop in
            loop.add(EvSource(cancel: { _, _ in tornDown.open() }) {}, forMode: .default)
            return loop
        }
        precondition(tornDown.wait(), "loop was not torn down")
        return loop
    }

    @Test func submitOntoAnExitedLoopThrowsLoopExited() async {
        let loop = exitedLoop()
        #expect(await outcome { try await loop.submit { 1 } } == "\(EvPerformError.loopExited)")
    }

    @Test func executeOntoAnExitedLoopThrowsLoopExited() {
        let loop = exitedLoop()
        #expect(throws: EvPerformError.loopExited) { try loop.execute {} }
    }

    /// The loop's thread parks in a mode that is not common, so a `.common` block stays pending;
    /// the wake-up of the submit ends that run and the thread exits with the block still queued.
    /// Returns once the loop waits: a wake-up sent before its run starts is dropped (C51, C52),
    /// and the loop would then sleep out its whole run.
    private func loopExitingOnItsNextWakeUp() -> (loop: EvRunLoop, finished: Latch) {
        let (loop, finished) = startLoopThread { loop in
            let parked = EvRunLoop.Mode("parked")
            loop.add(keepAliveTimer(), forMode: parked)
            loop.add(once(.afterWaiting) { loop.stop() }, forMode: parked)
            loop.run(mode: parked, timeout: .seconds(30))
        }
        precondition(spinUntil { loop.isWaiting }, "loop did not start waiting")
        return (loop, finished)
    }

    @Test func submitStillPendingWhenTheLoopExitsThrowsLoopExited() async {
        let (loop, finished) = loopExitingOnItsNextWakeUp()
        #expect(await outcome { try await loop.submit { 1 } } == "\(EvPerformError.loopExited)")
        #expect(finished.wait())
    }

    @Test func actorHopOntoAnExitedLoopResumes() async {
        let loop = exitedLoop()
        let echo = PinnedEcho(loop: loop)
        let sibling = PinnedEcho(loop: loop)  // the same exclusive context: the same stand-in queue
        #expect(await outcome { await echo.echo(7) + sibling.echo(0) } == "value 7")
    }

    @Test func actorJobStillPendingWhenTheLoopExitsResumes() async {
        let (loop, finished) = loopExitingOnItsNextWakeUp()
        let echo = PinnedEcho(loop: loop)
        #expect(await outcome { await echo.echo(8) } == "value 8")
        #expect(finished.wait())
    }
}
