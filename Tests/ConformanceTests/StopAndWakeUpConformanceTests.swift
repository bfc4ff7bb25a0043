import Testing

/// R27–R30 and C50–C56 on the real CFRunLoop and on RunLoopKit: stop and wake-up. R30's "never
/// lost" holds from a run's start until its wait returns; elsewhere wake-ups are dropped (C52).
@Suite struct StopAndWakeUpConformanceTests {
    /// What an observer of every activity sees as a run begins.
    private static let opening = [Activity.entry, Activity.beforeTimers, Activity.beforeSources]

    @Test func R27_stopEndsOnlyTheInnermostRun() {
        expectBothRunLoops([
            .addObserver(9, activities: Activity.all, order: 0, repeats: true, modes: ["default", "A"]),
            .addObserver(1, activities: Activity.beforeSources, order: 1, repeats: false, modes: ["default"]),
            .addObserver(2, activities: Activity.beforeSources, order: 1, repeats: false, modes: ["A"]),
            .addSource(3, order: 0, modes: ["default"]),
            .addTimer(4, .future, interval: 0, modes: ["A"]),
            .onCallout(1, [.run("A", .huge, returnAfterSourceHandled: false)]),
            .onCallout(2, [.stop]),
            .signal(3),
            .run("default", .guarded, returnAfterSourceHandled: false),
        ], trace: [scheduled(3)] + observed(9, Self.opening) + [observed(1, Activity.beforeSources)]
            + observed(9, Self.opening, in: "A") + [
                observed(2, Activity.beforeSources, in: "A"),
                observed(9, Activity.beforeWaiting, in: "A"), observed(9, Activity.afterWaiting, in: "A"),
                observed(9, Activity.exit, in: "A"), returned("stopped", "A", depth: 2),
                // The outer run carries on: its source, then a second iteration.
                performed(3),
                observed(9, Activity.beforeTimers), observed(9, Activity.beforeSources),
                observed(9, Activity.beforeWaiting), observed(9, Activity.afterWaiting),
                observed(9, Activity.exit), returned("stopped"),
            ])
    }

    @Test func R27_eachRunHasItsOwnStopMark() {
        // The outer run is stopped; the run nested right after the stop is not: it goes on
        // through two iterations (its source signals itself once) until its guard stops it.
        expectBothRunLoops([
            .addObserver(9, activities: Activity.entry | Activity.exit, order: 0, repeats: true, modes: ["default", "A"]),
            .addObserver(1, activities: Activity.beforeSources, order: 1, repeats: false, modes: ["default"]),
            .addSource(2, order: 0, modes: ["A"]),
            .onCallout(2, [.signal(2)]),
            .signal(2),
            .addTimer(3, .future, interval: 0, modes: ["default"]),
            .onCallout(1, [.stop, .run("A", .guarded, returnAfterSourceHandled: false)]),
            .run("default", .guarded, returnAfterSourceHandled: false),
        ], trace: [
            scheduled(2, in: "A"),
            observed(9, Activity.entry), observed(1, Activity.beforeSources),
            observed(9, Activity.entry, in: "A"), performed(2, in: "A"), performed(2, in: "A"),
            observed(9, Activity.exit, in: "A"), returned("stopped", "A", depth: 2),
            observed(9, Activity.exit), returned("stopped"),
        ])
    }

    /// Found by this suite: RunLoopKit ran one iteration after a stop from an Entry observer.
    @Test func R27_aStopFromEntryEndsTheRunBeforeItsFirstIteration() {
        expectBothRunLoops([
            .addObserver(1, activities: Activity.all, order: 0, repeats: true, modes: ["default"]),
            .addTimer(2, .future, interval: 0, modes: ["default"]),
            .onCallout(1, [.stop]),
            .run("default", .huge, returnAfterSourceHandled: false),
        ], trace: [observed(1, Activity.entry), observed(1, Activity.exit), returned("stopped")])
    }

    @Test func R28_aStopWhileNotRunningOrInExitLeavesLaterRunsAlone() {
        expectBothRunLoops([
            .stop,
            .addObserver(1, activities: Activity.entry | Activity.exit, order: 0, repeats: true, modes: ["default"]),
            .addTimer(2, .future, interval: 0, modes: ["default"]),
            .run("default", .zero, returnAfterSourceHandled: false),
            .addObserver(3, activities: Activity.exit, order: 1, repeats: false, modes: ["default"]),
            .onCallout(3, [.stop]),
            .run("default", .zero, returnAfterSourceHandled: false),
            .run("default", .zero, returnAfterSourceHandled: false),
        ], trace: [
            observed(1, Activity.entry), observed(1, Activity.exit), returned("timedOut"),
            observed(1, Activity.entry), observed(1, Activity.exit), observed(3, Activity.exit), returned("timedOut"),
            observed(1, Activity.entry), observed(1, Activity.exit), returned("timedOut"),
        ])
    }

