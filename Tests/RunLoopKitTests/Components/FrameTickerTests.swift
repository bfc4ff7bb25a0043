import Foundation
import RunLoopKit
import Testing

private let tracking = EvRunLoop.Mode("UITrackingRunLoopMode")
private let frameInterval = Duration.milliseconds(2)

/// Spins (does not sleep) until the clock has passed `instant`: a deterministic way to make a
/// callback overrun frames.
private func busyWait(until instant: ContinuousClock.Instant) {
    while ContinuousClock.now < instant {}
}

/// EvFrameTicker: a display-link-like frame clock on a run loop.
@Suite struct FrameTickerTests {
    @Test func theGridPutsFrameKAtStartPlusKIntervalsAndFloorsBetweenThem() {
        let start = ContinuousClock.now
        let grid = EvFrameTicker.Grid(start: start, interval: .milliseconds(10))
        #expect(grid.frameIndex(at: start) == 0)
        #expect(grid.frameIndex(at: start + .nanoseconds(9_999_999)) == 0)
        #expect(grid.frameIndex(at: start + .milliseconds(10)) == 1)
        #expect(grid.frameIndex(at: start + .milliseconds(35)) == 3)
        #expect(grid.frameIndex(at: start - .nanoseconds(1)) == -1)
        #expect(grid.frameIndex(at: start - .milliseconds(10)) == -1)
        #expect(grid.time(ofFrame: 3) == start + .milliseconds(30))
        #expect(EvFrameTicker(framesPerSecond: 60) { _ in }.interval == .nanoseconds(16_666_666))
        #expect(EvFrameTicker(framesPerSecond: 120) { _ in }.interval == .nanoseconds(8_333_333))
    }

    @Test func framesComeInGridOrderAndEverySlotIsDeliveredOrCountedAsDropped() {
        let (frames, result, statistics, grid) = onLoopThread { loop in
            let frames = EventLog<EvFrameTicker.Frame>()
            let holder = Box<EvFrameTicker?>(nil)
            let ticker = EvFrameTicker(interval: frameInterval) { frame in
                frames.append(frame)
                if frame.totalFrames == 20 { holder.get?.invalidate() }
            }
            holder.set(ticker)
            defer { holder.set(nil) }
            try? ticker.add(to: loop, forModes: [.default])
            // Once invalidated, the ticker's timer was the mode's only content (R16).
            let result = loop.run(mode: .default, timeout: .seconds(30))
            return (frames.all, result, ticker.statistics, ticker.grid)
        }
        #expect(result == .finished)
        #expect(frames.count == 20)
        var previous: Int64 = 0
        var dropped = 0
        for (position, frame) in frames.enumerated() {
            #expect(frame.index > previous)
            #expect(frame.droppedFrames == Int(frame.index - previous - 1))
            dropped += frame.droppedFrames
            #expect(frame.totalFrames == position + 1)
            #expect(frame.totalDroppedFrames == dropped)
            #expect(frame.timestamp == grid?.time(ofFrame: frame.index))
            #expect(frame.targetTimestamp == grid?.time(ofFrame: frame.index + 1))
            #expect(frame.callbackTime >= frame.timestamp)  // never before its slot (R46)
            previous = frame.index
        }
        // Every slot up to the last frame was delivered or dropped, none twice.
        #expect(frames.count + dropped == Int(previous))
        #expect(statistics.framesDelivered == frames.count)
        #expect(statistics.framesDropped == dropped)
    }

    @Test func aCallbackThatOverrunsThreeFramesMakesTheNextReportThemDropped() {
        let frames = onLoopThread { loop -> [EvFrameTicker.Frame] in
            let frames = EventLog<EvFrameTicker.Frame>()
            let holder = Box<EvFrameTicker?>(nil)
            let ticker = EvFrameTicker(interval: frameInterval) { frame in
                frames.append(frame)
                if frames.count == 1, let grid = holder.get?.grid {
                    // Overrun: return only after frames index+1 … index+3 were due, and half of +4.
                    busyWait(until: grid.time(ofFrame: frame.index + 3) + frameInterval / 2)
                } else if frames.count == 2 {
                    holder.get?.invalidate()
                }
            }
            holder.set(ticker)
            try? ticker.add(to: loop, forModes: [.default])
            loop.run(mode: .default, timeout: .seconds(30))
            holder.set(nil)
            return frames.all
        }
        #expect(frames.count == 2)
        if frames.count == 2 {
            // The timer's next slot is strictly after the overrun (R42): index+4 at the earliest.
            #expect(frames[1].index >= frames[0].index + 4)
            #expect(frames[1].droppedFrames >= 3)
            #expect(frames[1].droppedFrames == Int(frames[1].index - frames[0].index - 1))
        }
    }

