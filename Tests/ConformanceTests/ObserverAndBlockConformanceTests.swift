import Testing

/// R48–R52 and R54–R59 on the real CFRunLoop and on RunLoopKit: observers, perform-blocks and
/// nested runs.
@Suite struct ObserverAndBlockConformanceTests {
    @Test func R48_anObserverSeesOnlyItsActivitiesInItsModes() {
        expectBothRunLoops([
            .addObserver(1, activities: Activity.entry | Activity.exit, order: 0, repeats: true, modes: ["A"]),
            .addObserver(2, activities: Activity.beforeSources, order: 0, repeats: true, modes: ["default"]),
            .addTimer(3, .future, interval: 0, modes: ["default", "A"]),
            .run("A", .zero, returnAfterSourceHandled: false),
            .run("default", .zero, returnAfterSourceHandled: false),
        ], trace: [
            observed(1, Activity.entry, in: "A"), observed(1, Activity.exit, in: "A"), returned("timedOut", "A"),
            observed(2, Activity.beforeSources), returned("timedOut"),
        ])
    }

    @Test func R49_observersRunByOrderThenInTheOrderTheyWereAdded() {
        expectBothRunLoops([
            .addObserver(1, activities: Activity.beforeSources, order: 5, repeats: true, modes: ["default"]),
            .addObserver(2, activities: Activity.beforeSources, order: 1, repeats: true, modes: ["default"]),
            .addObserver(3, activities: Activity.beforeSources, order: 1, repeats: true, modes: ["default"]),
            .addObserver(4, activities: Activity.beforeSources, order: -1, repeats: true, modes: ["default"]),
            .addTimer(5, .future, interval: 0, modes: ["default"]),
            .run("default", .zero, returnAfterSourceHandled: false),
        ], trace: [
            observed(4, Activity.beforeSources), observed(2, Activity.beforeSources),
            observed(3, Activity.beforeSources), observed(1, Activity.beforeSources), returned("timedOut"),
        ])
    }

    @Test func R50_aNonRepeatingObserverIsInvalidatedAfterItsFirstCallout() {
        expectBothRunLoops([
            .addObserver(1, activities: Activity.beforeTimers, order: 0, repeats: false, modes: ["default"]),
            .addObserver(2, activities: Activity.beforeSources, order: 0, repeats: true, modes: ["default"]),
            .addSource(3, order: 0, modes: ["default"]),
            .onCallout(3, [.signal(3)]),
            .signal(3),
            .run("default", .guarded, returnAfterSourceHandled: false),
            .query(1),
        ], trace: [
            scheduled(3),
            observed(1, Activity.beforeTimers), observed(2, Activity.beforeSources), performed(3),
            observed(2, Activity.beforeSources), performed(3),
            observed(2, Activity.beforeSources), returned("stopped"),
            .observerState(1, valid: false),
        ])
    }

    @Test func R51_anObserverIsNotReenteredByARunNestedInItsCallout() {
        expectBothRunLoops([
            .addObserver(1, activities: Activity.all, order: 0, repeats: true, modes: ["default"]),
            .addObserver(2, activities: Activity.entry | Activity.beforeTimers | Activity.exit, order: 1, repeats: true, modes: ["default"]),
            .addTimer(3, .future, interval: 0, modes: ["default"]),
            .nestedRunFromCallout(1, mode: "default", .zero),
            .run("default", .zero, returnAfterSourceHandled: false),
        ], trace: [
            observed(1, Activity.entry),
            observed(2, Activity.entry), observed(2, Activity.beforeTimers), observed(2, Activity.exit),
            returned("timedOut", depth: 2),
            observed(2, Activity.entry),
            observed(1, Activity.beforeTimers), observed(2, Activity.beforeTimers), observed(1, Activity.beforeSources),
            observed(1, Activity.exit), observed(2, Activity.exit), returned("timedOut"),
        ])
    }

    @Test func R52_anObserverAddedDuringAPhaseIsCalledFromTheNextPhase() {
        expectBothRunLoops([
            .addObserver(1, activities: Activity.beforeTimers, order: 0, repeats: false, modes: ["default"]),
            .onCallout(1, [.addObserver(2, activities: Activity.beforeTimers | Activity.beforeSources, order: 5, repeats: true, modes: ["default"])]),
            .addTimer(3, .future, interval: 0, modes: ["default"]),
            .run("default", .zero, returnAfterSourceHandled: false),
        ], trace: [observed(1, Activity.beforeTimers), observed(2, Activity.beforeSources), returned("timedOut")])
    }

    @Test func R52_anObserverInvalidatedDuringAPhaseIsNotCalled() {
        expectBothRunLoops([
            .addObserver(1, activities: Activity.beforeSources, order: 0, repeats: true, modes: ["default"]),
            .addObserver(2, activities: Activity.beforeSources, order: 1, repeats: true, modes: ["default"]),
            .onCallout(1, [.invalidate(2)]),
            .addTimer(3, .future, interval: 0, modes: ["default"]),
            .run("default", .zero, returnAfterSourceHandled: false),
            .query(2),
        ], trace: [observed(1, Activity.beforeSources), returned("timedOut"), .observerState(2, valid: false)])
    }

