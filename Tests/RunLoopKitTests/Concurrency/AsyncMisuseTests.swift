import Foundation
import RunLoopKit
import Testing

private func message(_ result: ExitTest.Result?) -> String {
    String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
}

/// An actor pinned to a loop.
private actor Pinned {
    let executor: EvRunLoopExecutor
    init(loop: EvRunLoop) { executor = EvRunLoopExecutor(loop) }
    nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }
}

/// An actor pinned to a loop that keeps loop-bound state.
private actor PinnedWithBoundState {
    let executor: EvRunLoopExecutor
    let counter: EvLoopBoundBox<Int>
    init(loop: EvRunLoop) {
        executor = EvRunLoopExecutor(loop)
        counter = .makeBoxSendingValue(0, loop: loop)
    }
    nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }
    func count() { counter.value += 1 }
}

/// Asserts, from synchronous code, that the caller runs isolated to `pinned`.
private func pinnedActorIsAssumedIsolated(_ pinned: Pinned) {
    pinned.assumeIsolated { _ in }
}

/// The shapes of async code in which a loop would never run: each either works or stops with a
/// message that names the fix (`EvRunLoop.runMain`, the main actor, an `EvWorkerThread`). The
/// async-main shapes run in AsyncMainHarness, a program whose main is `async`; `runMain`'s in
/// MainLoopHarness, whose main is synchronous.
@Suite struct AsyncMisuseTests {
    private static let currentInATask = "EvRunLoop.current: called from a task on a thread whose run loop is not running"
    private static let mainNotRunning = "called from a task on the main thread while the main loop is not running"
    private static let mainTaken = "EvRunLoop.main: libdispatch has taken the main thread for good"
    private static let useRunMain = "Start the program from a synchronous main with EvRunLoop.runMain(_:)"

    /// Runs an AsyncMainHarness scenario that must stop, and returns its standard error.
    private func stoppedAsyncMain(_ scenario: String) throws -> String {
        let (status, output, errors) = try runHarness("AsyncMainHarness", scenario)
        #expect(status != 0, "the scenario ran on: \(output)")
        #expect(!output.contains("fired") && !output.contains("returned"))
        return errors
    }

