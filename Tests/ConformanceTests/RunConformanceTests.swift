import Testing

/// R19–R26 and R31 on the real CFRunLoop and on RunLoopKit: the order of one run and its result.
@Suite struct RunConformanceTests {
    /// What an observer of every activity sees as a run begins.
    private static let opening = [Activity.entry, Activity.beforeTimers, Activity.beforeSources]

    @Test func R19_entryAndExitOncePerRunInTheRunsMode() {
        expectBothRunLoops([
            .addObserver(1, activities: Activity.entry | Activity.exit, order: 0, repeats: true, modes: ["default", "A"]),
            .addSource(2, order: 0, modes: ["default"]),
            .addTimer(3, .future, interval: 0, modes: ["A"]),
            .onCallout(2, [.run("A", .zero, returnAfterSourceHandled: false)]),
            .signal(2),
            .run("default", .guarded, returnAfterSourceHandled: false),
        ], trace: [
            scheduled(2),
            observed(1, Activity.entry), performed(2),
            observed(1, Activity.entry, in: "A"), observed(1, Activity.exit, in: "A"), returned("timedOut", "A", depth: 2),
            observed(1, Activity.exit), returned("stopped"),
        ])
    }

    @Test func R20_oneIterationGoesObserversBlocksSourcesBlocksWaitTimersBlocks() {
        expectBothRunLoops([
            .addObserver(1, activities: Activity.all, order: 0, repeats: true, modes: ["default"]),
            .addSource(2, order: 0, modes: ["default"]),
            .addTimer(3, .past, interval: 0, modes: ["default"]),
            .performBlock(4, modes: ["default"]),
            .onCallout(2, [.performBlock(5, modes: ["default"])]),
            .onCallout(3, [.performBlock(6, modes: ["default"])]),
            .signal(2),
            .run("default", .guarded, returnAfterSourceHandled: false),
        ], trace: [
            scheduled(2),
            observed(1, Activity.entry), observed(1, Activity.beforeTimers), observed(1, Activity.beforeSources),
            ran(4), performed(2), ran(5),  // steps 3–5; a source ran, so this iteration polls
            fired(3), ran(6),  // steps 11 and 12
            observed(1, Activity.beforeTimers), observed(1, Activity.beforeSources),
            observed(1, Activity.beforeWaiting), observed(1, Activity.afterWaiting),  // the guard stopped it
            observed(1, Activity.exit), returned("stopped"),
        ])
    }

    @Test func R21_aPollingIterationSkipsBothWaitingPhases() {
        expectBothRunLoops([
            .addObserver(1, activities: Activity.all, order: 0, repeats: true, modes: ["default"]),
            .addSource(2, order: 0, modes: ["default"]),
            .onCallout(2, [.signal(2)]),
            .signal(2),
            .run("default", .zero, returnAfterSourceHandled: false),
            .run("default", .guarded, returnAfterSourceHandled: false),
        ], trace: [
            scheduled(2),
            observed(1, Activity.entry), observed(1, Activity.beforeTimers), observed(1, Activity.beforeSources),
            performed(2), observed(1, Activity.exit), returned("timedOut"),
            observed(1, Activity.entry), observed(1, Activity.beforeTimers), observed(1, Activity.beforeSources),
            performed(2),
            observed(1, Activity.beforeTimers), observed(1, Activity.beforeSources),
            observed(1, Activity.beforeWaiting), observed(1, Activity.afterWaiting),
            observed(1, Activity.exit), returned("stopped"),
        ])
    }

    @Test func R22_aTimerComingDueEndsTheSleep() {
        expectBothRunLoops([
            .addObserver(1, activities: Activity.all, order: 0, repeats: true, modes: ["default"]),
            .addTimer(2, .soon, interval: 0, modes: ["default"]),
            .onCallout(2, [.stop]),
            .run("default", .unguarded, returnAfterSourceHandled: false),
        ], trace: observed(1, Self.opening) + [
            observed(1, Activity.beforeWaiting), observed(1, Activity.afterWaiting),
            fired(2), observed(1, Activity.exit), returned("stopped"),
        ])
    }

    @Test func R22_signallingASourceDoesNotEndTheSleep() {
        expectBothRunLoops([
            .addObserver(1, activities: Activity.all, order: 0, repeats: true, modes: ["default"]),
            .addSource(2, order: 0, modes: ["default"]),
            .addObserver(3, activities: Activity.beforeWaiting, order: 1, repeats: false, modes: ["default"]),
            .onCallout(3, [.signal(2)]),
            .run("default", .short, returnAfterSourceHandled: false),
            .run("default", .zero, returnAfterSourceHandled: false),
        ], trace: [scheduled(2)] + observed(1, Self.opening) + [
            observed(1, Activity.beforeWaiting), observed(3, Activity.beforeWaiting),
            observed(1, Activity.afterWaiting), observed(1, Activity.exit), returned("timedOut"),  // the deadline woke it
        ] + observed(1, Self.opening) + [performed(2), observed(1, Activity.exit), returned("timedOut")])
    }

