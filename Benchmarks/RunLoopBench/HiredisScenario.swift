import HiredisBench
import RedisServer

/// Scenario hiredis: round trips per second through hiredis's async client attached with its
/// own libev adapter (`redisLibevAttach`), on a RunLoopKit loop (an `EvLibevSource`) and on a
/// plain libev loop (`ev_loop_new` + `ev_run`), against one redis-server the scenario starts on
/// 127.0.0.1 and stops. Two loads: `pairs` SET/GET round trips sent at once (pipelined), and
/// `sequential` round trips each sent from the previous reply's callback. Each sample is a
/// fresh thread, loop and connection, on the loop CPU, as is the server (see `Pinning`);
/// samples alternate backends, several per round, and each figure is the median. Only
/// RunLoopKit and libev take part.
struct HiredisScenario {
    var rounds: Int
    var pipelined = 200_000
    var sequential = 10_000
    var samplesPerRound = 5

    func run(_ backends: [any Backend]) -> [Figure] {
        let ids = backends.map(\.id).filter { $0 == .runloopkit || $0 == .libev }
        guard !ids.isEmpty else { return [] }
        // Started from the loop CPU, whose affinity the server inherits: client and server take
        // turns on one CPU, so a round trip is two context switches, not two cross-CPU wake-ups
        // of a virtual machine's idle CPUs, which swing far more than either loop's cost.
        let started = Pinning.shared.asLoopThread { Result { try RedisServer.start() } }
        guard case .success(let server) = started else {
            log("hiredis: \(started); scenario skipped")
            return []
        }
        defer { server.stop() }
        for id in ids {
            for load in HiredisLoad.allCases { _ = measure(id, load, count: load == .pipelined ? pipelined / 4 : 500, port: server.port) }
        }
        var rates: [HiredisLoad: [BackendID: [Double]]] = [:]
        for round in 0..<rounds {
            Progress.shared.round(round, of: rounds, "\(pipelined) pipelined and \(sequential) sequential round trips per sample")
            for sample in 0..<samplesPerRound {
                for load in HiredisLoad.allCases {
                    for id in rotated(ids, by: round + sample) {
                        let count = load == .pipelined ? pipelined : sequential
                        rates[load, default: [:]][id, default: []].append(measure(id, load, count: count, port: server.port))
                    }
                }
            }
        }
        return HiredisLoad.allCases.map { load in
            var figure = Figure(
                id: "hiredis.\(load.rawValue).rate", scenario: "hiredis",
                label: "hiredis \(load.rawValue) round trips (median)", unit: "k/s", better: .higher,
                goal: .ratioAtLeast(0.95, against: .libev))
            for (id, values) in rates[load] ?? [:] { figure.values[id] = median(values) / 1e3 }
            return figure
        }
    }

    /// One sample on a fresh thread (pinned as loop threads are, see `Pinning`).
    private func measure(_ id: BackendID, _ load: HiredisLoad, count: Int, port: Int32) -> Double {
        BenchThread.run {
            hiredisRoundTrips(on: id == .runloopkit ? .runLoopKit : .libev, port: port, load: load, count: count) { nowNs() }
        }
    }
}
