import Dispatch
#if canImport(RunLoopKit)
import RunLoopKit
#endif

/// Scenario 8: actor hop round trip. A task on Swift's global concurrent executor reads the
/// monotonic clock, awaits an empty method of an actor, and reads the clock again once it is
/// back: one hop onto the actor's executor and one back. The actors: one pinned to a RunLoopKit
/// loop thread through `EvRunLoopExecutor` (the loop runs its default mode on a dedicated
/// thread), and a default actor (the Swift runtime's own scheduling: with the actor idle, it
/// runs the method on the caller's thread, so this is the floor an actor hop can cost). Before
/// each hop the task pauses, blocking its thread, so the loop is really asleep, as in `wakeup`.
/// The actors alternate hop by hop, in an order that rotates.
///
/// Nothing is pinned here: the runtime's pool threads cannot be, and a pool thread created by
/// a pinned thread (the loop's, handing the task back) would inherit its CPU for good.
struct ActorHopScenario {
    var samplesPerRound: Int
    var rounds: Int
    /// Measure the actor pinned to a RunLoopKit loop, and the default actor.
    var runloopkit: Bool
    var defaultActor: Bool
    /// SwiftNIO and libdispatch (see `Peers`).
    var peers: [BackendID] = []
    var warmup = 200
    var pauseNs: UInt64 = 200_000

    func run() -> [Figure] {
        var targets: [(BackendID, any HopTarget)] = []
        #if canImport(RunLoopKit)
        let loop = runloopkit ? RunLoopKitRunningLoop(cpu: nil, onSignal: {}) : nil
        defer { loop?.stop() }
        if let loop { targets.append((.runloopkit, LoopPinnedActor(EvRunLoopExecutor(loop.loop)))) }
        #endif
        // The peers' actors: one on a SwiftNIO event loop's executor, one on a serial executor
        // over a DispatchQueue.
        let peerLoops = Pinning.shared.with(.unpinned) { peers.map { ($0, Peers.startLoop($0, onSignal: {})) } }
        defer { peerLoops.forEach { $0.1.stop() } }
        for (peer, loop) in peerLoops { targets.append((peer, Peers.hopTarget(peer, on: loop))) }
        if defaultActor { targets.append((.defaultActor, PlainActor())) }
        guard !targets.isEmpty else { return [] }
        // The calling (main) thread waits; the hops are made from a task on the global executor.
        let chosen = targets
        let slot = ResultSlot<[Latencies]>()
        let done = DispatchSemaphore(value: 0)
        Task.detached {
            slot.value = await measure(chosen.map(\.1))
            done.signal()
        }
        done.wait()
        let byTarget = Dictionary(uniqueKeysWithValues: zip(targets.map(\.0), slot.value!))
        return Latencies.percentileFigures(
            prefix: "actorhop", scenario: "actorhop", label: "actor hop round trip", of: byTarget,
            goals: ["p50": .ratioAtMost(1, against: .nio)])
    }

    private func measure(_ targets: [any HopTarget]) async -> [Latencies] {
        var latencies = Array(repeating: Latencies(), count: targets.count)
        for target in targets {
            for _ in 0..<warmup { _ = await hop(target) }
        }
        for round in 0..<rounds {
            Progress.shared.round(round, of: rounds, "\(samplesPerRound) hops per actor")
            for n in 0..<samplesPerRound {
                for i in rotated(Array(targets.indices), by: round + n) {
                    latencies[i].record(await hop(targets[i]))
                }
            }
        }
        return latencies
    }

    /// One round trip: pause (blocking this pool thread, on purpose), then clock → `await
    /// target.ping()` → clock, in ns.
    private func hop(_ target: any HopTarget) async -> UInt64 {
        pause(ns: pauseNs)
        let start = nowNs()
        await target.ping()
        return nowNs() &- start
    }
}

/// What a hop goes to: an actor with one empty isolated method.
protocol HopTarget: Actor {
    func ping()
}

/// A default actor: its jobs run on the Swift runtime's global concurrent executor.
actor PlainActor: HopTarget {
    private var pings = 0

    /// Touches the actor's state, so the compiler cannot drop the hop.
    func ping() { pings &+= 1 }
}

#if canImport(RunLoopKit)
/// An actor pinned to a run-loop thread, as `EvRunLoopExecutor`'s documentation shows.
actor LoopPinnedActor: HopTarget {
    let executor: EvRunLoopExecutor

    init(_ executor: EvRunLoopExecutor) {
        self.executor = executor
    }

    nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }

    private var pings = 0

    /// Touches the actor's state, so the compiler cannot drop the hop.
    func ping() { pings &+= 1 }
}
#endif
