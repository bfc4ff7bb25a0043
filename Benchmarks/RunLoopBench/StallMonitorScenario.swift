#if canImport(RunLoopKit)
import Glibc
import RunLoopKit
import Synchronization

/// The stall monitor, what it costs (RunLoopKit only; CF and libev have no monitor).
/// Busy: a loop whose source signals itself runs `iterations` iterations, without and with an
/// `EvStallMonitor` attached; ns per iteration and the difference. Idle: a loop asleep for
/// `idle`, with a monitor attached; the process's CPU time meanwhile minus the same without a
/// monitor, per second of sleep (the watchdog parks while the loop sleeps).
struct StallMonitorScenario {
    var iterations: Int
    var idle: Duration
    var rounds: Int

    func run(_ backends: [any Backend]) -> [Figure] {
        guard backends.contains(where: { $0.id == .runloopkit }) else { return [] }
        var plain: [Double] = []
        var monitored: [Double] = []
        var idleCost: [Double] = []
        for round in 0..<rounds {
            Progress.shared.round(round, of: rounds, "\(iterations) busy iterations, \(idle) idle")
            let order = round % 2 == 0 ? [false, true] : [true, false]
            for withMonitor in order {
                let ns = BenchThread.run { Self.busyLoop(iterations: iterations, monitored: withMonitor) }
                if withMonitor { monitored.append(ns) } else { plain.append(ns) }
            }
            let without = BenchThread.run { Self.idleLoop(idle, monitored: false) }
            let with = BenchThread.run { Self.idleLoop(idle, monitored: true) }
            idleCost.append(with - without)
        }
        var figures = [
            figure("stallmonitor.busy.plain", "busy loop iteration, no monitor", "ns", median(plain)),
            figure("stallmonitor.busy.monitored", "busy loop iteration, stall monitor attached", "ns", median(monitored)),
            figure("stallmonitor.busy.overhead", "stall monitor cost per busy iteration", "ns", median(monitored) - median(plain)),
        ]
        figures.append(figure("stallmonitor.idle.cpu", "stall monitor CPU on an idle loop", "µs/s", median(idleCost)))
        return figures
    }

    private func figure(_ id: String, _ label: String, _ unit: String, _ value: Double) -> Figure {
        var f = Figure(id: id, scenario: "stallmonitor", label: label, unit: unit, better: .lower)
        f.values[.runloopkit] = value
        f.noEquivalent = [.libev, .cf]
        return f
    }

    /// ns per iteration of a loop whose only work is a source that signals itself.
    private static func busyLoop(iterations: Int, monitored: Bool) -> Double {
        let loop = EvRunLoop.current
        let remaining = Atomic<Int>(iterations)
        let me = ResultSlot<EvSource>()
        let source = EvSource {
            if remaining.subtract(1, ordering: .relaxed).newValue > 0 { me.value?.signal() } else { EvRunLoop.current.stop() }
        }
        me.value = source
        loop.add(source, forMode: .default)
        let monitor = monitored ? EvStallMonitor(loop: loop) : nil
        try? monitor?.start()
        source.signal()
        let start = nowNs()
        _ = loop.run(mode: .default, timeout: nil)
        let elapsed = nowNs() - start
        monitor?.stop()
        source.invalidate()
        me.value = nil
        return Double(elapsed) / Double(iterations)
    }

    /// µs of the process's CPU time per second while a loop sleeps for `duration`.
    private static func idleLoop(_ duration: Duration, monitored: Bool) -> Double {
        let loop = EvRunLoop.current
        let keepAlive = EvMessagePort<Int> { _ in }
        loop.add(keepAlive, forMode: .default)
        let monitor = monitored ? EvStallMonitor(loop: loop) : nil
        try? monitor?.start()
        _ = loop.run(mode: .default, timeout: .zero)  // the monitor sees a first phase
        let before = processCPUMicroseconds()
        _ = loop.run(mode: .default, timeout: duration)
        let cpu = processCPUMicroseconds() - before
        monitor?.stop()
        keepAlive.invalidate()
        return cpu / (Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18)
    }

    private static func processCPUMicroseconds() -> Double {
        var usage = rusage()
        getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
        let user = Double(usage.ru_utime.tv_sec) * 1e6 + Double(usage.ru_utime.tv_usec)
        let system = Double(usage.ru_stime.tv_sec) * 1e6 + Double(usage.ru_stime.tv_usec)
        return user + system
    }
}
#endif
