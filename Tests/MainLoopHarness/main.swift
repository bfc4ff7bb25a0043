// A program whose main thread runs EvRunLoop.main, for the tests of the main loop's service of
// libdispatch's main queue (R17, R60). Swift Testing gives up the process's main thread, so
// MainThreadTests runs this as a child process with one scenario name and checks its output.
import Dispatch
import Foundation
import RunLoopKit
import TestSupport

let main = EvRunLoop.main
precondition(EvRunLoop.current === main, "the main thread's current loop is the main loop (R2)")

/// Stops the main loop from the main queue once `done` is true.
func finish(_ line: String) {
    print(line)
    main.stop()
}

switch CommandLine.arguments.dropFirst().first {
case "dispatch-main-async":
    // Work sent to the main queue from another thread runs under EvRunLoop.main, on the main thread.
    Thread {
        DispatchQueue.main.async { finish("ran on main thread: \(Thread.isMainThread)") }
    }.start()
    print("result: \(main.run(mode: .default, timeout: .seconds(30)))")

case "main-actor-task":
    // A Task on the main actor started from a background thread completes under EvRunLoop.main.
    Thread {
        Task { @MainActor in finish("main actor task ran on main thread: \(Thread.isMainThread)") }
    }.start()
    print("result: \(main.run(mode: .default, timeout: .seconds(30)))")

case "common-mode-only":
    // A mode that is not common does not service the main queue; a common one does (R60).
    let tracking = EvRunLoop.Mode("tracking")
    let ticks = EvTimer(after: .milliseconds(1), interval: .milliseconds(1)) { _ in }
    main.add(ticks, forMode: tracking)
    let ran = Box()
    DispatchQueue.main.async { ran.value = true }
    _ = main.run(mode: tracking, timeout: .milliseconds(20))
    print("ran in tracking before common: \(ran.value)")
    main.addCommonMode(tracking)
    _ = main.run(mode: tracking, timeout: .seconds(30), returnAfterSourceHandled: true)
    print("ran in tracking after common: \(ran.value)")

case "mode-made-common-during-its-run":
    // R17, C116: once made common, the running mode counts the main queue as CF counts it, so
    // it is not empty when its last timer has fired; this run does not service the queue.
    let tracking = EvRunLoop.Mode("tracking")
    let ran = Box()
    main.add(EvTimer(after: .milliseconds(1)) { _ in
        main.addCommonMode(tracking)
        DispatchQueue.main.async { ran.value = true }
    }, forMode: tracking)
    print("result: \(main.run(mode: tracking, timeout: .milliseconds(50))), main queue serviced: \(ran.value)")
    _ = main.run(mode: .default, timeout: .seconds(30), returnAfterSourceHandled: true)
    print("then serviced by the next run: \(ran.value)")

case "sleeps-in-libev":
    mainLoopSleepsInLibev(main)

case "empty-common-mode":
    // R17: the main loop's common modes are never empty; a zero timeout polls and times out.
    print("result: \(main.run(mode: .default, timeout: .zero))")

case "nested-run-in-main-queue-block":
    // R60: a run nested in a main-queue block does not service the main queue again.
    let order = Box()
    DispatchQueue.main.async {
        DispatchQueue.main.async { order.log.append("second") }
        main.add(EvTimer(after: .milliseconds(1)) { _ in }, forMode: .default)
        let nested = main.run(mode: .default, timeout: .seconds(30))
        order.log.append("nested \(nested)")
    }
    _ = main.run(mode: .default, timeout: .seconds(30), returnAfterSourceHandled: true)
    _ = main.run(mode: .default, timeout: .seconds(30), returnAfterSourceHandled: true)
    print("order: \(order.log.joined(separator: ", "))")

case "main-queue-work-for-a-run-nested-in-a-timer-after-the-shortcut":
    // R20.7, R60: work the shortcut found (no wait) while a due timer runs the loop nested first:
    // the nested run services it rather than sleep until its timeout.
    let log = Box()
    main.add(EvTimer(fireAt: .now.advanced(by: .seconds(-1))) { _ in
        log.log.append("timer 1")
        DispatchQueue.main.async { log.log.append("B") }
        // Due in the next pass, which takes the shortcut: the previous one serviced no work.
        main.add(EvTimer(fireAt: .now.advanced(by: .seconds(-1))) { _ in
            log.log.append("timer 2")
            log.log.append("nested \(main.run(mode: .default, timeout: .seconds(5), returnAfterSourceHandled: true))")
            main.stop()
        }, forMode: .default)
    }, forMode: .default)
    print("result: \(main.run(mode: .default, timeout: .seconds(30))), \(log.log.joined(separator: ", "))")

case "run-main":
    // An async program on top of the main loop (R60): a timer on EvRunLoop.main, the
    // main actor and DispatchQueue.main all run on the main thread while body runs.
    let value = try EvRunLoop.runMain { () async throws -> Int in
        let timerOnMain = await withCheckedContinuation { continuation in
            main.add(EvTimer(after: .milliseconds(5)) { _ in continuation.resume(returning: Thread.isMainThread) }, forMode: .common)
        }
        print("timer on EvRunLoop.main fired on main thread: \(timerOnMain)")
        let mainActorOnMain = await MainActor.run { Thread.isMainThread }
        print("main actor ran on main thread: \(mainActorOnMain)")
        let dispatchOnMain = await withCheckedContinuation { continuation in
            DispatchQueue.main.async { continuation.resume(returning: Thread.isMainThread) }
        }
        print("DispatchQueue.main ran on main thread: \(dispatchOnMain)")
        return 42
    }
    print("runMain returned \(value)")

case "run-main-drops-a-worker":
    // A worker dropped at the end of the body, in a task off the main thread, does not wait
    // there; runMain returns only after its queued work, which needs the main loop, has run.
    let value = try EvRunLoop.runMain { () async throws -> Int in
        let released = DispatchSemaphore(value: 0)
        let holder = WorkerHolder(EvWorkerThread(name: "dropped"), released: released)
        try holder.worker.start()
        try holder.worker.execute {
            released.wait()  // the body has returned and let the worker go
            let onMain = (try? EvRunLoop.main.performAndWait { Thread.isMainThread }) ?? false
            print("queued work ran the main loop's block on the main thread: \(onMain)")
        }
        return 5
    }
    print("runMain returned \(value)")

case "run-main-drops-a-worker-on-the-main-actor":
    // A worker dropped on the main actor while runMain runs the main loop does not wait there:
    // its queued work needs the main loop, which the wait would hold (a watchdog reports it).
    _ = spawnThread {
        sleep(20)
        print("runMain did not return")
        exit(1)
    }
    let value = try EvRunLoop.runMain { () async throws -> Int in
        try await dropOnTheMainActor()
        return 6
    }
    print("runMain returned \(value)")

case "run-main-typed-error":
    // body's error comes out of runMain with its own type (typed throws).
    do throws(HarnessError) {
        _ = try EvRunLoop.runMain { () async throws(HarnessError) -> Int in
            await Task.yield()
            throw .expected
        }
        print("runMain returned")
    } catch {
        let typed: HarnessError = error
        print("runMain threw \(typed)")
    }

case "run-main-ends-after-nested-run":
    // body finishes while a callout of the main loop runs a nested run: that run is not cut
    // short (it times out as asked), and runMain returns once its own run is back.
    let value = try EvRunLoop.runMain { () async throws -> Int in
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            main.add(EvTimer(after: .milliseconds(1)) { _ in
                continuation.resume()
                print("nested run: \(main.run(mode: .default, timeout: .milliseconds(200)))")
            }, forMode: .default)
        }
        return 7
    }
    print("runMain returned \(value)")

