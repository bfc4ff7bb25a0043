import Testing

/// R33–R36 and R40–R45, R47 on the real CFRunLoop and on RunLoopKit: version-0 sources and timers.
@Suite struct SourceAndTimerConformanceTests {
    @Test func R33_signalledSourcesRunByOrderThenBySignalTime() {
        expectBothRunLoops([
            .addSource(1, order: 2, modes: ["default"]),
            .addSource(2, order: 1, modes: ["default"]),
            .addSource(3, order: 1, modes: ["default"]),
            .addSource(4, order: 0, modes: ["A"]),
            .signal(3), .signal(1), .signal(4), .signal(2),
            .run("default", .zero, returnAfterSourceHandled: false),
        ], trace: [
            scheduled(1), scheduled(2), scheduled(3), scheduled(4, in: "A"),
            performed(3), performed(2), performed(1), returned("timedOut"),
        ])
    }

    @Test func R33_aSourceSignalledInItsOwnPerformRunsInTheNextIteration() {
        expectBothRunLoops([
            .addObserver(1, activities: Activity.beforeSources, order: 0, repeats: true, modes: ["default"]),
            .addSource(2, order: 0, modes: ["default"]),
            .onCallout(2, [.signal(2)]),
            .signal(2),
            .run("default", .guarded, returnAfterSourceHandled: false),
        ], trace: [
            scheduled(2),
            observed(1, Activity.beforeSources), performed(2),
            observed(1, Activity.beforeSources), performed(2),
            observed(1, Activity.beforeSources), returned("stopped"),
        ])
    }

    @Test func R34_returnAfterSourceHandledLeavesTheOtherSourcesForLaterRuns() {
        expectBothRunLoops([
            .addSource(1, order: 0, modes: ["default"]),
            .addSource(2, order: 1, modes: ["default"]),
            .signal(2), .signal(1),
            .run("default", .guarded, returnAfterSourceHandled: true),
            .run("default", .guarded, returnAfterSourceHandled: true),
            .run("default", .zero, returnAfterSourceHandled: true),
        ], trace: [
            scheduled(1), scheduled(2),
            performed(1), returned("handledSource"),
            performed(2), returned("handledSource"),
            returned("timedOut"),
        ])
    }

    @Test func R35_aSignalWaitsForTheSourcesModeAndIsIdempotent() {
        expectBothRunLoops([
            .addSource(1, order: 0, modes: ["A"]),
            .addTimer(2, .future, interval: 0, modes: ["default"]),
            .signal(1), .signal(1), .signal(1),
            .run("default", .zero, returnAfterSourceHandled: false),
            .query(1),
            .run("A", .zero, returnAfterSourceHandled: false),
            .run("A", .zero, returnAfterSourceHandled: false),
            .query(1),
        ], trace: [
            scheduled(1, in: "A"),
            returned("timedOut"), .sourceState(1, valid: true, signalled: true),
            performed(1, in: "A"), returned("timedOut", "A"),
            returned("timedOut", "A"), .sourceState(1, valid: true, signalled: false),
        ])
    }

    @Test func R35_aSourceSignalledBeforeItWasAddedRunsWhenItsModeRuns() {
        expectBothRunLoops([
            .addSource(1, order: 0, modes: []),
            .signal(1),
            .add(1, mode: "A"),
            .run("A", .zero, returnAfterSourceHandled: false),
        ], trace: [scheduled(1, in: "A"), performed(1, in: "A"), returned("timedOut", "A")])
    }

    @Test func R36_scheduleAndCancelOncePerModeAndAnInvalidatedSourceNeverRuns() {
        expectBothRunLoops([
            .addSource(1, order: 0, modes: ["default", "A", "default"]),
            .signal(1),
            .remove(1, mode: "A"),
            .remove(1, mode: "A"),
            .add(1, mode: "B"),
            .invalidate(1),
            .invalidate(1),
            .signal(1),
            .add(1, mode: "A"),
            .query(1),
            .run("default", .zero, returnAfterSourceHandled: false),
        ], trace: [
            scheduled(1, in: "A"), scheduled(1),
            cancelled(1, in: "A"),
            scheduled(1, in: "B"),
            cancelled(1, in: "B"), cancelled(1),
            .sourceState(1, valid: false, signalled: false),
            returned("finished"),
        ])
    }

