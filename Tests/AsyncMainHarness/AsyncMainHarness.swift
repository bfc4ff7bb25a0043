// A program with an async main, whose main thread libdispatch takes at the first suspension:
// the shapes in which a newcomer's timers on a run loop would never fire. AsyncMisuseTests runs
// it as a child process with one scenario name and checks that each shape either works or stops
// with a message naming the fix.
import Foundation
import RunLoopKit

@main
struct AsyncMainHarness {
    static func main() async throws {
        switch CommandLine.arguments.dropFirst().first {
        case "main-before-first-suspension":
            // Timers on EvRunLoop.main, asked for before the first await, on the main thread.
            EvRunLoop.main.add(EvTimer(after: .milliseconds(1)) { _ in print("fired") }, forMode: .common)
            try await Task.sleep(for: .milliseconds(100))
            print("returned")

        case "main-after-suspension":
            // The same after an await: the main actor now runs on a thread of libdispatch's.
            try await Task.sleep(for: .milliseconds(1))
            EvRunLoop.main.add(EvTimer(after: .milliseconds(1)) { _ in print("fired") }, forMode: .common)
            try await Task.sleep(for: .milliseconds(100))
            print("returned")

        case "current-before-first-suspension":
            // The landing page's first line in an async main: the main thread's loop, which
            // nothing will run.
            let loop = EvRunLoop.current
            loop.run(mode: .default, timeout: .milliseconds(10))
            print("returned")

        case "run-main-loop-after-suspension":
            // Running the main loop from the async main's code, after an await.
            try await Task.sleep(for: .milliseconds(1))
            EvRunLoop.main.run(mode: .default, timeout: .milliseconds(10))
            print("returned")

        case "current-in-a-task":
            // A detached task on the cooperative pool asks for its thread's loop.
            await Task.detached { _ = EvRunLoop.current }.value
            print("returned")

        case "worker":
            // What works under an async main: a worker thread's loop, its timers and its jobs.
            let worker = EvWorkerThread(name: "async-worker")
            let loop = try worker.start()
            let fired = try await worker.submit { () -> Bool in
                var fired = false
                let current = EvRunLoop.current
                current.addTimer(interval: .milliseconds(1), repeats: false) { _ in fired = true }
                return current.run(until: .now + .seconds(30), orUntil: { fired }) && current === loop
            }
            print("timer fired on the worker's loop: \(fired)")
            let ticks = loop.ticks(every: .milliseconds(1))
            var count = 0
            for await _ in ticks {
                count += 1
                if count == 3 { break }
            }
            print("ticks awaited from the async main: \(count)")
            await worker.stop()

        default:
            print("unknown scenario")
            exit(2)
        }
    }
}