    @Test func framesPerSecondIsDeliveredFramesOverTheWindowsGridTime() {
        let window = frameInterval * 10
        let frames = onLoopThread { loop -> [EvFrameTicker.Frame] in
            let frames = EventLog<EvFrameTicker.Frame>()
            let holder = Box<EvFrameTicker?>(nil)
            let ticker = EvFrameTicker(interval: frameInterval, measurementWindow: window) { frame in
                frames.append(frame)
                if frame.framesPerSecond != nil { holder.get?.invalidate() }
            }
            holder.set(ticker)
            try? ticker.add(to: loop, forModes: [.default])
            loop.run(mode: .default, timeout: .seconds(30))
            holder.set(nil)
            return frames.all
        }
        guard let last = frames.last, let fps = last.framesPerSecond else {
            Issue.record("no window completed")
            return
        }
        #expect(frames.dropLast().allSatisfy { $0.framesPerSecond == nil })
        // The first window runs from frame 0 to the first frame at least 10 slots later.
        #expect(last.index >= 10)
        #expect(frames.dropLast().allSatisfy { $0.index < 10 })
        let expected = Double(frames.count) / (Double(last.index) * 0.002)
        #expect(abs(fps - expected) < 1e-6)
        #expect(fps <= 500 + 1e-6)  // never more than the nominal rate
    }