    @Test func R40_dueTimersFireInOneStepInDateOrder() {
        expectBothRunLoops([
            .addObserver(9, activities: Activity.beforeSources | Activity.exit, order: 0, repeats: true, modes: ["default"]),
            .addTimer(1, .at(-300), interval: 0, modes: ["default"]),
            .addTimer(2, .at(-200), interval: 0, modes: ["default"]),
            .addTimer(3, .at(-100), interval: 0, modes: ["default"]),
            .run("default", .zero, returnAfterSourceHandled: false),
        ], trace: [
            observed(9, Activity.beforeSources), fired(1), fired(2), fired(3), observed(9, Activity.exit), returned("timedOut"),
        ])
    }

    /// Found by this suite: RunLoopKit skipped a due timer re-dated by an earlier timer's callout.
    @Test func R40_aTimerReDatedByAnEarlierCalloutFiresInTheSameStepIfStillDue() {
        expectBothRunLoops([
            .addTimer(1, .past, interval: 0, modes: ["default"]),
            .addTimer(2, .past, interval: 1_000_000, modes: ["default"]),
            .addTimer(3, .past, interval: 1_000_000, modes: ["default", "A"]),
            .onCallout(1, [.setFireDate(2, .past), .remove(3, mode: "A")]),
            .run("default", .zero, returnAfterSourceHandled: false),
        ], trace: [fired(1), fired(2), fired(3), returned("timedOut")])
    }

    /// Found by a soak of the random programs (seed 1199142): a timer that a run nested in an
    /// earlier callout of the step fired, and so moved to its next slot, fired again in the step.
    @Test func R40_aTimerFiredByARunNestedInAnEarlierCalloutIsNoLongerDueInTheStep() {
        expectBothRunLoops([
            .addTimer(1, .past, interval: 0, modes: ["default"]),
            .onCallout(1, [.invalidate(1), .run("default", .zero, returnAfterSourceHandled: false)]),
            .addTimer(2, .past, interval: 1_000_000, modes: ["default"]),
            .addTimer(3, .past, interval: 1_000_000, modes: ["default", "A"]),
            .run("default", .zero, returnAfterSourceHandled: false),
            .query(2),
        ], trace: [
            fired(1), fired(2), fired(3), returned("timedOut", depth: 2), returned("timedOut"),
            .timerState(2, valid: true, fireSlot: nil),
        ])
    }

    @Test func R41_aTimerFiresOnlyInItsModesAndOnceAfterMissingIntervals() {
        expectBothRunLoops([
            .addTimer(1, .past, interval: 10, modes: ["A"]),
            .addTimer(2, .future, interval: 0, modes: ["default"]),
            .run("default", .zero, returnAfterSourceHandled: false),
            .run("A", .zero, returnAfterSourceHandled: false),
            .run("A", .zero, returnAfterSourceHandled: false),
            .query(1),
        ], trace: [
            returned("timedOut"), fired(1, in: "A"), returned("timedOut", "A"), returned("timedOut", "A"),
            .timerState(1, valid: true, fireSlot: nil),
        ])
    }

    @Test func R42_aRepeatingTimerMovesToTheNextSlotOfItsGrid() {
        expectBothRunLoops([
            .addTimer(1, .soon, interval: 100, modes: ["default"]),
            .onCallout(1, [.stop]),
            .run("default", .unguarded, returnAfterSourceHandled: false),
            .query(1),
        ], trace: [fired(1), returned("stopped"), .timerState(1, valid: true, fireSlot: 100)])
    }

    @Test func R43_aOneShotTimerIsInvalidatedAfterItsCallout() {
        expectBothRunLoops([
            .addTimer(1, .past, interval: 0, modes: ["default", "A"]),
            .addTimer(2, .future, interval: 0, modes: ["A"]),
            .run("default", .zero, returnAfterSourceHandled: false),
            .query(1),
            .run("A", .zero, returnAfterSourceHandled: false),
        ], trace: [
            // Default is now empty, but a zero timeout reports timedOut first (R24).
            fired(1), returned("timedOut"), .timerState(1, valid: false, fireSlot: nil), returned("timedOut", "A"),
        ])
    }

    @Test func R44_aLaterDateSetInTheCalloutIsKept() {
        expectBothRunLoops([
            .addTimer(1, .past, interval: 1_000_000, modes: ["default"]),
            .onCallout(1, [.setFireDate(1, .at(5000.5))]),
            .run("default", .zero, returnAfterSourceHandled: false),
            .query(1),
        ], trace: [fired(1), returned("timedOut"), .timerState(1, valid: true, fireSlot: 5000)])
    }