    @Test func R54_aBlockRunsOnceInTheFirstRunOfOneOfItsModes() {
        expectBothRunLoops([
            .addTimer(9, .future, interval: 0, modes: ["A"]),
            .performBlock(1, modes: ["A"]),
            .performBlock(2, modes: ["default", "A"]),
            .performBlock(3, modes: ["common"]),
            .run("A", .zero, returnAfterSourceHandled: false),
            .run("default", .zero, returnAfterSourceHandled: false),
            .run("A", .zero, returnAfterSourceHandled: false),
        ], trace: [
            ran(1, in: "A"), ran(2, in: "A"), returned("timedOut", "A"),
            ran(3), returned("timedOut"),
            returned("timedOut", "A"),
        ])
    }

    @Test func R55_blocksRunInOrderAndOneScheduledByABlockWaitsForTheNextStep() {
        expectBothRunLoops([
            .addObserver(1, activities: Activity.all, order: 0, repeats: true, modes: ["default"]),
            .addTimer(9, .future, interval: 0, modes: ["default"]),
            .performBlock(2, modes: ["default"]),
            .performBlock(3, modes: ["default"]),
            .onCallout(2, [.performBlock(4, modes: ["default"])]),
            .run("default", .guarded, returnAfterSourceHandled: false),
        ], trace: [
            observed(1, Activity.entry), observed(1, Activity.beforeTimers), observed(1, Activity.beforeSources),
            ran(2), ran(3),
            observed(1, Activity.beforeWaiting), observed(1, Activity.afterWaiting),
            ran(4), observed(1, Activity.exit), returned("stopped"),
        ])
    }

    @Test func R56_schedulingABlockDoesNotWakeTheLoop() {
        expectBothRunLoops([
            .addObserver(1, activities: Activity.all, order: 0, repeats: true, modes: ["default"]),
            .addObserver(2, activities: Activity.beforeWaiting, order: 1, repeats: false, modes: ["default"]),
            .onCallout(2, [.performBlock(3, modes: ["default"])]),
            .addTimer(9, .future, interval: 0, modes: ["default"]),
            .run("default", .short, returnAfterSourceHandled: false),
        ], trace: [
            observed(1, Activity.entry), observed(1, Activity.beforeTimers), observed(1, Activity.beforeSources),
            observed(1, Activity.beforeWaiting), observed(2, Activity.beforeWaiting),
            observed(1, Activity.afterWaiting), ran(3),  // after the deadline, not at once
            observed(1, Activity.exit), returned("timedOut"),
        ])
    }

    @Test func R57_aPendingBlockKeepsItsModeAlive() {
        expectBothRunLoops([
            .addObserver(1, activities: Activity.entry | Activity.exit, order: 0, repeats: true, modes: ["A"]),
            .performBlock(2, modes: ["A"]),
            .run("A", .zero, returnAfterSourceHandled: false),
            .run("A", .zero, returnAfterSourceHandled: false),
        ], trace: [
            observed(1, Activity.entry, in: "A"), ran(2, in: "A"), observed(1, Activity.exit, in: "A"),
            returned("timedOut", "A"), returned("finished", "A"),
        ])
    }

    @Test func R58_aNestedRunHasItsOwnEntryExitAndResult() {
        expectBothRunLoops([
            .addObserver(1, activities: Activity.entry | Activity.exit, order: 0, repeats: true, modes: ["default", "A"]),
            .addObserver(2, activities: Activity.beforeSources, order: 1, repeats: false, modes: ["default"]),
            .onCallout(2, [.run("A", .guarded, returnAfterSourceHandled: true)]),
            .addSource(3, order: 0, modes: ["A"]),
            .signal(3),
            .addTimer(4, .future, interval: 0, modes: ["default"]),
            .run("default", .zero, returnAfterSourceHandled: false),
        ], trace: [
            scheduled(3, in: "A"),
            observed(1, Activity.entry), observed(2, Activity.beforeSources),
            observed(1, Activity.entry, in: "A"), performed(3, in: "A"), observed(1, Activity.exit, in: "A"),
            returned("handledSource", "A", depth: 2),
            observed(1, Activity.exit), returned("timedOut"),
        ])
    }

    /// Found by this suite: RunLoopKit hid the other due timers from a run nested in a timer.
    @Test func R59_aTimerDoesNotFireInARunNestedInItsCalloutButOtherDueTimersDo() {
        expectBothRunLoops([
            .addTimer(1, .past, interval: 1_000_000, modes: ["default"]),
            .addTimer(2, .past, interval: 0, modes: ["default"]),
            .addTimer(9, .future, interval: 0, modes: ["default"]),
            .nestedRunFromCallout(1, mode: "default", .zero),
            .run("default", .zero, returnAfterSourceHandled: false),
        ], trace: [fired(1), fired(2), returned("timedOut", depth: 2), returned("timedOut")])
    }

    @Test func R59_aSourceSignalledInItsPerformRunsInARunNestedThere() {
        expectBothRunLoops([
            .addSource(1, order: 0, modes: ["default"]),
            .onCallout(1, [.signal(1), .run("default", .zero, returnAfterSourceHandled: false)]),
            .signal(1),
            .run("default", .zero, returnAfterSourceHandled: false),
        ], trace: [scheduled(1), performed(1), performed(1), returned("timedOut", depth: 2), returned("timedOut")])
    }
}