    @Test func R23_isWaitingIsFalseInEveryCallout() {
        // Every callout records `isWaiting`; a true would appear as `waitingInCallout`.
        expectBothRunLoops([
            .addObserver(1, activities: Activity.all, order: 0, repeats: true, modes: ["default"]),
            .addTimer(2, .future, interval: 0, modes: ["default"]),
            .run("default", .guarded, returnAfterSourceHandled: false),
        ], trace: observed(1, Self.opening) + [
            observed(1, Activity.beforeWaiting), observed(1, Activity.afterWaiting), observed(1, Activity.exit),
            returned("stopped"),
        ])
    }

    @Test func R24_handledSourceComesBeforeTimedOut() {
        expectBothRunLoops([
            .addSource(1, order: 0, modes: ["default"]),
            .signal(1),
            .run("default", .zero, returnAfterSourceHandled: true),
        ], trace: [scheduled(1), performed(1), returned("handledSource")])
    }

    @Test func R24_timedOutComesBeforeStopped() {
        expectBothRunLoops([
            .addObserver(1, activities: Activity.beforeSources, order: 0, repeats: true, modes: ["default"]),
            .addTimer(2, .future, interval: 0, modes: ["default"]),
            .stopFromCallout(1),
            .run("default", .zero, returnAfterSourceHandled: false),
        ], trace: [observed(1, Activity.beforeSources), returned("timedOut")])
    }

    @Test func R24_stoppedComesBeforeFinished() {
        expectBothRunLoops([
            .addObserver(1, activities: Activity.all, order: 0, repeats: true, modes: ["default"]),
            .addTimer(2, .past, interval: 0, modes: ["default"]),
            .onCallout(2, [.stop]),
            .run("default", .unguarded, returnAfterSourceHandled: false),
        ], trace: observed(1, Self.opening) + [
            observed(1, Activity.beforeWaiting), observed(1, Activity.afterWaiting),
            fired(2), observed(1, Activity.exit), returned("stopped"),
        ])
    }

    @Test func R24_finishedOnceTheModeIsEmpty() {
        expectBothRunLoops([
            .addObserver(1, activities: Activity.all, order: 0, repeats: true, modes: ["default"]),
            .addTimer(2, .past, interval: 0, modes: ["default"]),
            .run("default", .unguarded, returnAfterSourceHandled: false),
        ], trace: observed(1, Self.opening) + [
            observed(1, Activity.beforeWaiting), observed(1, Activity.afterWaiting),
            fired(2), observed(1, Activity.exit), returned("finished"),
        ])
    }

    @Test func R25_aZeroTimeoutRunsOnePollingIterationWithEveryObserver() {
        expectBothRunLoops([
            .addObserver(1, activities: Activity.all, order: 0, repeats: true, modes: ["default"]),
            .addTimer(2, .future, interval: 0, modes: ["default"]),
            .run("default", .zero, returnAfterSourceHandled: false),
        ], trace: observed(1, Self.opening) + [observed(1, Activity.exit), returned("timedOut")])
    }

    @Test func R26_aHugeTimeoutMeansNoDeadline() {
        expectBothRunLoops([
            .addObserver(1, activities: Activity.all, order: 0, repeats: true, modes: ["default"]),
            .addObserver(2, activities: Activity.beforeWaiting, order: 1, repeats: false, modes: ["default"]),
            .addTimer(3, .future, interval: 0, modes: ["default"]),
            .onCallout(2, [.stop]),
            .run("default", .huge, returnAfterSourceHandled: false),
        ], trace: observed(1, Self.opening) + [
            observed(1, Activity.beforeWaiting), observed(2, Activity.beforeWaiting), observed(1, Activity.afterWaiting),
            observed(1, Activity.exit), returned("stopped"),
        ])
    }

    @Test func R31_runReturnsWhenARunIsStopped() {
        expectBothRunLoops([
            .addObserver(1, activities: Activity.all, order: 0, repeats: true, modes: ["default"]),
            .addObserver(2, activities: Activity.beforeWaiting, order: 1, repeats: false, modes: ["default"]),
            .addTimer(3, .future, interval: 0, modes: ["default"]),
            .onCallout(2, [.stop]),
            .runDefaultUntilDone,
        ], trace: observed(1, Self.opening) + [
            observed(1, Activity.beforeWaiting), observed(2, Activity.beforeWaiting), observed(1, Activity.afterWaiting),
            observed(1, Activity.exit), returned("done"),
        ])
    }

    @Test func R31_runReturnsWhenTheDefaultModeIsEmpty() {
        expectBothRunLoops([
            .addObserver(1, activities: Activity.all, order: 0, repeats: true, modes: ["default"]),
            .addTimer(2, .past, interval: 0, modes: ["default"]),
            .runDefaultUntilDone,
        ], trace: observed(1, Self.opening) + [
            observed(1, Activity.beforeWaiting), observed(1, Activity.afterWaiting),
            fired(2), observed(1, Activity.exit), returned("done"),
        ])
    }
}