    @Test func R29_aStopFromAnotherThreadEndsTheSleepingRun() {
        expectBothRunLoops([
            .addObserver(1, activities: Activity.all, order: 0, repeats: true, modes: ["default"]),
            .addObserver(2, activities: Activity.beforeWaiting, order: 1, repeats: false, modes: ["default"]),
            .addTimer(3, .future, interval: 0, modes: ["default"]),
            .onCallout(2, [.onOtherThread([.stop])]),
            .run("default", .huge, returnAfterSourceHandled: false),
        ], trace: observed(1, Self.opening) + [
            observed(1, Activity.beforeWaiting), observed(2, Activity.beforeWaiting), observed(1, Activity.afterWaiting),
            observed(1, Activity.exit), returned("stopped"),
        ])
    }

    @Test func R29_aStopFromACalloutOfTheRunItStops() {
        expectBothRunLoops([
            .addObserver(1, activities: Activity.all, order: 0, repeats: true, modes: ["default"]),
            .addSource(2, order: 0, modes: ["default"]),
            .stopFromCallout(2),
            .signal(2),
            .run("default", .huge, returnAfterSourceHandled: false),
        ], trace: [scheduled(2)] + observed(1, Self.opening) + [performed(2), observed(1, Activity.exit), returned("stopped")])
    }

    @Test func R30_aWakeUpEndsTheSleepAndTheLoopSleepsAgain() {
        expectBothRunLoops([
            .addObserver(1, activities: Activity.all, order: 0, repeats: true, modes: ["default"]),
            .addObserver(2, activities: Activity.beforeWaiting, order: 1, repeats: true, modes: ["default"]),
            .addTimer(3, .future, interval: 0, modes: ["default"]),
            .onCallout(2, [.onOtherThread([.wakeUp])]),
            .onCallout(2, [.stop]),
            .run("default", .huge, returnAfterSourceHandled: false),
        ], trace: observed(1, Self.opening) + [
            observed(1, Activity.beforeWaiting), observed(2, Activity.beforeWaiting), observed(1, Activity.afterWaiting),
            observed(1, Activity.beforeTimers), observed(1, Activity.beforeSources),
            observed(1, Activity.beforeWaiting), observed(2, Activity.beforeWaiting), observed(1, Activity.afterWaiting),
            observed(1, Activity.exit), returned("stopped"),
        ])
    }

    @Test func R30_C53_wakeUpsBeforeTheWaitEndOnlyTheNextSleep() {
        expectBothRunLoops([
            .addObserver(1, activities: Activity.all, order: 0, repeats: true, modes: ["default"]),
            .addObserver(2, activities: Activity.beforeSources, order: 1, repeats: false, modes: ["default"]),
            .addObserver(3, activities: Activity.beforeWaiting, order: 1, repeats: true, modes: ["default"]),
            .addTimer(4, .future, interval: 0, modes: ["default"]),
            .onCallout(2, [.wakeUp, .wakeUp]),
            .onCallout(3, []),  // first sleep: ended at once by the wake-ups
            .onCallout(3, [.onOtherThread([.stop])]),  // second sleep: lasts until the stop
            .run("default", .huge, returnAfterSourceHandled: false),
        ], trace: observed(1, Self.opening) + [
            observed(2, Activity.beforeSources),
            observed(1, Activity.beforeWaiting), observed(3, Activity.beforeWaiting), observed(1, Activity.afterWaiting),
            observed(1, Activity.beforeTimers), observed(1, Activity.beforeSources),
            observed(1, Activity.beforeWaiting), observed(3, Activity.beforeWaiting), observed(1, Activity.afterWaiting),
            observed(1, Activity.exit), returned("stopped"),
        ])
    }

    /// What an observer of every activity sees in a run whose one sleep a helper ends (`untilAsleep`).
    private static let oneSleep = [
        Activity.entry, Activity.beforeTimers, Activity.beforeSources, Activity.beforeWaiting, Activity.afterWaiting, Activity.exit,
    ]

    /// C51, C52: a loop that is not running refuses wake-ups; the next run sleeps at once.
    @Test func C51_C52_aWakeUpWhileTheLoopIsNotRunningIsDropped() {
        expectBothRunLoops([
            .addObserver(9, activities: Activity.all, order: 0, repeats: true, modes: ["default"]),
            .addTimer(1, .future, interval: 0, modes: ["default"]),
            .wakeUp,
            .fromOtherThread([.wakeUp]),
            .run("default", .untilAsleep, returnAfterSourceHandled: false),
        ], trace: observed(9, Self.oneSleep) + [returned("stopped")])
    }