case "run-main-ends-during-a-nested-run-before-the-wait":
    // body finishes while a block run before a pass's wait runs the main loop nested: its
    // wake-up goes to that nested run, which carries on; runMain's own run must then end rather
    // than sleep (a watchdog reports a runMain that never returns).
    _ = spawnThread {
        sleep(20)
        print("runMain did not return")
        exit(1)
    }
    let value = EvRunLoop.runMain { () async -> Int in
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            while !main.isWaiting { sched_yield() }
            // Sent while the loop sleeps, the outer block runs after the wait; the block it queues
            // runs in the next pass's first blocks step, before that pass's wait.
            try! main.execute {
                main.perform {
                    continuation.resume()
                    print("nested run: \(main.run(mode: .default, timeout: .milliseconds(200)))")
                }
            }
        }
        return 9
    }
    print("runMain returned \(value)")

case "run-main-from-main-queue-work":
    // Misuse: runMain from a DispatchQueue.main block the main loop drains stops with a message
    // instead of spinning on a default mode that is empty there (R60: no drain inside a drain).
    DispatchQueue.main.async {
        let value = EvRunLoop.runMain { () async -> Int in await MainActor.run { 5 } }
        print("runMain returned \(value)")
        main.stop()
    }
    print("result: \(main.run(mode: .default, timeout: .seconds(10)))")

case "run-main-from-a-task":
    // Misuse: runMain from async code (here a main-actor task on the main thread) stops with a
    // message instead of running the loop inside a main-actor job.
    Task { @MainActor in
        _ = EvRunLoop.runMain { 1 }
        print("runMain returned inside a task")
        main.stop()
    }
    print("result: \(main.run(mode: .default, timeout: .seconds(10)))")

case "run-main-off-main-thread":
    // Misuse: runMain from another thread stops with a message naming the call.
    let thread = Thread { _ = EvRunLoop.runMain { 1 } }  // a body that cannot throw: no try (typed throws)
    thread.start()
    while true { pause() }

