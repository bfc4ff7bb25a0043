import Foundation
import RunLoopKit
import Testing

/// Observers, R48–R53.
@Suite struct ObserverRuleTests {
    private static let other = EvRunLoop.Mode("rules-b.observers.other")

    // MARK: R48

    @Test func R48_observerIsCalledForTheActivitiesInItsMaskInItsModesOnly() {
        let (masked, elsewhere, selfPassed) = onLoopThread { loop -> ([String], [String], Bool) in
            let masked = EventLog<String>()
            let elsewhere = EventLog<String>()
            let selfPassed = Box(true)
            let box = Box<EvObserver?>(nil)
            defer { box.set(nil) }  // the item's closure holds this box: break the cycle
            let observer = EvObserver(activities: [.entry, .beforeWaiting, .exit]) { observer, activity in
                if observer !== box.get { selfPassed.set(false) }
                masked.append(activity.description)
            }
            box.set(observer)
            loop.add(observer, forMode: .default)
            loop.add(EvObserver(activities: .allActivities) { _, activity in elsewhere.append(activity.description) }, forMode: Self.other)
            // Sleeps once, is woken by the timer, then finds the mode empty.
            loop.add(EvTimer(after: .milliseconds(1)) { _ in masked.append("timer") }, forMode: .default)
            loop.run(mode: .default, timeout: .seconds(30))
            return (masked.all, elsewhere.all, selfPassed.get)
        }
        #expect(masked == ["entry", "beforeWaiting", "timer", "exit"])
        #expect(elsewhere.isEmpty)
        #expect(selfPassed)
    }

    // MARK: R49

    @Test func R49_observersAreCalledInAscendingOrderThenInTheOrderAdded() {
        let log = onLoopThread { loop -> [String] in
            let log = EventLog<String>()
            for (name, order) in [("a", 2), ("b", 0), ("c", 1), ("d", 0), ("e", -5)] {
                loop.add(EvObserver(activities: .entry, order: order) { _, _ in log.append(name) }, forMode: .default)
            }
            loop.add(keepAliveTimer(), forMode: .default)
            loop.run(mode: .default, timeout: .zero)
            return log.all
        }
        #expect(log == ["e", "b", "d", "c", "a"])
    }

    // MARK: R50

    @Test func R50_nonRepeatingObserverIsInvalidatedAfterItsFirstCallout() {
        let (log, state) = onLoopThread { loop -> ([String], [Bool]) in
            let log = EventLog<String>()
            let observer = EvObserver(activities: .allActivities, repeats: false) { _, activity in log.append(activity.description) }
            loop.add(observer, forMode: .default)
            loop.add(keepAliveTimer(), forMode: .default)
            let validBefore = observer.isValid
            loop.run(mode: .default, timeout: .zero)
            loop.run(mode: .default, timeout: .zero)
            return (log.all, [validBefore, observer.isValid, loop.contains(observer, forMode: .default)])
        }
        #expect(log == ["entry"])
        #expect(state == [true, false, false])
    }

    // MARK: R51

    @Test func R51_observerIsNotReenteredByANestedRunStartedFromItsCallout() {
        let (outer, recorder) = onLoopThread { loop -> ([String], [String]) in
            let outer = EventLog<String>()
            let recorder = EventLog<String>()
            loop.add(
                EvObserver(activities: .allActivities, order: 0) { _, activity in
                    outer.append(activity.description)
                    if outer.count == 1 { loop.run(mode: .default, timeout: .zero) }  // nested, from Entry
                }, forMode: .default)
            loop.add(EvObserver(activities: .allActivities, order: 1) { _, activity in recorder.append(activity.description) }, forMode: .default)
            loop.add(keepAliveTimer(), forMode: .default)
            loop.run(mode: .default, timeout: .zero)
            return (outer.all, recorder.all)
        }
        #expect(outer == ["entry", "beforeTimers", "beforeSources", "exit"])
        // The other observer proves the nested run happened (inside the first one's Entry).
        #expect(recorder == ["entry", "beforeTimers", "beforeSources", "exit", "entry", "beforeTimers", "beforeSources", "exit"])
    }

    // MARK: R52

    @Test func R52_observerAddedDuringAPhaseIsCalledFromTheNextPhaseOn() {
        let (earlier, later) = onLoopThread { loop -> ([String], [String]) in
            let earlier = EventLog<String>()
            let later = EventLog<String>()
            let lowerOrder = EvObserver(activities: .allActivities, order: -1) { _, activity in earlier.append(activity.description) }
            let higherOrder = EvObserver(activities: .allActivities, order: 1) { _, activity in later.append(activity.description) }
            loop.add(
                EvObserver(activities: .entry, order: 0) { _, _ in
                    loop.add(lowerOrder, forMode: .default)
                    loop.add(higherOrder, forMode: .default)
                }, forMode: .default)
            loop.add(keepAliveTimer(), forMode: .default)
            loop.run(mode: .default, timeout: .zero)
            return (earlier.all, later.all)
        }
        #expect(earlier == ["beforeTimers", "beforeSources", "exit"])
        #expect(later == ["beforeTimers", "beforeSources", "exit"])
    }

    @Test func R52_observerInvalidatedDuringAPhaseIsNotCalledAfterwards() {
        let (log, valid) = onLoopThread { loop -> ([String], Bool) in
            let log = EventLog<String>()
            let victim = EvObserver(activities: .allActivities, order: 1) { _, activity in log.append("victim \(activity)") }
            loop.add(
                EvObserver(activities: .beforeTimers, order: 0) { _, activity in
                    log.append("killer \(activity)")
                    victim.invalidate()
                }, forMode: .default)
            loop.add(victim, forMode: .default)
            loop.add(keepAliveTimer(), forMode: .default)
            loop.run(mode: .default, timeout: .zero)
            return (log.all, victim.isValid)
        }
        #expect(log == ["victim entry", "killer beforeTimers"])
        #expect(!valid)
    }

    // MARK: R53

    @Test func R53_addingAnObserverToASecondLoopStopsWithAMessage() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let observer = EvObserver(activities: .entry) { _, _ in }
            let (first, _) = startLoopThread { _ in Latch().wait() }
            first.add(observer, forMode: .default)
            let done = DispatchSemaphore(value: 0)
            let thread = Thread {
                EvRunLoop.current.add(observer, forMode: .default)  // a second loop: stops here
                done.signal()
            }
            thread.start()
            done.wait()
        }
        let message = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(message.contains("this EvObserver is already in another run loop"))
    }

    @Test func R53_observerRemovedFromEveryModeOfItsLoopMayJoinAnotherLoop() {
        let (log, inFirst) = onLoopThread { loop -> ([String], Bool) in
            let log = EventLog<String>()
            let observer = EvObserver(activities: .entry) { _, activity in log.append(activity.description) }
            let removed = Latch()
            let release = Latch()
            let first = startLoopThread { firstLoop in
                firstLoop.add(observer, forMode: .default)
                firstLoop.remove(observer, forMode: .default)
                removed.open()
                release.wait()  // keeps the first loop alive while the observer joins the second
            }
            removed.wait()
            loop.add(observer, forMode: .default)
            loop.add(keepAliveTimer(), forMode: .default)
            loop.run(mode: .default, timeout: .zero)
            let inFirst = first.loop.contains(observer, forMode: .default)
            release.open()
            first.finished.wait()
            return (log.all, inFirst)
        }
        #expect(log == ["entry"])
        #expect(!inFirst)
    }
}