    /// C52, C53: a wake-up before the wait is accepted (the wait returns at once); one made in
    /// the post-wait half (here an AfterWaiting observer) is dropped: no third pass.
    @Test func C52_aWakeUpFromAnAfterWaitingObserverIsDropped() {
        expectBothRunLoops([
            .addObserver(9, activities: Activity.all, order: 0, repeats: true, modes: ["default"]),
            .addTimer(1, .future, interval: 0, modes: ["default"]),
            .addObserver(2, activities: Activity.beforeWaiting, order: 1, repeats: false, modes: ["default"]),
            .onCallout(2, [.wakeUp]),
            .addObserver(3, activities: Activity.afterWaiting, order: 1, repeats: false, modes: ["default"]),
            .onCallout(3, [.wakeUp, .fromOtherThread([.wakeUp])]),
            .run("default", .untilAsleep, returnAfterSourceHandled: false),
        ], trace: observed(9, [Activity.entry, Activity.beforeTimers, Activity.beforeSources, Activity.beforeWaiting])
            + [observed(2, Activity.beforeWaiting), observed(9, Activity.afterWaiting), observed(3, Activity.afterWaiting)]
            + observed(9, [Activity.beforeTimers, Activity.beforeSources, Activity.beforeWaiting, Activity.afterWaiting, Activity.exit])
            + [returned("stopped")])
    }

    /// C52: a stop made by a timer is seen by its own run's result check and
    /// leaves no wake-up behind, so the next run, here in another mode, sleeps at once.
    @Test func C52_aStopFromATimerLeavesNoWakeUpForTheNextRun() {
        expectBothRunLoops([
            .addTimer(1, .past, interval: 0, modes: ["default"]),
            .onCallout(1, [.stop]),
            .addObserver(9, activities: Activity.all, order: 0, repeats: true, modes: ["A"]),
            .addTimer(2, .future, interval: 0, modes: ["A"]),
            .run("default", .zero, returnAfterSourceHandled: false),
            .run("A", .untilAsleep, returnAfterSourceHandled: false),
        ], trace: [fired(1), returned("timedOut")] + observed(9, Self.oneSleep, in: "A") + [returned("stopped", "A")])
    }

    /// C52: a stop from another thread during the post-wait half (an AfterWaiting observer waits
    /// for it) ends the run at that pass's result check and leaves no wake-up for the next run.
    @Test func C52_aStopFromAnotherThreadAfterTheWaitLeavesNoWakeUpForTheNextRun() {
        expectBothRunLoops([
            .addObserver(9, activities: Activity.all, order: 0, repeats: true, modes: ["default"]),
            .addTimer(1, .future, interval: 0, modes: ["default"]),
            .addObserver(2, activities: Activity.beforeWaiting, order: 1, repeats: false, modes: ["default"]),
            .onCallout(2, [.wakeUp]),
            .addObserver(3, activities: Activity.afterWaiting, order: 1, repeats: false, modes: ["default"]),
            .onCallout(3, [.fromOtherThread([.stop])]),
            .run("default", .unguarded, returnAfterSourceHandled: false),
            .run("default", .untilAsleep, returnAfterSourceHandled: false),
        ], trace: observed(9, [Activity.entry, Activity.beforeTimers, Activity.beforeSources, Activity.beforeWaiting])
            + [observed(2, Activity.beforeWaiting), observed(9, Activity.afterWaiting), observed(3, Activity.afterWaiting)]
            + [observed(9, Activity.exit), returned("stopped")] + observed(9, Self.oneSleep) + [returned("stopped")])
    }

    /// C50, C56, W7, kept on purpose to match CF: a stop from an Entry observer ends the run before
    /// any wait, so the wake-up it sent is never consumed and ends the next run's first wait.
    @Test func C56_W7_aStopFromEntryLeavesItsWakeUpForTheNextRunsFirstWait() {
        expectBothRunLoops([
            .addObserver(9, activities: Activity.all, order: 0, repeats: true, modes: ["default"]),
            .addTimer(1, .future, interval: 0, modes: ["default"]),
            .addObserver(2, activities: Activity.entry, order: 1, repeats: false, modes: ["default"]),
            .onCallout(2, [.stop]),
            .run("default", .untilAsleep, returnAfterSourceHandled: false),
            .run("default", .untilAsleep, returnAfterSourceHandled: false),
        ], trace: [observed(9, Activity.entry), observed(2, Activity.entry), observed(9, Activity.exit), returned("stopped")]
            + observed(9, [Activity.entry, Activity.beforeTimers, Activity.beforeSources, Activity.beforeWaiting, Activity.afterWaiting])
            + observed(9, [Activity.beforeTimers, Activity.beforeSources, Activity.beforeWaiting, Activity.afterWaiting, Activity.exit])
            + [returned("stopped")])
    }
}
