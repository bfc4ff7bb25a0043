import Foundation
import RunLoopKit
import Synchronization
import TestSupport

/// How long each stress test keeps its threads busy: `RUNLOOPKIT_STRESS_SECONDS`, 2 s by default.
/// The duration only decides when producers stop; no assertion depends on time.
enum StressDuration {
    static let seconds = Double(ProcessInfo.processInfo.environment["RUNLOOPKIT_STRESS_SECONDS"] ?? "") ?? 2

    /// When producers started now should stop.
    static func deadline() -> ContinuousClock.Instant { .now + .milliseconds(Int(seconds * 1000)) }
}

/// Fails a stress test that stops making progress, instead of letting it hang CI: every thread
/// of the test beats its own heart; if one that is still running stays silent for `stallAfter`
/// seconds, the watchdog prints the test's stage, which heart stalled and the state of every
/// thread of the process (`/proc/self/task/*/stat`, `wchan`), then stops the process.
final class Watchdog: Sendable {
    final class Heart: Sendable {
        let name: String
        let beats = Atomic<Int>(0)
        let stopped = Atomic<Bool>(false)
        init(_ name: String) { self.name = name }
        func beat() { beats.add(1, ordering: .relaxed) }
        func stop() { stopped.store(true, ordering: .releasing) }
    }

    private let test: String
    private let stage = TestLocked("starting")
    private let hearts = TestLocked<[Heart]>([])
    private let finished = DispatchSemaphore(value: 0)
    private let isFinished = Atomic<Bool>(false)
    private let thread = TestLocked<pthread_t?>(nil)

    init(_ test: String, stallAfter seconds: Double = 20) {
        self.test = test
        let started = spawnThread(named: "stress-watchdog") { [self] in watch(stallAfter: seconds) }
        thread.withLock { $0 = started }
    }

    /// Names what the test is doing now, for the report.
    func enter(_ stage: String) { self.stage.withLock { $0 = stage } }

    /// A heart for one thread (or one waiting loop) of the test.
    func heart(_ name: String) -> Heart {
        let heart = Heart(name)
        hearts.withLock { $0.append(heart) }
        return heart
    }

    /// Ends the watch; call when the test's threads are done.
    func finish() {
        isFinished.store(true, ordering: .releasing)
        finished.signal()
        if let thread = thread.withLock({ $0 }) { pthread_join(thread, nil) }
    }

    private func watch(stallAfter seconds: Double) {
        var last: [ObjectIdentifier: (beats: Int, since: ContinuousClock.Instant)] = [:]
        while finished.wait(timeout: .now() + .milliseconds(250)) == .timedOut {
            let now = ContinuousClock.now
            for heart in hearts.withLock({ $0 }) where !heart.stopped.load(ordering: .acquiring) {
                let beats = heart.beats.load(ordering: .relaxed)
                let id = ObjectIdentifier(heart)
                if let previous = last[id], previous.beats == beats {
                    if previous.since.duration(to: now) > .milliseconds(Int(seconds * 1000)) { report(stalled: heart.name, seconds) }
                } else {
                    last[id] = (beats, now)
                }
            }
        }
    }

    private func report(stalled heart: String, _ seconds: Double) -> Never {
        var lines = ["\(test): no progress from \(heart) for \(seconds) s in stage \"\(stage.withLock { $0 })\"; threads:"]
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        for task in tasks.sorted(by: { (Int($0) ?? 0) < (Int($1) ?? 0) }) {
            let stat = procFileText("/proc/self/task/\(task)/stat") ?? "?"
            let wchan = procFileText("/proc/self/task/\(task)/wchan") ?? "?"
            // stat: "tid (comm) state ..."; the name may contain spaces, so split after the ')'.
            let name = stat.split(separator: "(", maxSplits: 1).last?.split(separator: ")").first ?? "?"
            let state = stat.split(separator: ")").last?.split(separator: " ").first ?? "?"
            lines.append("  \(task) \(name) state \(state) waiting in \(wchan)")
        }
        let message = lines.joined(separator: "\n")
        try? FileHandle.standardError.write(contentsOf: Data((message + "\n").utf8))
        fatalError(message)
    }
}

/// A thread with its own run loop: `body` runs on it; `loop` is available once it started.
final class LoopThread: Sendable {
    let loop: EvRunLoop
    private let thread: pthread_t

    init(named name: String, _ body: @escaping @Sendable (EvRunLoop) -> Void) {
        let handOver = TestLocked<EvRunLoop?>(nil)
        let ready = DispatchSemaphore(value: 0)
        thread = spawnThread(named: name) {
            let loop = EvRunLoop.current
            handOver.withLock { $0 = loop }
            ready.signal()
            body(loop)
        }
        ready.wait()
        loop = handOver.withLock { $0! }
    }

    /// Waits for the thread to exit (its loop is then torn down, R4).
    func join() { pthread_join(thread, nil) }
}

/// Waits until `condition` holds, beating `heart` meanwhile; false if `seconds` pass first
/// (a safety net: the condition is what the test waits for).
func waitUntil(_ heart: Watchdog.Heart, timeout seconds: Double = 30, _ condition: () -> Bool) -> Bool {
    let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
    while !condition() {
        if ContinuousClock.now > deadline { return false }
        heart.beat()
        usleep(500)
    }
    return true
}

/// Waits until `condition` holds, beating `heart` meanwhile, for as long as `progress` keeps
/// changing; false once it stood still for `seconds` (a drain fails only when it stops draining,
/// however long a long soak's backlog takes).
func waitUntil(
    _ heart: Watchdog.Heart, stalledAfter seconds: Double = 30, progress: () -> Int, _ condition: () -> Bool
) -> Bool {
    var last = progress()
    var deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
    while !condition() {
        let now = progress()
        if now != last {
            last = now
            deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
        } else if ContinuousClock.now > deadline {
            return false
        }
        heart.beat()
        usleep(500)
    }
    return true
}

/// Per-id counters shared by many threads (how often each block or message ran).
final class Tally: Sendable {
    private struct Counts {
        var perID: [Int]
        var distinct = 0
    }
    private let counts: TestLocked<Counts>
    init(count: Int) { counts = TestLocked(Counts(perID: Array(repeating: 0, count: count))) }
    func record(_ id: Int) {
        counts.withLock { counts in
            if counts.perID[id] == 0 { counts.distinct += 1 }
            counts.perID[id] += 1
        }
    }
    /// How often `id` ran.
    func count(of id: Int) -> Int { counts.withLock { $0.perID[id] } }
    /// How many ids ran at least once.
    var distinct: Int { counts.withLock { $0.distinct } }
    /// The ids below `count` that ran more than once.
    func ranMoreThanOnce(below count: Int) -> [Int] {
        counts.withLock { counts in (0..<count).filter { counts.perID[$0] > 1 } }
    }
    /// The ids below `count` that did not run exactly once.
    func notExactlyOnce(below count: Int) -> [Int] {
        counts.withLock { counts in (0..<count).filter { counts.perID[$0] != 1 } }
    }
}