    @Test func currentInATaskOnTheCooperativePoolStopsAndNamesTheFix() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            await Task.detached { _ = EvRunLoop.current }.value
        }
        #expect(message(result).contains(Self.currentInATask))
        #expect(message(result).contains("the loop of an EvWorkerThread"))
    }

    /// Once the loop's thread has exited, its executor's jobs run on a dispatch queue that stands
    /// in for it: there `current` says so (it named the cooperative pool).
    @Test func currentInAJobAfterTheLoopsThreadExitedStopsAndSaysSo() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let worker = EvWorkerThread(name: "exited-worker")
            let executor = EvRunLoopExecutor(try! worker.start())
            await worker.stop()
            await Task(executorPreference: executor) { _ = EvRunLoop.current }.value
        }
        #expect(message(result).contains("EvRunLoop.current: called from a job of an EvRunLoopExecutor whose loop's thread has exited"))
    }

    /// An isolation check of an actor pinned to a loop, made off the loop's thread, says so,
    /// not that a loop runs only on its own thread.
    @Test func assumeIsolatedOffTheLoopsThreadStopsAndSaysSo() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let worker = EvWorkerThread(name: "isolation-worker")
            pinnedActorIsAssumedIsolated(Pinned(loop: try! worker.start()))
        }
        #expect(message(result).contains("EvRunLoopExecutor.checkIsolated(): called off the loop's thread"))
    }

    /// Once the loop's thread has exited, the check names the queue that stands in for it.
    @Test func assumeIsolatedOffTheStandInQueueStopsAndSaysSo() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let worker = EvWorkerThread(name: "isolation-worker")
            let pinned = Pinned(loop: try! worker.start())
            await worker.stop()
            pinnedActorIsAssumedIsolated(pinned)
        }
        #expect(message(result).contains("EvRunLoopExecutor.checkIsolated(): the loop's thread has exited"))
    }

    /// A pinned actor's job that the stand-in queue runs once the loop's thread has exited says
    /// so when it reaches loop-bound state, not only that it is on another thread.
    @Test func loopBoundStateInAJobAfterTheLoopsThreadExitedStopsAndSaysWhy() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let worker = EvWorkerThread(name: "bound-worker")
            let pinned = PinnedWithBoundState(loop: try! worker.start())
            await pinned.count()  // on the loop's thread
            await worker.stop()
            await pinned.count()
        }
        #expect(message(result).contains(
            "EvLoopBoundBox.value: the value is written only on the loop's own thread, and this is another thread: a job of an EvRunLoopExecutor whose loop's thread has exited (R4)"))
        #expect(message(result).contains("list the worker before the services whose actors it runs"))
    }

    @Test func forCurrentThreadInATaskStopsAsCurrentDoes() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            await Task.detached { _ = try? EvRunLoop.forCurrentThread() }.value
        }
        #expect(message(result).contains("EvRunLoop.forCurrentThread(): called from a task on a thread whose run loop is not running"))
    }

    /// A task's job run by a loop (an actor or task on its executor, work submitted to it) gets
    /// that loop as its current one.
    @Test func currentInAJobThatALoopRunsIsThatLoop() async throws {
        let worker = EvWorkerThread(name: "misuse-worker")
        let loop = try worker.start()
        let executor = EvRunLoopExecutor(loop)
        let inTask = await Task(executorPreference: executor) { EvRunLoop.current === loop }.value
        let inJob = try await worker.submit { EvRunLoop.current === loop }
        await worker.stop()
        #expect(inTask)
        #expect(inJob)
    }

    @Test func currentInRunMainsBodyStopsAndNamesTheFix() throws {
        let (status, output, errors) = try runHarness("MainLoopHarness", "current-in-run-main-body")
        #expect(status != 0, "\(output)")
        #expect(errors.contains(Self.currentInATask))
        #expect(errors.contains("EvRunLoop.main (EvRunLoop.runMain(_:) runs it; reach it from the main actor)"))
    }

    @Test func inRunMainTheMainLoopAndWorkersLoopsAreReachableFromTasks() throws {
        let (status, output, _) = try runHarness("MainLoopHarness", "main-from-tasks-in-run-main")
        #expect(status == 0)
        #expect(output.split(separator: "\n").map(String.init) == [
            "timer added from the body fired on the main thread: true",
            "current on the main actor is the main loop: true",
            "current in a worker's job is the worker's loop: true",
        ])
    }

    @Test func timersOnTheMainLoopInAnAsyncMainBeforeItsFirstAwaitStop() throws {
        let errors = try stoppedAsyncMain("main-before-first-suspension")
        #expect(errors.contains("EvRunLoop.main: " + Self.mainNotRunning))
        #expect(errors.contains(Self.useRunMain))
    }

    @Test func timersOnTheMainLoopInAnAsyncMainAfterAnAwaitStop() throws {
        let errors = try stoppedAsyncMain("main-after-suspension")
        #expect(errors.contains(Self.mainTaken))
        #expect(errors.contains(Self.useRunMain))
    }

    /// The landing page's sample as an async main's first lines.
    @Test func currentInAnAsyncMainStops() throws {
        let errors = try stoppedAsyncMain("current-before-first-suspension")
        #expect(errors.contains("EvRunLoop.current: " + Self.mainNotRunning))
        #expect(errors.contains(Self.useRunMain))
    }

    @Test func runningTheMainLoopFromAnAsyncMainStopsAndNamesRunMain() throws {
        let errors = try stoppedAsyncMain("run-main-loop-after-suspension")
        #expect(errors.contains(Self.mainTaken))
        #expect(errors.contains(Self.useRunMain))
    }

    @Test func currentInADetachedTaskOfAnAsyncMainStops() throws {
        let errors = try stoppedAsyncMain("current-in-a-task")
        #expect(errors.contains(Self.currentInATask))
    }

    /// The fix works under an async main: a worker's loop fires its timers and ticks.
    @Test func aWorkersLoopWorksUnderAnAsyncMain() throws {
        let (status, output, _) = try runHarness("AsyncMainHarness", "worker")
        #expect(status == 0)
        #expect(output.split(separator: "\n").map(String.init) == [
            "timer fired on the worker's loop: true",
            "ticks awaited from the async main: 3",
        ])
    }
}