    @Test func R44_aDateSetFromAnotherThreadRearmsTheSleepingLoop() {
        expectBothRunLoops([
            .addObserver(9, activities: Activity.beforeWaiting | Activity.afterWaiting, order: 0, repeats: true, modes: ["default"]),
            .addTimer(1, .future, interval: 1_000_000, modes: ["default"]),
            .addObserver(2, activities: Activity.beforeWaiting, order: 1, repeats: false, modes: ["default"]),
            .onCallout(2, [.onOtherThread([.setFireDate(1, .at(-5))])]),
            .onCallout(1, [.stop]),
            .run("default", .huge, returnAfterSourceHandled: false),
        ], trace: [
            observed(9, Activity.beforeWaiting), observed(2, Activity.beforeWaiting), observed(9, Activity.afterWaiting),
            fired(1), returned("stopped"),
        ])
    }

    /// C80: a date set inside the timer's own callout always wins over the regular schedule, even
    /// one before the date just fired; a date in the past means "now", so the timer fires again in
    /// the next timers step (here the next pass, whose wait returns at once), not an interval later.
    @Test func C80_aPastDateSetInTheTimersOwnCalloutFiresItAgainInTheNextTimersStep() {
        let waits = [Activity.beforeWaiting, Activity.afterWaiting]
        expectBothRunLoops([
            .addObserver(9, activities: Activity.beforeWaiting | Activity.afterWaiting, order: 0, repeats: true, modes: ["default"]),
            .addTimer(1, .past, interval: 1_000_000, modes: ["default"]),
            .onCallout(1, [.setFireDate(1, .at(-2000))]),
            .run("default", .untilAsleep, returnAfterSourceHandled: false),
            .query(1),
        ], trace: observed(9, waits) + [fired(1)] + observed(9, waits) + [fired(1)] + observed(9, waits) + [
            returned("stopped"), .timerState(1, valid: true, fireSlot: nil),
        ])
    }

    /// C75, C80: moving a timer's fire date from another thread wakes the loop: one more pass,
    /// even when the new date is far off.
    @Test func C75_C80_aFireDateMovedFromAnotherThreadWakesTheLoopForOneMorePass() {
        expectBothRunLoops([
            .addObserver(9, activities: Activity.all, order: 0, repeats: true, modes: ["default"]),
            .addTimer(1, .future, interval: 0, modes: ["default"]),
            .addObserver(2, activities: Activity.beforeSources, order: 1, repeats: false, modes: ["default"]),
            .onCallout(2, [.fromOtherThread([.setFireDate(1, .future)])]),
            .run("default", .untilAsleep, returnAfterSourceHandled: false),
        ], trace: observed(9, [Activity.entry, Activity.beforeTimers, Activity.beforeSources]) + [observed(2, Activity.beforeSources)]
            + observed(9, [Activity.beforeWaiting, Activity.afterWaiting, Activity.beforeTimers, Activity.beforeSources])
            + observed(9, [Activity.beforeWaiting, Activity.afterWaiting, Activity.exit]) + [returned("stopped")])
    }

    @Test func R45_aTimerInvalidatedInItsCalloutNeverFiresAgain() {
        expectBothRunLoops([
            .addTimer(1, .past, interval: 1_000_000, modes: ["default"]),
            .addTimer(2, .future, interval: 0, modes: ["default"]),
            .onCallout(1, [.invalidate(1), .setFireDate(1, .past)]),
            .run("default", .zero, returnAfterSourceHandled: false),
            .run("default", .zero, returnAfterSourceHandled: false),
            .query(1),
        ], trace: [fired(1), returned("timedOut"), returned("timedOut"), .timerState(1, valid: false, fireSlot: nil)])
    }

    @Test func R45_aTimerInvalidatedFromAnotherThreadLeavesEveryMode() {
        expectBothRunLoops([
            .addTimer(1, .future, interval: 1_000_000, modes: ["default", "A"]),
            .addObserver(2, activities: Activity.beforeWaiting, order: 0, repeats: false, modes: ["default"]),
            .onCallout(2, [.onOtherThread([.invalidate(1), .stop])]),
            .run("default", .huge, returnAfterSourceHandled: false),
            .run("A", .zero, returnAfterSourceHandled: false),
            .query(1),
        ], trace: [
            observed(2, Activity.beforeWaiting), returned("stopped"), returned("finished", "A"),
            .timerState(1, valid: false, fireSlot: nil),
        ])
    }

    @Test func R47_aHugeIntervalIsCappedAndNeverSpins() {
        expectBothRunLoops([
            .addTimer(1, .past, interval: 1e300, modes: ["default"]),
            .run("default", .zero, returnAfterSourceHandled: false),
            .run("default", .zero, returnAfterSourceHandled: false),
            .query(1),
        ], trace: [fired(1), returned("timedOut"), returned("timedOut"), .timerState(1, valid: true, fireSlot: nil)])
    }
}
