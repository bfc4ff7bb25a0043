import Dispatch
import Foundation
import Synchronization

/// Scenario 7: main-queue latency. The process's main thread runs a backend's main loop (RunLoopKit:
/// `EvRunLoop.main.run(mode: .default, …)`; CF: Foundation's `RunLoop.main.run(mode: .default,
/// before:)`); a poster thread reads the monotonic clock and calls `DispatchQueue.main.async`;
/// the block reads the clock again on the main thread. Each sample is one run of the main loop,
/// which returns once it has run the block; before posting, the poster pauses so the loop is
/// really asleep. Backends alternate sample by sample, in an order that rotates. Raw libev has
/// no main loop that services libdispatch's main queue: its cells show "—".
///
/// This needs the real main thread, which the benchmark's commands give it: they are synchronous
/// `ParsableCommand`s, and ArgumentParser calls a synchronous `run()` on the main thread.
struct MainQueueScenario {
    var samplesPerRound: Int
    var rounds: Int
    var warmup = 200
    var pauseNs: UInt64 = 200_000

    func run(_ backends: [any Backend]) -> [Figure] {
        let backends = backends.filter { $0.id != .libevIOURing }
        let loops = backends.compactMap { $0 as? any MainLoopBackend }
        guard !loops.isEmpty else { return [] }
        guard Thread.isMainThread else {
            log("mainqueue: skipped: it must run on the process's main thread")
            return []
        }
        let none = Set(backends.filter { !($0 is any MainLoopBackend) }.map(\.id))
        return Pinning.shared.asLoopThread { measure(loops, noEquivalent: none) }
    }

    private func measure(_ loops: [any MainLoopBackend], noEquivalent: Set<BackendID>) -> [Figure] {
        let poster = MainQueuePoster(pauseNs: pauseNs)
        defer { poster.finish() }
        var latencies = Array(repeating: Latencies(), count: loops.count)
        for loop in loops {
            for _ in 0..<warmup { _ = sample(loop, poster) }
        }
        for round in 0..<rounds {
            Progress.shared.round(round, of: rounds, "\(samplesPerRound) main-queue blocks per backend")
            for n in 0..<samplesPerRound {
                for i in rotated(Array(loops.indices), by: round + n) {
                    latencies[i].record(sample(loops[i], poster))
                }
            }
        }
        let byBackend = Dictionary(uniqueKeysWithValues: zip(loops.map(\.id), latencies))
        return Latencies.percentileFigures(
            prefix: "mainqueue", scenario: "mainqueue", label: "main-queue latency", of: byBackend,
            noEquivalent: noEquivalent)
    }

    /// One sample, on the main thread: lets the poster post after its pause, runs the main loop
    /// until the block has run; post → block in ns.
    private func sample(_ loop: any MainLoopBackend, _ poster: MainQueuePoster) -> UInt64 {
        poster.requestPost()
        while !poster.blockRan { loop.runMainLoopOnce() }
        return poster.latencyNs
    }
}

/// The thread that posts to the main queue, one block per request, from the driver CPU.
final class MainQueuePoster: Sendable {
    /// What the poster thread, the block and the main thread share.
    private final class State: Sendable {
        let postedAt = Atomic<UInt64>(0)
        let ranAt = Atomic<UInt64>(0)
        let ran = Atomic<Bool>(false)
        let finished = Atomic<Bool>(false)
        let requests = DispatchSemaphore(value: 0)

        /// The block, on the main thread under the running main loop.
        func blockRuns() {
            ranAt.store(nowNs(), ordering: .relaxed)
            ran.store(true, ordering: .relaxed)
        }
    }

    private let state: State
    private let thread: BenchThread

    init(pauseNs: UInt64) {
        let state = State()
        self.state = state
        thread = BenchThread(cpu: Pinning.shared.driverCPU) {
            while true {
                state.requests.wait()
                if state.finished.load(ordering: .acquiring) { return }
                pause(ns: pauseNs)
                state.postedAt.store(nowNs(), ordering: .relaxed)
                DispatchQueue.main.async { state.blockRuns() }
            }
        }
    }

    /// Main thread: the next block is wanted; it is posted after the poster's pause.
    func requestPost() {
        state.ran.store(false, ordering: .relaxed)
        state.requests.signal()
    }

    /// Main thread: whether the block of the last request has run (the block runs on this
    /// thread too, so relaxed is enough).
    var blockRan: Bool { state.ran.load(ordering: .relaxed) }

    /// Main thread, once `blockRan`: post → block, in ns. The main queue orders the poster's
    /// store of the post time before the block, which ran on this thread.
    var latencyNs: UInt64 {
        state.ranAt.load(ordering: .relaxed) &- state.postedAt.load(ordering: .relaxed)
    }

    /// Ends the poster thread and joins it.
    func finish() {
        state.finished.store(true, ordering: .releasing)
        state.requests.signal()
        thread.join()
    }
}
