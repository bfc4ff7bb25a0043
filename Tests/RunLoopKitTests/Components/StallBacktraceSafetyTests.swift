import Foundation
import Testing

/// A stall monitor's backtrace capture never takes its host process down, whatever happens to
/// the process's mappings meanwhile. Each scenario runs in the
/// MainLoopHarness program, so that a crash fails the test instead of ending the test run.
@Suite struct StallBacktraceSafetyTests {
    /// Runs a harness scenario; returns its exit status (or terminating signal, negated) and
    /// its standard output.
    private func runHarness(_ arguments: [String]) throws -> (status: Int32, output: String) {
        let products = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
        let process = Process()
        process.executableURL = products.appendingPathComponent("MainLoopHarness")
        process.arguments = arguments
        // The harness's crash report (the Swift runtime's backtracer) is not needed here.
        process.environment = ProcessInfo.processInfo.environment.merging(["SWIFT_BACKTRACE": "enable=no"]) { $1 }
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let status = process.terminationReason == .uncaughtSignal ? -process.terminationStatus : process.terminationStatus
        return (status, String(decoding: data, as: UTF8.self))
    }

    /// Runs a scenario and expects it to end normally, having captured backtraces (so that it
    /// did exercise the capture) unless `capturesMayFail`.
    private func expectSurvives(
        _ arguments: [String], capturesMayFail: Bool = false, sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        let (status, output) = try runHarness(arguments)
        #expect(status == 0, "\(arguments.joined(separator: " ")) died (status \(status); -11 is SIGSEGV)", sourceLocation: sourceLocation)
        #expect(output.hasPrefix("survived"), "\(output)", sourceLocation: sourceLocation)
        if !capturesMayFail {
            #expect(output.contains("survived; backtraces captured: true"), "\(output)", sourceLocation: sourceLocation)
        }
    }

    @Test func symbolicatedCapturesSurviveALibraryBeingLoadedAndUnloadedMeanwhile() throws {
        try expectSurvives(["stall-capture-library-churn", "2", "symbolicated"])
    }

    @Test func addressCapturesSurviveALibraryBeingLoadedAndUnloadedMeanwhile() throws {
        try expectSurvives(["stall-capture-library-churn", "2", "addresses"])
    }

    @Test func capturesSurviveMonitorsStartingAndStoppingOnAStallingLoop() throws {
        // Three monitors signal one thread: under a sanitizer (`make test-tsan`, `test-asan`)
        // their signals are handled so late that every stall ends before its stack is copied,
        // so this scenario asks for survival only (the library-churn ones check captures).
        try expectSurvives(["stall-capture-monitor-churn", "3", "0"], capturesMayFail: true)
    }
}
