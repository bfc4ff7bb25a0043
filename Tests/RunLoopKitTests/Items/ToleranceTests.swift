import RunLoopKit
import Testing

@Suite struct ToleranceTests {
    /// R46: a timer with tolerance may fire late to share a wake-up with a later timer. A (due
    /// at +10 ms, 100 ms tolerance) and B (due at +40 ms, none) fire in one handling step after a
    /// single sleep, and neither fires before its fire date.
    @Test func R46_toleranceCoalescesTwoTimersIntoOneWakeUp() {
        let (log, wakeUps, early) = onLoopThread { loop -> ([String], Int, [String]) in
            let log = EventLog<String>()
            let early = EventLog<String>()
            let wakeUps = EventLog<Int>()
            let start = ContinuousClock.now
            let firstDue = start.advanced(by: .milliseconds(10))
            let secondDue = start.advanced(by: .milliseconds(40))
            let first = EvTimer(fireAt: firstDue, tolerance: .milliseconds(100)) { _ in
                log.append("A")
                if ContinuousClock.now < firstDue { early.append("A") }
            }
            let second = EvTimer(fireAt: secondDue) { _ in
                log.append("B")
                if ContinuousClock.now < secondDue { early.append("B") }
            }
            loop.add(first, forMode: .default)
            loop.add(second, forMode: .default)
            loop.add(EvObserver(activities: .afterWaiting) { _, _ in wakeUps.append(1) }, forMode: .default)
            _ = loop.run(mode: .default, timeout: .seconds(30))
            return (log.all, wakeUps.count, early.all)
        }
        #expect(log == ["A", "B"])
        #expect(wakeUps == 1)
        #expect(early.isEmpty)
    }
}