case "main-loop-from-every-thread":
    // R2: one main loop, the same object from every thread; a secondary thread's own loop is
    // another (asked here, where the main thread is alive and runs synchronous code).
    let seen = TestLocked<[String]>([])
    let threads = (0..<2).map { _ in
        spawnThread {
            let own = EvRunLoop.current
            seen.withLock { $0.append("main is the main loop: \(EvRunLoop.main === main), own loop is another: \(own !== main)") }
        }
    }
    for thread in threads { pthread_join(thread, nil) }
    for line in seen.withLock({ $0 }) { print(line) }

case "run-main-loop-from-another-thread":
    // Misuse: the main loop run by another thread stops with R5's message, which says how the
    // main loop gets run from async code.
    spawnThread {
        main.add(EvTimer(after: .seconds(3600)) { _ in }, forMode: .default)
        _ = main.run(mode: .default, timeout: .zero)
    }
    while true { pause() }

case "current-in-run-main-body":
    // Misuse: EvRunLoop.current in runMain's body, a task on the cooperative pool, where a new
    // loop would never run: it stops with a message naming the fix.
    _ = EvRunLoop.runMain { () async -> Int in
        _ = EvRunLoop.current
        return 0
    }
    print("runMain returned")

case "main-from-tasks-in-run-main":
    // What works in runMain's body: EvRunLoop.main from the body's task and from the main actor,
    // EvRunLoop.current from the main actor (the main loop is running its job), and a worker's
    // loop reached from a job on it.
    let value = EvRunLoop.runMain { () async -> [String] in
        var lines: [String] = []
        let fromBody = await withCheckedContinuation { continuation in
            EvRunLoop.main.add(EvTimer(after: .milliseconds(1)) { _ in continuation.resume(returning: Thread.isMainThread) }, forMode: .common)
        }
        lines.append("timer added from the body fired on the main thread: \(fromBody)")
        let current = await MainActor.run { EvRunLoop.current === main }
        lines.append("current on the main actor is the main loop: \(current)")
        let worker = EvWorkerThread(name: "harness-worker")
        let loop = try! worker.start()
        let onWorker = try! await worker.submit { EvRunLoop.current === loop }
        lines.append("current in a worker's job is the worker's loop: \(onWorker)")
        await worker.stop()
        return lines
    }
    for line in value { print(line) }

case "landing-page-sample":
    try landingPageSampleEverywhere()

case "getting-started-program":
    print("exit code: \(try runProgram())")

case "stall-capture-monitor-churn":
    let wanted = CommandLine.arguments.count > 3 ? Int(CommandLine.arguments[3]) ?? 20 : 20
    StallCaptureScenarios.monitorChurn(.symbolicated, seconds: Double(CommandLine.arguments[2]) ?? 3, wanted: wanted)

case "stall-capture-library-churn":
    let style: EvStallMonitor.BacktraceStyle = CommandLine.arguments[3] == "addresses" ? .addresses : .symbolicated
    StallCaptureScenarios.libraryChurn(style, seconds: Double(CommandLine.arguments[2]) ?? 3)

case "main-queue-phases":
    // C114: the observer phases around main-queue work, on CF's main loop or on EvRunLoop.main.
    guard let engine = CommandLine.arguments.dropFirst(2).first.flatMap(MainLoopUnderTest.init(rawValue:)) else {
        print("usage: main-queue-phases cf|runLoopKit")
        exit(2)
    }
    for line in mainQueuePhases(on: engine) { print(line) }

case "main-queue-work-for-a-run-nested-in-a-timer":
    // R60: work the wait found, left for a run nested in a timer's handler to service.
    guard let engine = CommandLine.arguments.dropFirst(2).first.flatMap(MainLoopUnderTest.init(rawValue:)) else {
        print("usage: main-queue-work-for-a-run-nested-in-a-timer cf|runLoopKit")
        exit(2)
    }
    for line in mainQueueWorkForARunNestedInATimer(on: engine) { print(line) }

default:
    print("unknown scenario")
    exit(2)
}

enum HarnessError: Error { case expected }

/// Main-thread-only scratch state (everything here runs on the main thread).
final class Box: @unchecked Sendable {
    var value = false
    var log: [String] = []
}

/// Holds a worker and says when it lets it go (just before the worker's own release).
final class WorkerHolder: Sendable {
    let worker: EvWorkerThread
    let released: DispatchSemaphore
    init(_ worker: EvWorkerThread, released: DispatchSemaphore) {
        self.worker = worker
        self.released = released
    }
    deinit { released.signal() }
}

/// Starts a worker whose queued work runs a block on the main loop, and drops the worker on the
/// main actor while that work waits for it.
@MainActor func dropOnTheMainActor() throws {
    let released = DispatchSemaphore(value: 0)
    let holder = WorkerHolder(EvWorkerThread(name: "dropped on the main actor"), released: released)
    try holder.worker.start()
    try holder.worker.execute {
        released.wait()  // the main actor has let the worker go
        let onMain = (try? EvRunLoop.main.performAndWait { Thread.isMainThread }) ?? false
        print("queued work ran the main loop's block on the main thread: \(onMain)")
    }
}
