// The documentation's samples that need a process of their own: GettingStartedTests runs them
// through MainLoopHarness and checks that the DocC pages show exactly this code.
import Dispatch
import RunLoopKit

/// The landing page's sample, as a function: `print` stands in for the standard one, so that a
/// caller can wait for the third tick.
func landingPageSample(print: @escaping @Sendable (String) -> Void) throws -> EvWorkerThread {
    // LANDING-BEGIN
    let worker = EvWorkerThread(name: "ticker")
    let loop = try worker.start()         // a thread whose run loop sleeps until there is work
    try worker.execute {                  // runs on the worker's thread
        var ticks = 0                     // only that thread touches it: no lock, no @Sendable
        loop.addTimer(interval: .milliseconds(10), repeats: true) { timer in
            ticks += 1
            print("tick \(ticks)")
            if ticks == 3 { timer.invalidate() }
        }
    }
    // LANDING-END
    return worker
}

// GETTING-STARTED-MAIN-BEGIN
/// The whole program, called from `main.swift`, a synchronous main: `exit(try runProgram())`.
/// `runMain` runs the main loop on the main thread while the async body runs.
func runProgram() throws -> Int32 {
    try EvRunLoop.runMain { () async throws -> Int32 in
        // A timer on the main loop fires on the main thread while the body runs.
        var ticks = 0
        for await _ in EvRunLoop.main.ticks(every: .milliseconds(10)) {
            ticks += 1
            if ticks == 3 { break }
        }
        print("3 ticks of the main loop")

        // A worker thread does the rest: awaiting its work blocks no thread.
        let worker = EvWorkerThread(name: "compute")
        try worker.start()
        let answer = try await worker.submit { 6 * 7 }
        print("the worker's answer: \(answer)")

        // Main-actor code runs on the main thread, under the main loop.
        let onMain = await MainActor.run { EvRunLoop.main.isCurrent }
        print("main actor on the main loop's thread: \(onMain)")

        await worker.stop()
        return 0
    }
}
// GETTING-STARTED-MAIN-END

/// Runs the landing page's sample from synchronous code on the main thread, in `runMain`'s
/// body and in a task, and prints each run's ticks.
func landingPageSampleEverywhere() throws {
    let ticked = DispatchSemaphore(value: 0)
    let fromMain = try landingPageSample { line in
        Swift.print("main thread: \(line)")
        if line == "tick 3" { ticked.signal() }
    }
    ticked.wait()
    fromMain.stop()
    try EvRunLoop.runMain { () async throws -> Void in
        try await tickedThrice("runMain's body")
        try await Task.detached { try await tickedThrice("a detached task") }.value
    }
}

/// Runs the landing page's sample in the calling task and suspends until its third tick.
private func tickedThrice(_ label: String) async throws {
    let (ticks, continuation) = AsyncStream.makeStream(of: String.self)
    let worker = try landingPageSample { line in
        Swift.print("\(label): \(line)")
        if line == "tick 3" { continuation.finish() }
    }
    for await _ in ticks {}
    await worker.stop()
}
