import Foundation
import RunLoopKit
import Testing
import TestSupport

/// An ``EvFrameTicker`` paused and resumed from another thread while its ticks run on the loop's
/// thread: each re-dates the ticker's timer, maybe while a tick is under way.
@Suite struct FrameTickerResumeRaceTests {
    @Test func pausingAndResumingFromAnotherThreadNeverDeliversAFrameEarlyOrTwice() {
        let frames = EventLog<EvFrameTicker.Frame>()
        let result = onLoopThread { loop -> EvRunLoop.RunResult in
            let ticker = EvFrameTicker(interval: .microseconds(50)) { frame in frames.append(frame) }
            try? ticker.add(to: loop, forModes: [.default])
            let toggler = spawnThread(named: "ticker-toggler") {
                // Bounded in time too: on a busy machine (the whole suite, a sanitizer) the rounds
                // would hold a thread of the test pool for many seconds.
                let end = ContinuousClock.now + .seconds(1)
                for round in 0..<5_000 where ContinuousClock.now < end {
                    ticker.isPaused = true
                    ticker.isPaused = false
                    // Resumed for a varying part of a frame, so that some ticks meet the next toggle.
                    let until = ContinuousClock.now + .nanoseconds((round &* 7_919) % 60_000)
                    while ContinuousClock.now < until {}
                }
                ticker.invalidate()
                loop.wakeUp()  // invalidating from another thread does not wake the loop by itself
            }
            // The ticker's timer is the mode's only content: invalidated, the run finishes (R16).
            let result = loop.run(mode: .default, timeout: .seconds(60))
            pthread_join(toggler, nil)
            return result
        }
        #expect(result == .finished)
        let all = frames.all
        #expect(!all.isEmpty)
        let early = all.filter { $0.callbackTime < $0.timestamp }
        #expect(early.count == 0, "\(early.count) of \(all.count) frames came before their slot, the first \(early.first.map { "\($0.index)" } ?? "")")
        let repeated = zip(all, all.dropFirst()).count { $1.index <= $0.index }
        #expect(repeated == 0, "\(repeated) of \(all.count) frames did not come after the one before")
    }
}
