import BenchLibev
import CCFRunLoop
import Foundation
#if canImport(RunLoopKit)
import RunLoopKit
#endif

/// `instructions.ready-descriptors.<N>`: one readiness handled among N descriptors that are all
/// ready at once (pipes holding a byte that no handler reads, so each stays ready), on the
/// loop's thread.
///
/// RunLoopKit handles one version-1 source per iteration (R38), the one ready longest: a run
/// that handles N readinesses, one per iteration, then stops. Raw libev runs every ready
/// watcher's callback in one `ev_run(EVRUN_ONCE)`, N readinesses. The growth figure (per
/// readiness at the largest N ÷ at the smallest) is near 1 while finding the next source costs
/// O(1); a version-1 step that looked at every ready source made it grow with N.
enum ReadyDescriptorsWorkload {
    /// Sets up `descriptors` ready pipes, then counts `count` handled readinesses (`count` is a
    /// multiple of `descriptors` for libev, which handles them all per iteration).
    static func run(backend: BackendID, descriptors: Int, count: Int) {
        var pipes: [[Int32]] = []
        raiseDescriptorLimit(to: 2 * descriptors + 256)
        for _ in 0..<descriptors {
            var ends: [Int32] = [0, 0]
            guard pipe(&ends) == 0 else { fatalError("pipe failed") }
            var byte: UInt8 = 1
            _ = write(ends[1], &byte, 1)
            pipes.append(ends)
        }
        defer { pipes.joined().forEach { close($0) } }
        switch backend {
        #if canImport(RunLoopKit)
        case .runloopkit:
            let loop = EvRunLoop.current
            let tally = Tally()
            let sources = pipes.map { ends in
                try! EvFileDescriptorSource(fileDescriptor: ends[0], events: .readable) { _ in
                    tally.handled += 1
                    if tally.handled == tally.target { loop.stop() }
                }
            }
            for source in sources { loop.add(source, forMode: .default) }
            defer { sources.forEach { $0.invalidate() } }
            // One run handles `descriptors` readinesses, one per iteration (R38), then stops.
            measure(count / descriptors + 1, perRound: 1) {
                tally.target = tally.handled + descriptors
                _ = loop.run(mode: .default, timeout: .seconds(60))
            }
        #endif
        case .libev:
            guard let loop = ev_loop_new(0) else { fatalError("ev_loop_new failed") }
            let watchers = pipes.map { ends -> UnsafeMutablePointer<ev_io> in
                let watcher = UnsafeMutablePointer<ev_io>.allocate(capacity: 1)
                clibev_io_init(watcher, { _, _, _ in }, ends[0], Int32(EV_READ))
                ev_io_start(loop, watcher)
                return watcher
            }
            defer {
                for watcher in watchers {
                    ev_io_stop(loop, watcher)
                    watcher.deallocate()
                }
                ev_loop_destroy(loop)
            }
            measure(count / descriptors + 1, perRound: 1) { _ = ev_run(loop, Int32(EVRUN_ONCE)) }
        default:
            fatalError("no descriptor sources on \(backend.rawValue)")
        }
    }

    /// Warms with one round (every descriptor handled once), then counts `rounds - 1` more.
    private static func measure(_ rounds: Int, perRound steps: Int, _ step: () -> Void) {
        for _ in 0..<steps { step() }
        bench_callgrind_start()
        for _ in 0..<(rounds - 1) * steps { step() }
        bench_callgrind_stop()
    }

    private static func raiseDescriptorLimit(to wanted: Int) {
        let resource = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
        var limit = rlimit()
        guard getrlimit(resource, &limit) == 0, limit.rlim_cur < rlim_t(wanted) else { return }
        limit.rlim_cur = min(limit.rlim_max, rlim_t(wanted))
        _ = setrlimit(resource, &limit)
    }
}

/// The readinesses a run handled, and after how many it stops (loop's thread only).
private final class Tally: @unchecked Sendable {
    var handled = 0
    var target = 0
}
