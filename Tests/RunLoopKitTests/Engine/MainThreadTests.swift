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

    /// Runs a harness scenario; returns its exit status, standard output and standard error.
    private func runHarness(_ scenario: String, _ arguments: [String] = []) throws -> (status: Int32, output: String, errors: String) {
        // The harness is built next to the test bundle, in the same products folder.
        let products = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
        let process = Process()
        process.executableURL = products.appendingPathComponent("MainLoopHarness")
        process.arguments = [scenario] + arguments
        // Some scenarios crash on purpose (a misuse that must stop the process). Swift's crash
        // backtracer would then run as a grandchild holding copies of the child's output
        // descriptors — under ASan for minutes — so it is disabled, and both outputs go to
        // files read once the child itself has exited: nothing here waits for an end-of-file
        // that another process could hold back.
        process.environment = ProcessInfo.processInfo.environment.merging(["SWIFT_BACKTRACE": "enable=no"]) { $1 }
        let folder = FileManager.default.temporaryDirectory
        let outputFile = folder.appendingPathComponent("harness-\(UUID().uuidString).out")
        let errorFile = folder.appendingPathComponent("harness-\(UUID().uuidString).err")
        defer { for file in [outputFile, errorFile] { try? FileManager.default.removeItem(at: file) } }
        // Close-on-exec: the child gets them as its standard output and error only; any other
        // process a parallel test starts meanwhile must not inherit them (it would count them
        // among its descriptors).
        let outputHandle = try Self.createForWriting(outputFile)
        let errorHandle = try Self.createForWriting(errorFile)
        defer { try? outputHandle.close(); try? errorHandle.close() }
        process.standardOutput = outputHandle
        process.standardError = errorHandle
        try process.run()
        process.waitUntilExit()
        return (process.terminationStatus, try contents(of: outputFile), try contents(of: errorFile))
    }

    /// A new empty file at `file`, open for writing with close-on-exec.
    private static func createForWriting(_ file: URL) throws -> FileHandle {
        let descriptor = open(file.path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        return FileHandle(fileDescriptor: descriptor, closeOnDealloc: true)
    }

    /// A file's text, read through a `FileHandle`: `String(contentsOf:)` leaks its 4 KiB buffer on
    /// an empty file (LeakSanitizer, `make test-asan`).
    private func contents(of file: URL) throws -> String {
        let handle = try FileHandle(forReadingFrom: file)
        defer { try? handle.close() }
        return String(decoding: try handle.readToEnd() ?? Data(), as: UTF8.self)
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

    @Test func runMainThrowsTheBodysTypedError() throws {
        #expect(try harness("run-main-typed-error") == ["runMain threw expected"])
    }

    @Test func R27_runMainLeavesARunNestedInACalloutAloneAndReturnsAfterIt() throws {
        #expect(try harness("run-main-ends-after-nested-run") == ["nested run: timedOut", "runMain returned 7"])
    }

    @Test func R5_runMainOffTheMainThreadStopsWithAMessageNamingTheCall() throws {
        let (status, _, errors) = try runHarness("run-main-off-main-thread")
        #expect(status != 0)
        #expect(errors.contains("EvRunLoop.runMain(_:): call it from the process's main thread"))
    }

    @Test func runMainFromATaskStopsWithAMessageNamingTheCall() throws {
        let (status, output, errors) = try runHarness("run-main-from-a-task")
        #expect(status != 0, "\(output)")
        #expect(errors.contains("EvRunLoop.runMain(_:): call it from synchronous code"))
    }
}