    @Test func aDefaultModeTickerStopsDuringTrackingAndCountsTheMissedFramesAsDropped() {
        let log = onLoopThread { loop -> [String] in
            let log = EventLog<String>()
            let frames = EventLog<EvFrameTicker.Frame>()
            let holder = Box<EvFrameTicker?>(nil)
            loop.addCommonMode(tracking)
            let ticker = EvFrameTicker(interval: frameInterval) { frame in
                frames.append(frame)
                holder.get?.invalidate()
            }
            holder.set(ticker)
            try? ticker.add(to: loop, forModes: [.default])
            loop.add(EvTimer(after: frameInterval * 10) { _ in log.append("tracking timer, frames so far \(frames.count)") }, forMode: tracking)
            log.append("tracking: \(loop.run(mode: tracking, timeout: .seconds(30)))")
            log.append("default: \(loop.run(mode: .default, timeout: .seconds(30)))")
            // R41: the frames due during tracking are reported once default runs again.
            if let frame = frames.all.first { log.append("first frame dropped at least 9: \(frame.droppedFrames >= 9)") }
            holder.set(nil)
            return log.all
        }
        #expect(log == [
            "tracking timer, frames so far 0", "tracking: finished", "default: finished",
            "first frame dropped at least 9: true",
        ])
    }

    @Test func aCommonModesTickerTicksDuringTracking() {
        let count = onLoopThread { loop -> Int in
            let frames = EventLog<EvFrameTicker.Frame>()
            let holder = Box<EvFrameTicker?>(nil)
            loop.addCommonMode(tracking)
            let ticker = EvFrameTicker(interval: frameInterval) { frame in
                frames.append(frame)
                if frames.count == 3 { holder.get?.invalidate() }
            }
            holder.set(ticker)
            try? ticker.add(to: loop, forModes: [.common])
            loop.run(mode: tracking, timeout: .seconds(30))
            holder.set(nil)
            return frames.count
        }
        #expect(count == 3)
    }

    @Test func framesDueWhilePausedAreNotCountedAsDropped() {
        let outcome = onLoopThread { loop -> (pausedAt: Int64, resumedAt: Int64, frames: [EvFrameTicker.Frame], during: Int) in
            let frames = EventLog<EvFrameTicker.Frame>()
            let holder = Box<EvFrameTicker?>(nil)
            let marks = Box<(paused: Int64, resumed: Int64, framesAtResume: Int)>((0, 0, 0))
            let ticker = EvFrameTicker(interval: frameInterval) { frame in
                frames.append(frame)
                guard let ticker = holder.get else { return }
                if frames.count == 2 {
                    ticker.isPaused = true
                    marks.update { $0.paused = frame.index }
                    loop.add(EvTimer(after: frameInterval * 10) { _ in
                        // Resuming reads the clock itself: this frame index is the one it resumed
                        // at only if no frame boundary passed between the readings, so it resumes
                        // again (paused first) until none did.
                        var resumed: Int64
                        var before: Int64
                        repeat {
                            ticker.isPaused = true
                            before = ticker.grid?.frameIndex(at: .now) ?? -1
                            ticker.isPaused = false
                            resumed = ticker.grid?.frameIndex(at: .now) ?? -1
                        } while resumed != before
                        let resumedAt = resumed
                        marks.update { $0 = ($0.paused, resumedAt, frames.count) }
                    }, forMode: .default)
                } else if frames.count == 3 {
                    ticker.invalidate()
                }
            }
            holder.set(ticker)
            try? ticker.add(to: loop, forModes: [.default])
            loop.run(mode: .default, timeout: .seconds(30))
            holder.set(nil)
            return (marks.get.paused, marks.get.resumed, frames.all, marks.get.framesAtResume)
        }
        #expect(outcome.frames.count == 3)
        #expect(outcome.during == 2)  // nothing delivered while paused
        if outcome.frames.count == 3 {
            let afterResume = outcome.frames[2]
            #expect(outcome.resumedAt >= outcome.pausedAt + 10)
            #expect(afterResume.index > outcome.resumedAt)
            #expect(afterResume.droppedFrames == Int(afterResume.index - outcome.resumedAt - 1))
        }
    }

    @Test func aTickerAddedPausedStartsOnResume() {
        let outcome = onLoopThread { loop -> (framesAtResume: Int, resumedAt: Int64, firstFrame: EvFrameTicker.Frame?) in
            let frames = EventLog<EvFrameTicker.Frame>()
            let holder = Box<EvFrameTicker?>(nil)
            let resume = Box<(frames: Int, index: Int64)>((-1, -1))
            let ticker = EvFrameTicker(interval: frameInterval) { frame in
                frames.append(frame)
                holder.get?.invalidate()
            }
            holder.set(ticker)
            ticker.isPaused = true
            try? ticker.add(to: loop, forModes: [.default])
            loop.add(EvTimer(after: frameInterval * 10) { _ in
                resume.set((frames.count, ticker.grid?.frameIndex(at: .now) ?? -1))
                ticker.isPaused = false
            }, forMode: .default)
            loop.run(mode: .default, timeout: .seconds(30))
            holder.set(nil)
            return (resume.get.frames, resume.get.index, frames.all.first)
        }
        #expect(outcome.framesAtResume == 0)
        #expect(outcome.resumedAt >= 10)
        guard let first = outcome.firstFrame else {
            Issue.record("no frame after resume")
            return
        }
        #expect(first.index > outcome.resumedAt)
        #expect(first.droppedFrames == Int(first.index - outcome.resumedAt - 1))
    }

    @Test func droppingTheLastReferenceInvalidatesTheTicker() {
        let (count, result) = onLoopThread { loop -> (Int, EvRunLoop.RunResult) in
            let frames = EventLog<Int64>()
            let holder = Box<EvFrameTicker?>(nil)
            holder.set(EvFrameTicker(interval: frameInterval) { frame in
                frames.append(frame.index)
                if frames.count == 3 { holder.set(nil) }  // the last reference
            })
            try? holder.get?.add(to: loop, forModes: [.default])
            let result = loop.run(mode: .default, timeout: .seconds(30))
            return (frames.count, result)
        }
        #expect(count == 3)
        #expect(result == .finished)  // the timer left the mode with the ticker
    }

    @Test func addingToALoopWhoseThreadExitedThrows() {
        let tornDown = Latch()
        let loop = onLoopThread { loop in
            loop.add(EvSource(cancel: { _, _ in tornDown.open() }) {}, forMode: .default)
            return loop
        }
        #expect(tornDown.wait())
        let ticker = EvFrameTicker(framesPerSecond: 60) { _ in }
        #expect(throws: EvFrameTickerError.loopExited) { try ticker.add(to: loop) }
        #expect(!ticker.isValid)
    }

    /// A ticker whose loop's thread exits neither ticks any more nor can be added again (its
    /// grid is set): it is no longer valid. Before, it still said it was.
    @Test func aTickerWhoseLoopsThreadExitedIsNoLongerValid() throws {
        let ticker = EvFrameTicker(interval: frameInterval) { _ in }
        let wasValid = onLoopThread { loop -> Bool in
            try? ticker.add(to: loop, forModes: [.default])
            loop.run(mode: .default, timeout: .zero)
            return ticker.isValid
        }
        #expect(wasValid)
        #expect(!ticker.isValid)  // the thread was joined: its loop is torn down (R4)
    }
}
