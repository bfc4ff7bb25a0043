import Foundation
import Testing

/// The main loop and libdispatch's main queue (R17, R60). Each scenario runs in the
/// MainLoopHarness program, whose main thread runs `EvRunLoop.main`.
@Suite struct MainThreadTests {
    /// Runs a harness scenario and returns its standard output lines.
    private func harness(_ scenario: String, _ arguments: String...) throws -> [String] {
        let (status, output, _) = try runHarness(scenario, arguments)
        #expect(status == 0)
        return output.split(separator: "\n").map(String.init)
    }

    /// Runs a MainLoopHarness scenario; returns its exit status, standard output and standard error.
    private func runHarness(_ scenario: String, _ arguments: [String] = []) throws -> (status: Int32, output: String, errors: String) {
        try RunLoopKitTests.runHarness("MainLoopHarness", scenario, arguments)
    }

    @Test func R2_theMainLoopIsOneObjectReachableFromEveryThread() throws {
        #expect(try harness("main-loop-from-every-thread") == Array(
            repeating: "main is the main loop: true, own loop is another: true", count: 2))
    }

    /// R5 for the main loop: its message also says how async code gets the main loop run.
    @Test func R5_runningTheMainLoopFromASecondaryThreadStops() throws {
        let (status, _, errors) = try runHarness("run-main-loop-from-another-thread")
        #expect(status != 0)
        #expect(errors.contains("EvRunLoop.run(mode:timeout:returnAfterSourceHandled:): a run loop can only be run on its own thread (R5)"))
        #expect(errors.contains("start the program from a synchronous main with EvRunLoop.runMain(_:)"))
    }

    /// The main loop, servicing the main queue, sleeps inside libev's poll (see SleepsInLibevTests).
    @Test func theMainLoopSleepsInLibev() throws {
        #expect(try harness("sleeps-in-libev") == ["asleep in libev's poll: true", "result: stopped"])
    }

    @Test func dispatchMainAsyncRunsUnderTheMainLoop() throws {
        #expect(try harness("dispatch-main-async") == ["ran on main thread: true", "result: stopped"])
    }

    @Test func mainActorTaskStartedFromBackgroundThreadCompletes() throws {
        #expect(try harness("main-actor-task") == ["main actor task ran on main thread: true", "result: stopped"])
    }

    @Test func R60_onlyCommonModesServiceTheMainQueue() throws {
        #expect(try harness("common-mode-only") == ["ran in tracking before common: false", "ran in tracking after common: true"])
    }

    @Test func R17_mainLoopsCommonModesAreNeverEmpty() throws {
        #expect(try harness("empty-common-mode") == ["result: timedOut"])
    }

    @Test func R17_C116_aModeMadeCommonDuringItsRunIsNotEmptyThereafter() throws {
        #expect(try harness("mode-made-common-during-its-run") == [
            "result: timedOut, main queue serviced: false", "then serviced by the next run: true",
        ])
    }

    /// C114: the phases around main-queue work are CF's, run by CF's own main loop in the harness.
    @Test func C114_theMainQueuePhasesAreCFs() throws {
        #expect(try harness("main-queue-phases", "runLoopKit") == harness("main-queue-phases", "cf"))
    }

    /// Before, the wait's signal was taken before the timers fired, so a run nested in a timer's
    /// handler slept its whole timeout (5 s) with the work pending; CF's nested run services it.
    @Test func R60_aRunNestedInATimerServicesMainQueueWorkTheWaitFound() throws {
        let expected = "run: entry beforeTimers beforeSources beforeWaiting afterWaiting timer entry beforeTimers beforeSources beforeWaiting afterWaiting A exit nested handledSource exit stopped"
        #expect(try harness("main-queue-work-for-a-run-nested-in-a-timer", "cf") == [expected])
        #expect(try harness("main-queue-work-for-a-run-nested-in-a-timer", "runLoopKit") == [expected])
    }

    /// The same when the shortcut (R20.7) found the work: before, it took the signal and the
    /// nested run slept its 5 s timeout.
    @Test func R60_aRunNestedInATimerServicesMainQueueWorkTheShortcutFound() throws {
        #expect(try harness("main-queue-work-for-a-run-nested-in-a-timer-after-the-shortcut") == [
            "result: stopped, timer 1, timer 2, B, nested handledSource",
        ])
    }

    @Test func R60_nestedRunInMainQueueBlockDoesNotServiceTheMainQueue() throws {
        #expect(try harness("nested-run-in-main-queue-block") == ["order: nested finished, second"])
    }

    // Async programs on top of EvRunLoop.main (R60).

    @Test func runMainRunsTheMainLoopForAnAsyncBodyAndReturnsItsValue() throws {
        #expect(try harness("run-main") == [
            "timer on EvRunLoop.main fired on main thread: true",
            "main actor ran on main thread: true",
            "DispatchQueue.main ran on main thread: true",
            "runMain returned 42",
        ])
    }

    /// A worker dropped in the body does not wait there (a task off the main thread); runMain
    /// waits for its queued work instead, which here needs the main loop to go on running.
    @Test func runMainReturnsAfterTheQueuedWorkOfAWorkerItsBodyDropped() throws {
        #expect(try harness("run-main-drops-a-worker") == [
            "queued work ran the main loop's block on the main thread: true",
            "runMain returned 5",
        ])
    }

    /// The same on the main actor: the release does not hold the main thread, whose loop the
    /// worker's queued work needs.
    @Test func aWorkerDroppedOnTheMainActorUnderRunMainDoesNotHoldTheMainLoop() throws {
        #expect(try harness("run-main-drops-a-worker-on-the-main-actor") == [
            "queued work ran the main loop's block on the main thread: true", "runMain returned 6",
        ])
    }

    @Test func runMainThrowsTheBodysTypedError() throws {
        #expect(try harness("run-main-typed-error") == ["runMain threw expected"])
    }

    @Test func R27_runMainLeavesARunNestedInACalloutAloneAndReturnsAfterIt() throws {
        #expect(try harness("run-main-ends-after-nested-run") == ["nested run: timedOut", "runMain returned 7"])
    }

    /// Before, runMain's run slept on after such a nested run, which had taken the body's
    /// wake-up, and runMain returned only when something else woke the main loop.
    @Test func runMainReturnsWhenItsBodyEndsDuringARunNestedBeforeAWait() throws {
        #expect(try harness("run-main-ends-during-a-nested-run-before-the-wait") == ["nested run: timedOut", "runMain returned 9"])
    }

    @Test func R5_runMainOffTheMainThreadStopsWithAMessageNamingTheCall() throws {
        let (status, _, errors) = try runHarness("run-main-off-main-thread")
        #expect(status != 0)
        #expect(errors.contains("EvRunLoop.runMain(_:): call it from the process's main thread"))
    }

    /// Before, runMain spun at full CPU there, and for ever once its body hopped to the main actor.
    @Test func runMainFromMainQueueWorkStopsWithAMessageNamingTheCall() throws {
        let (status, output, errors) = try runHarness("run-main-from-main-queue-work")
        #expect(status != 0, "\(output)")
        #expect(errors.contains("EvRunLoop.runMain(_:): called from main-queue work"))
    }

    @Test func runMainFromATaskStopsWithAMessageNamingTheCall() throws {
        let (status, output, errors) = try runHarness("run-main-from-a-task")
        #expect(status != 0, "\(output)")
        #expect(errors.contains("EvRunLoop.runMain(_:): call it from synchronous code"))
    }
}
