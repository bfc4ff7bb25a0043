import Foundation
import RunLoopKit
import Testing

/// R1–R10: one loop per thread, the main loop, teardown at thread exit, thread safety, modes.
/// R5 and R10 (and running a dead loop, R4) stop the process: they are exit tests in
/// BadInputTests.swift.
@Suite struct ThreadAndModeRuleTests {
    // MARK: Threads

    @Test func R1_aThreadAskingAgainGetsTheSameLoop() {
        let (first, second, throwing) = onLoopThread { loop in
            (loop, EvRunLoop.current, try? EvRunLoop.forCurrentThread())
        }
        #expect(first === second)
        #expect(throwing === first)
    }

    @Test func R1_eachThreadHasItsOwnLoop() {
        // Two threads alive at the same time.
        let release = Latch()
        let first = startLoopThread { _ in release.wait() }
        let second = startLoopThread { _ in release.wait() }
        #expect(first.loop !== second.loop)
        release.open()
        release.open()
        #expect(first.finished.wait())
        #expect(second.finished.wait())
    }

    // R2 (the main loop, one object from every thread) is checked in MainThreadTests: this test
    // process's main thread belongs to libdispatch, where EvRunLoop.main stops with a message.

    @Test func R3_aThreadThatNeverAsksHasNoLoop() async {
        // Descriptors are process-wide and other tests run in parallel: count in a process of its own.
        await #expect(processExitsWith: .success) {
            DescriptorSnapshot.settleLibdispatch()
            let before = DescriptorSnapshot.take()
            let whileAlive = Box<[Int32: String]?>(nil)
            let quiet = JoinableTestThread { whileAlive.set(DescriptorSnapshot.take().opened(since: before)) }
            #expect(quiet.join())
            #expect(whileAlive.get == [:], "a thread that never asked for its loop opened descriptors")

            // The loop's descriptors are found positively, while it lives: a number closed
            // meanwhile and reused by the loop would not look new.
            let afterAsking = Box<(owned: [Int32: String], opened: [Int32: String])?>(nil)
            let asking = JoinableTestThread {
                _ = EvRunLoop.current
                let snapshot = DescriptorSnapshot.take()
                afterAsking.set((snapshot.runLoopOwned, snapshot.opened(since: before)))
            }
            #expect(asking.join())
            let owned = afterAsking.get?.owned ?? [:]
            let opened = afterAsking.get?.opened ?? [:]
            #expect(isExactlyOneRunLoopsDescriptors(owned, timerfd: false), "asking creates the loop: \(owned)")
            #expect(Set(opened.keys).isSubset(of: owned.keys), "asking opened more than the loop's descriptors: \(opened)")
            let left = DescriptorSnapshot.take().opened(since: before)
            #expect(left.isEmpty, "the exited thread's loop left descriptors open: \(left)")
        }
    }

    /// R4, R36: at thread exit, every source still bound gets its cancel callouts, whatever the
    /// order sources were added and removed in (the loop keeps its first bound source apart from
    /// the others: here the first leaves, and a later one takes its place), and sources that left
    /// get none.
    @Test func R4_threadExitCancelsEverySourceStillBoundAndNoOther() {
        let cancels = EventLog<String>()
        @Sendable func source(_ name: String) -> EvSource {
            EvSource(cancel: { _, mode in cancels.append("\(name) \(mode.name)") }, perform: {})
        }
        let (a, b, c, d) = (source("a"), source("b"), source("c"), source("d"))
        let other = EvRunLoop.Mode("r4.bound")
        let releasedOnRemoval = Box(false)
        let thread = JoinableTestThread {
            let loop = EvRunLoop.current
            loop.add(a, forMode: .default)
            loop.add(b, forMode: .default)
            loop.add(c, forMode: .default)
            loop.remove(a, forMode: .default)  // the first bound source leaves
            loop.add(d, forMode: other)  // and a later one is bound in its place
            loop.remove(b, forMode: .default)
            loop.add(b, forMode: other)  // unbound, then bound again
            c.invalidate()
            loop.add(a, forMode: other)  // the first one bound again
            // A source that leaves is no longer held by the loop.
            weak var released: EvSource?
            do {
                let e = source("e")
                released = e
                loop.add(e, forMode: .default)
                loop.remove(e, forMode: .default)
            }
            releasedOnRemoval.set(released == nil)
        }
        #expect(thread.join())
        #expect(releasedOnRemoval.get)
        #expect(cancels.count == 7)
        #expect(Set(cancels.all) == ["a kCFRunLoopDefaultMode", "b kCFRunLoopDefaultMode", "c kCFRunLoopDefaultMode",
                                     "e kCFRunLoopDefaultMode", "a r4.bound", "b r4.bound", "d r4.bound"])
    }

    @Test func R4_threadExitCancelsItsSourcesAndReleasesItsItems() {
        let cancels = EventLog<(sameLoop: Bool, mode: EvRunLoop.Mode)>()
        let loopBox = Box<EvRunLoop?>(nil)
        let source = EvSource(cancel: { loop, mode in cancels.append((loop === loopBox.get, mode)) }, perform: {})
        let timer = keepAliveTimer()
        let observer = EvObserver(activities: .entry) { _, _ in }
        let ranBeforeExit = Box<EvRunLoop.RunResult?>(nil)
        let thread = JoinableTestThread {
            let loop = EvRunLoop.current
            loopBox.set(loop)
            loop.add(source, forMode: .default)
            loop.add(source, forMode: EvRunLoop.Mode("r4"))
            loop.add(timer, forMode: .common)
            loop.add(observer, forMode: EvRunLoop.Mode("r4"))
            ranBeforeExit.set(loop.run(mode: .default, timeout: .zero))
        }
        #expect(thread.join())
        #expect(ranBeforeExit.get == .timedOut)
        let dead = loopBox.get!

        #expect(cancels.count == 2)
        #expect(cancels.all.allSatisfy { $0.sameLoop })
        #expect(Set(cancels.all.map(\.mode)) == [.default, EvRunLoop.Mode("r4")])
        #expect(!dead.contains(source, forMode: .default))
        #expect(!dead.contains(timer, forMode: .common))
        #expect(!dead.contains(observer, forMode: EvRunLoop.Mode("r4")))
        #expect(source.isValid && timer.isValid && observer.isValid)

        // The items are free: another loop takes them without complaint (R39, R53) and they work.
        let (fired, entered, scheduled) = onLoopThread { loop -> (Bool, Bool, Bool) in
            let entered = Box(false)
            let scheduled = Box(false)
            let other = EvObserver(activities: .entry) { _, _ in entered.set(true) }
            timer.fireDate = .now
            loop.add(timer, forMode: .default)
            loop.add(observer, forMode: .default)
            loop.add(other, forMode: .default)
            loop.add(EvSource(schedule: { _, _ in scheduled.set(true) }, perform: {}), forMode: .default)
            loop.add(source, forMode: .default)
            _ = loop.run(mode: .default, timeout: .zero)
            return (!timer.isValid, entered.get, loop.contains(source, forMode: .default) && scheduled.get)
        }
        #expect(fired, "the one-shot timer fired in its new loop")
        #expect(entered)
        #expect(scheduled)
    }

    @Test func R4_usingADeadLoopIsHarmless() {
        let loopBox = Box<EvRunLoop?>(nil)
        let thread = JoinableTestThread { loopBox.set(EvRunLoop.current) }
        #expect(thread.join())
        let dead = loopBox.get!
        let mode = EvRunLoop.Mode("late")

        let schedules = EventLog<EvRunLoop.Mode>()
        let source = EvSource(schedule: { _, mode in schedules.append(mode) }, perform: {})
        let timer = EvTimer(after: .zero) { _ in }
        let observer = EvObserver(activities: .allActivities) { _, _ in }
        for target in [mode, .common] {
            dead.add(source, forMode: target)
            dead.add(timer, forMode: target)
            dead.add(observer, forMode: target)
        }
        dead.addCommonMode(EvRunLoop.Mode("later"))
        dead.perform(inModes: [.common]) {}
        source.signal()
        dead.wakeUp()
        dead.stop()

        #expect(schedules.count == 0)
        #expect(!dead.contains(source, forMode: mode) && !dead.contains(source, forMode: .common))
        #expect(!dead.contains(timer, forMode: mode) && !dead.contains(timer, forMode: .common))
        #expect(!dead.contains(observer, forMode: mode) && !dead.contains(observer, forMode: .common))
        #expect(dead.allModes == [.default])
        #expect(dead.currentMode == nil)
        #expect(!dead.isWaiting)
        // Nothing was bound to the dead loop: a live loop takes every item.
        let works = onLoopThread { loop -> Bool in
            loop.add(source, forMode: .default)
            loop.add(timer, forMode: .default)
            loop.add(observer, forMode: .default)
            return loop.run(mode: .default, timeout: .zero, returnAfterSourceHandled: true) == .handledSource
                && !timer.isValid
        }
        #expect(works)
    }

    @Test func R6_itemsBlocksWakeUpAndStopWorkFromAnotherThread() {
        let log = EventLog<String>()
        let onLoop = EventLog<Bool>()
        let result = onLoopThread { loop -> EvRunLoop.RunResult in
            loop.add(keepAliveTimer(), forMode: .default)
            let entered = Latch()
            loop.add(EvObserver(activities: .entry, repeats: false) { _, _ in entered.open() }, forMode: .default)
            let helper = Thread {
                entered.wait()
                let step = Latch()
                let source = EvSource(
                    cancel: { _, _ in log.append("cancel") },
                    perform: {
                        onLoop.append(EvRunLoop.current === loop)
                        log.append("source")
                        step.open()
                    })
                loop.add(source, forMode: .default)
                source.signal()
                loop.wakeUp()
                step.wait()
                loop.remove(source, forMode: .default)
                loop.perform(inModes: [.default]) {
                    onLoop.append(EvRunLoop.current === loop)
                    log.append("block")
                    step.open()
                }
                loop.wakeUp()
                step.wait()
                loop.add(EvTimer(after: .zero) { _ in
                    onLoop.append(EvRunLoop.current === loop)
                    log.append("timer")
                    step.open()
                }, forMode: .default)
                loop.wakeUp()
                step.wait()
                loop.stop()
            }
            helper.start()
            return loop.run(mode: .default, timeout: .seconds(30))
        }
        #expect(result == .stopped)
        #expect(log.all == ["source", "cancel", "block", "timer"])
        #expect(onLoop.all == [true, true, true])
    }

    @Test func R6_manyThreadsAddSignalAndPerformConcurrently() {
        let threads = 4
        let perThread = 250
        let total = threads * perThread
        let performed = Box(0)
        let blocks = Box(0)
        let cancels = Box(0)
        let result = onLoopThread { loop -> EvRunLoop.RunResult in
            loop.add(keepAliveTimer(), forMode: .default)
            let finishIfDone: @Sendable () -> Void = {
                if performed.get == total, blocks.get == total { loop.stop() }
            }
            for _ in 0..<threads {
                Thread {
                    for _ in 0..<perThread {
                        let source = EvSource(order: 0, cancel: { _, _ in cancels.update { $0 += 1 } }, perform: {})
                        let counted = EvSource(perform: {
                            performed.update { $0 += 1 }
                            finishIfDone()
                        })
                        loop.add(source, forMode: .default)
                        loop.add(counted, forMode: EvRunLoop.Mode("side"))
                        loop.add(counted, forMode: .default)
                        counted.signal()
                        loop.perform(inModes: [.default]) {
                            blocks.update { $0 += 1 }
                            finishIfDone()
                        }
                        loop.remove(source, forMode: .default)
                        loop.wakeUp()
                    }
                }.start()
            }
            return loop.run(mode: .default, timeout: .seconds(60))
        }
        #expect(result == .stopped)
        #expect(performed.get == total)
        #expect(blocks.get == total)
        #expect(cancels.get == total)
    }

    // MARK: Modes

    @Test func R7_aModeIsIdentifiedByItsName() {
        #expect(EvRunLoop.Mode("tracking") == EvRunLoop.Mode("tracking"))
        #expect(EvRunLoop.Mode("tracking").hashValue == EvRunLoop.Mode("tracking").hashValue)
        #expect(EvRunLoop.Mode("tracking") != EvRunLoop.Mode("Tracking"))
        let found = onLoopThread { loop -> Bool in
            let timer = keepAliveTimer()
            loop.add(timer, forMode: EvRunLoop.Mode("tracking"))
            return loop.contains(timer, forMode: EvRunLoop.Mode("tracking"))
                && loop.allModes.filter { $0.name == "tracking" }.count == 1
        }
        #expect(found)
    }

    /// R7 as CF compares names: literally. "é" composed and decomposed are two modes there, as
    /// in CF, though Swift's `String` calls them equal. Before, they were one mode.
    @Test func R7_namesThatDifferOnlyInTheirUnicodeSpellingAreTwoModes() {
        let composed = EvRunLoop.Mode("mode-\u{e9}"), decomposed = EvRunLoop.Mode("mode-e\u{301}")
        #expect(composed != decomposed)
        #expect(Array(decomposed.name.unicodeScalars).count == 7)
        let runsTheOther = onLoopThread { loop -> Bool in
            loop.add(keepAliveTimer(), forMode: composed)
            return loop.run(mode: decomposed, before: .now)  // an empty mode: nothing to run
        }
        #expect(!runsTheOther)
    }

    /// R7 as CF has it (C10): making a mode common creates it only once a common item joins it.
    @Test func R7_C10_aModeExistsOnceAnItemIsAddedNotWhenMadeCommonAlone() {
        let (neverRun, modes) = onLoopThread { loop -> (EvRunLoop.RunResult, [[EvRunLoop.Mode]]) in
            var seen = [loop.allModes]
            // Running, removing and asking do not create a mode.
            let neverRun = loop.run(mode: EvRunLoop.Mode("never"), timeout: .seconds(30))
            let source = EvSource {}
            loop.remove(source, forMode: EvRunLoop.Mode("removed"))
            _ = loop.contains(source, forMode: EvRunLoop.Mode("asked"))
            seen.append(loop.allModes)
            loop.add(keepAliveTimer(), forMode: EvRunLoop.Mode("timer"))
            loop.add(source, forMode: EvRunLoop.Mode("source"))
            loop.add(EvObserver(activities: .entry) { _, _ in }, forMode: EvRunLoop.Mode("observer"))
            loop.addCommonMode(EvRunLoop.Mode("common"))
            seen.append(loop.allModes)
            loop.add(EvObserver(activities: .entry) { _, _ in }, forMode: .common)
            seen.append(loop.allModes)
            return (neverRun, seen)
        }
        #expect(neverRun == .finished)
        #expect(modes[0] == [.default])
        #expect(modes[1] == [.default])
        #expect(Set(modes[2]) == Set(["timer", "source", "observer"].map(EvRunLoop.Mode.init) + [.default]))
        #expect(Set(modes[3]) == Set(["timer", "source", "observer", "common"].map(EvRunLoop.Mode.init) + [.default]))
    }

    @Test func R8_allModesListsEveryModeAndAlwaysTheDefaultMode() {
        let modes = onLoopThread { loop -> [[EvRunLoop.Mode]] in
            var seen = [loop.allModes]
            let timer = keepAliveTimer()
            loop.add(timer, forMode: EvRunLoop.Mode("a"))
            loop.add(timer, forMode: EvRunLoop.Mode("b"))
            loop.addCommonMode(EvRunLoop.Mode("c"))
            seen.append(loop.allModes)
            // CF never deletes a mode: it stays listed once its items are gone.
            timer.invalidate()
            seen.append(loop.allModes)
            return seen
        }
        #expect(modes[0] == [.default])
        #expect(modes[1].count == 3)
        // C10: "c", made common with no common item, does not exist yet.
        #expect(Set(modes[1]) == [.default, EvRunLoop.Mode("a"), EvRunLoop.Mode("b")])
        #expect(modes[1].contains(.default))
        #expect(!modes[1].contains(.common), "the pseudo-mode is not a mode of the loop")
        #expect(Set(modes[2]) == Set(modes[1]))
    }

    @Test func R9_currentModeIsTheInnermostRunsModeAndNilOutsideRuns() {
        let inner = EvRunLoop.Mode("inner")
        let seen = EventLog<String>()
        let (before, after) = onLoopThread { loop -> (EvRunLoop.Mode?, EvRunLoop.Mode?) in
            let record: @Sendable (String) -> Void = { label in seen.append("\(label):\(loop.currentMode?.name ?? "nil")") }
            loop.add(EvObserver(activities: [.entry, .exit]) { _, activity in record("\(activity)") }, forMode: .default)
            loop.add(keepAliveTimer(), forMode: inner)
            loop.add(EvObserver(activities: .beforeSources) { _, _ in record("nested") }, forMode: inner)
            loop.add(EvTimer(after: .zero) { _ in
                record("timer")
                seen.append("nested result:\(loop.run(mode: inner, timeout: .zero))")
                record("restored")
            }, forMode: .default)
            let before = loop.currentMode
            seen.append("result:\(loop.run(mode: .default, timeout: .seconds(30)))")
            return (before, loop.currentMode)
        }
        #expect(before == nil)
        #expect(after == nil)
        #expect(seen.all == [
            "entry:kCFRunLoopDefaultMode", "timer:kCFRunLoopDefaultMode", "nested:inner", "nested result:timedOut",
            "restored:kCFRunLoopDefaultMode", "exit:kCFRunLoopDefaultMode", "result:finished",
        ])
    }
}
