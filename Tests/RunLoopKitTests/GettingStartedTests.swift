import Dispatch
import Foundation
import RunLoopKit
import Testing

// GETTING-STARTED-WORKER-BEGIN
/// Starts a worker thread that watches `socket`, ticks a timer, and takes work from other
/// threads; `log` receives what happens, on the worker's thread.
func startWorker(watching socket: Int32, log: @escaping @Sendable (String) -> Void) throws -> EvWorkerThread {
    // A keep-alive thread: its run loop sleeps until there is something to do.
    let worker = EvWorkerThread(name: "io-worker")
    let loop = try worker.start()

    // Items made on the loop's own thread: their handlers need no @Sendable and share plain
    // variables, which only this thread ever touches.
    try worker.submitAndWait {
        var received = 0
        weak var input: EvFileDescriptorSource?  // the loop holds it; weak: no cycle through its handler
        input = try loop.addFileDescriptorSource(fileDescriptor: socket, events: .readable) { _ in
            var buffer = [UInt8](repeating: 0, count: 256)
            let count = read(socket, &buffer, buffer.count)
            guard count > 0 else {  // the peer closed
                input?.invalidate()
                return
            }
            received += count
            log("read \(count) bytes")
        }
        var ticks = 0
        loop.addTimer(interval: .milliseconds(10), repeats: true) { timer in
            ticks += 1
            log("tick \(ticks), \(received) bytes so far")
            if ticks == 3 { timer.invalidate() }
        }
    }

    // Work from any thread runs on the worker's thread, in the order it was handed over:
    // `execute` returns at once; `submitAndWait` waits for a value (`await submit` in async code).
    try worker.execute { log("on the worker's thread: \(loop.isCurrent)") }
    return worker
}
// GETTING-STARTED-WORKER-END

/// The documentation's first-hour code, compiled and run: the "Getting started" article and the
/// landing page show exactly the code that runs here (the parts that need a main thread of their
/// own run in MainLoopHarness, from Tests/MainLoopHarness/DocumentationSamples.swift).
@Suite struct GettingStartedTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let catalogue = root.appendingPathComponent("Sources/RunLoopKit/RunLoopKit.docc")

    @Test func theWorkerWatchesItsSocketTicksAndTakesWork() throws {
        var ends: [Int32] = [0, 0]
        try #require(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &ends) == 0)
        let (near, far) = (ends[0], ends[1])
        defer { close(near); close(far) }
        let log = EventLog<String>()
        let logged = DispatchSemaphore(value: 0)
        var bytes: [UInt8] = [1, 2, 3, 4, 5]
        #expect(write(far, &bytes, 5) == 5)
        let worker = try startWorker(watching: near) { line in
            log.append(line)
            logged.signal()
        }
        // Each line wakes the wait; 30 s is a safety net.
        func seen(_ prefix: String) -> Bool { log.all.contains { $0.hasPrefix(prefix) } }
        while !(seen("tick 3") && seen("read 5 bytes") && seen("on the worker's thread")) {
            try #require(logged.wait(timeout: .now() + 30) == .success, "log so far: \(log.all)")
        }
        worker.stop()
        #expect(log.all.contains("on the worker's thread: true"))
        #expect(log.all.filter { $0.hasPrefix("tick") }.count == 3)
    }

    @Test func theLandingPageSampleTicksFromSynchronousCodeRunMainsBodyAndATask() throws {
        let (status, output, errors) = try runHarness("MainLoopHarness", "landing-page-sample")
        #expect(status == 0, "\(errors)")
        let expected = ["main thread", "runMain's body", "a detached task"].flatMap { place in
            (1...3).map { "\(place): tick \($0)" }
        }
        #expect(output.split(separator: "\n").map(String.init) == expected)
    }

    @Test func theAsyncMainProgramRunsUnderRunMain() throws {
        let (status, output, errors) = try runHarness("MainLoopHarness", "getting-started-program")
        #expect(status == 0, "\(errors)")
        #expect(output.split(separator: "\n").map(String.init) == [
            "3 ticks of the main loop",
            "the worker's answer: 42",
            "main actor on the main loop's thread: true",
            "exit code: 0",
        ])
    }

    /// The pages show each marked region as a Swift block, exactly (the landing page's region
    /// without the indentation of the function it sits in).
    @Test(arguments: [
        ("GettingStarted.md", "Tests/RunLoopKitTests/GettingStartedTests.swift", "GETTING-STARTED-WORKER"),
        ("GettingStarted.md", "Tests/MainLoopHarness/DocumentationSamples.swift", "GETTING-STARTED-MAIN"),
        ("RunLoopKit.md", "Tests/MainLoopHarness/DocumentationSamples.swift", "LANDING"),
    ])
    func thePagesShowThisCode(page: String, file: String, region: String) throws {
        let text = try String(contentsOf: Self.catalogue.appendingPathComponent(page), encoding: .utf8)
        let source = try String(contentsOf: Self.root.appendingPathComponent(file), encoding: .utf8)
        let begin = try #require(source.range(of: "// \(region)-BEGIN\n"))
        let marker = try #require(source.range(of: "// \(region)-END"))
        let end = try #require(source.range(of: "\n", options: .backwards, range: source.startIndex..<marker.lowerBound))
        let lines = source[begin.upperBound..<end.upperBound].split(separator: "\n", omittingEmptySubsequences: false)
        let indentation = lines.filter { !$0.isEmpty }.map { $0.prefix { $0 == " " }.count }.min() ?? 0
        let code = lines.map { $0.dropFirst(min(indentation, $0.count)) }.joined(separator: "\n")
        #expect(text.contains("```swift\n" + code + "```"), "\(page) does not show \(file)'s \(region) region as it is")
    }
}
