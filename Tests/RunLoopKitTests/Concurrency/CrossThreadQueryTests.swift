import Foundation
import RunLoopKit
import Testing

/// C109, R6: the queries safe from any thread answer consistently while the loop's thread adds,
/// removes, fires and invalidates timers and switches modes.
@Suite struct CrossThreadQueryTests {
    static let rounds = 300

    /// Round `i` makes mode `q<i>`, runs it with a far timer (also in the default mode) and a due
    /// one whose handler invalidates the far timer and, every other round, runs the default mode
    /// nested. Another thread queries all along: never a mode made after what it last saw
    /// announced, never the date or membership of a far timer invalidated before it looked.
    @Test func R6_queriesFromAnotherThreadStayConsistentWhileTheLoopChangesItsTimersAndModes() {
        let made = Box(-1), invalidated = Box(-1), passes = Box(0), done = Box(false), quit = Box(false)
        let farTimers = Box<[EvTimer]>([]), results = Box<[EvRunLoop.RunResult]>([])
        let base = ContinuousClock.now + .seconds(1000)
        let (loop, finished) = startLoopThread { loop in
            for round in 0..<Self.rounds {
                let mode = EvRunLoop.Mode("q\(round)")
                let far = EvTimer(fireAt: base + .seconds(round)) { _ in }
                farTimers.update { $0.append(far) }
                made.set(round)  // announced before the mode exists
                loop.add(far, forMode: mode)
                loop.add(far, forMode: .default)
                let removed = EvTimer(after: .zero) { _ in }
                loop.add(removed, forMode: mode)
                loop.remove(removed, forMode: mode)
                loop.add(EvTimer(after: .zero) { _ in
                    far.invalidate()
                    invalidated.set(round)
                    // The other thread looks at least once with this timer gone.
                    let seen = passes.get
                    _ = spinUntil { passes.get >= seen + 2 || quit.get }
                    if round % 2 == 0 { _ = loop.run(mode: .default, timeout: .zero) }
                    loop.stop()
                }, forMode: mode)
                let result = loop.run(mode: mode, timeout: .seconds(30))
                results.update { $0.append(result) }
            }
            done.set(true)
        }
        var problems: [String] = []
        while !done.get && problems.count < 10 {
            // Invalidated before the queries: gone from their answers. Announced after: may be in them.
            let gone = invalidated.get
            let timers = farTimers.get
            let goneDates = Set(timers.prefix(gone + 1).map(\.fireDate))
            let current = loop.currentMode, modes = loop.allModes
            var looked: [EvRunLoop.Mode] = [.default]
            if gone >= 0 { looked.append(EvRunLoop.Mode("q\(gone)")) }
            for mode in looked {
                if let date = loop.nextTimerFireDate(forMode: mode), goneDates.contains(date) {
                    problems.append("nextTimerFireDate(\(mode.name)) is an invalidated timer's date")
                }
            }
            if gone >= 0 {
                let timer = timers[gone]
                if loop.contains(timer, forMode: .default) || loop.contains(timer, forMode: EvRunLoop.Mode("q\(gone)")) {
                    problems.append("contains answers true for invalidated timer \(gone)")
                }
            }
            _ = loop.isWaiting
            let newest = made.get
            func isKnown(_ mode: EvRunLoop.Mode) -> Bool {
                mode == .default || (mode.name.hasPrefix("q") && Int(mode.name.dropFirst()).map { $0 <= newest } == true)
            }
            if let current, !isKnown(current) { problems.append("currentMode \(current.name) (newest q\(newest))") }
            for mode in modes where !isKnown(mode) { problems.append("allModes has \(mode.name) (newest q\(newest))") }
            if modes.first != .default { problems.append("allModes does not start with the default mode") }
            passes.update { $0 += 1 }
        }
        quit.set(true)  // a failure above ends the loop thread's waits too
        #expect(finished.wait())
        #expect(problems.isEmpty, "\(problems)")
        #expect(results.get.count == Self.rounds)
        #expect(results.get.allSatisfy { $0 == .stopped })
    }
}
