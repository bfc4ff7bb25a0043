import Foundation
import Testing

/// The main loop and libdispatch's main queue (R17, R60, issue 4). Each scenario runs in the
/// MainLoopHarness program, whose main thread runs `EvRunLoop.main`.
@Suite struct MainThreadTests {
    /// Runs a harness scenario and returns its standard output lines.
    private func harness(_ scenario: String) throws -> [String] {
        // The harness is built next to the test bundle, in the same products folder.
        let products = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
        let process = Process()
        process.executableURL = products.appendingPathComponent("MainLoopHarness")
        process.arguments = [scenario]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        return String(decoding: data, as: UTF8.self).split(separator: "\n").map(String.init)
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

    @Test func R60_nestedRunInMainQueueBlockDoesNotServiceTheMainQueue() throws {
        #expect(try harness("nested-run-in-main-queue-block") == ["order: nested finished, second"])
    }
}
