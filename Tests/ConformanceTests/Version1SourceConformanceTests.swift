import Testing

/// R37, R38 and the version-1 parts of R13, R16, R20, R22 and R24 on the real CFRunLoop and on
/// RunLoopKit: port sources (`addPortSource`, an eventfd made readable by `makeReady`).
///
/// What CF does on Linux (CFRunLoop.c): a version-1 source's port is a file descriptor that
/// `CFRunLoopAddSource` adds, edge-triggered, to the epoll set of each of its modes; a wait takes
/// ONE ready descriptor from the running mode's set (`epoll_wait(…, 1, …)`), reads 8 bytes from
/// it (which empties an eventfd) and, if it is a source's port, calls that source's perform.
@Suite struct Version1SourceConformanceTests {
    /// Every activity but Entry and Exit: shows the iterations and whether they waited.
    private static let iterationPhases = Activity.beforeTimers | Activity.beforeSources | Activity.beforeWaiting | Activity.afterWaiting

    @Test func R37_readinessWaitsUntilOneOfTheSourcesModesRunsAndIsHandledOnce() {
        expectBothRunLoops([
            .addPortSource(1, order: 0, modes: ["A"]),
            .addTimer(2, .future, interval: 0, modes: ["default"]),
            .makeReady(1), .makeReady(1), .makeReady(1),
            .run("default", .zero, returnAfterSourceHandled: false),
            .query(1),
            .run("A", .zero, returnAfterSourceHandled: false),
            .run("A", .zero, returnAfterSourceHandled: false),
        ], trace: [
            returned("timedOut"), .portSourceState(1, valid: true),
            portPerformed(1, in: "A"), returned("timedOut", "A"),
            returned("timedOut", "A"),
        ])
    }

    @Test func R37_readinessFromACalloutInAnotherModeWaitsForTheSourcesMode() {
        expectBothRunLoops([
            .addPortSource(1, order: 0, modes: ["A"]),
            .addObserver(2, activities: Activity.beforeSources, order: 0, repeats: false, modes: ["default"]),
            .onCallout(2, [.makeReady(1), .run("default", .zero, returnAfterSourceHandled: false)]),
            .addTimer(3, .future, interval: 0, modes: ["default"]),
            .run("default", .zero, returnAfterSourceHandled: false),
            .run("A", .zero, returnAfterSourceHandled: false),
        ], trace: [
            observed(2, Activity.beforeSources), returned("timedOut", depth: 2), returned("timedOut"),
            portPerformed(1, in: "A"), returned("timedOut", "A"),
        ])
    }

    @Test func R37_aSourceInTwoModesIsHandledInTheFirstThatRunsOnly() {
        expectBothRunLoops([
            .addPortSource(1, order: 0, modes: ["A", "common"]),
            .makeReady(1),
            .run("A", .zero, returnAfterSourceHandled: false),
            .run("default", .zero, returnAfterSourceHandled: false),
            .makeReady(1),
            .run("default", .zero, returnAfterSourceHandled: false),
            .run("A", .zero, returnAfterSourceHandled: false),
        ], trace: [
            portPerformed(1, in: "A"), returned("timedOut", "A"),
            returned("timedOut"),
            portPerformed(1), returned("timedOut"),
            returned("timedOut", "A"),
        ])
    }

    @Test func R37_readinessSurvivesLeavingEveryModeAndIsGoneOnceInvalidated() {
        expectBothRunLoops([
            .addPortSource(1, order: 0, modes: ["default"]),
            .addPortSource(2, order: 0, modes: ["A"]),
            .makeReady(1), .makeReady(2),
            .remove(1, mode: "default"),
            .add(1, mode: "A"),
            .invalidate(2),
            .query(2),
            .run("A", .zero, returnAfterSourceHandled: false),
            .run("A", .zero, returnAfterSourceHandled: false),
        ], trace: [
            .portSourceState(2, valid: false),
            portPerformed(1, in: "A"), returned("timedOut", "A"),
            returned("timedOut", "A"),
        ])
    }

    /// Which of the two goes first is not compared (`KnownDifference.readyVersion1SourcesInNoFixedOrder`):
    /// each loop must handle one per run of one iteration, each once, in either order.
    @Test func R38_twoReadySourcesAreHandledOnePerIteration() {
        let program: [Op] = [
            .addObserver(9, activities: Self.iterationPhases, order: 0, repeats: true, modes: ["default"]),
            .addPortSource(1, order: 0, modes: ["default"]),
            .addPortSource(2, order: 0, modes: ["default"]),
            .makeReady(1), .makeReady(2),
            .run("default", .zero, returnAfterSourceHandled: false),
            .run("default", .zero, returnAfterSourceHandled: false),
            .run("default", .zero, returnAfterSourceHandled: false),
        ]
        let iteration = observed(9, [Activity.beforeTimers, Activity.beforeSources])
        func handling(_ first: Int, then second: Int) -> [TraceEvent] {
            iteration + [portPerformed(first), returned("timedOut")] + iteration + [portPerformed(second), returned("timedOut")]
                + iteration + [returned("timedOut")]
        }
        let comparison = Comparison(program, label: "R38")
        for (name, trace) in [("CF", comparison.cf), ("RunLoopKit", comparison.runLoopKit)] {
            let compared = Array(trace.prefix { $0 != .threadExit })
            #expect(
                compared == handling(1, then: 2) || compared == handling(2, then: 1),
                "\(name) did not handle one port source per iteration:\n\(comparison.report)")
        }
    }

    /// Beyond R38, as CF does it: sources watched when they became ready are handled in the order
    /// they became ready (RunLoopKit watches a mode's sources from its first run on).
    @Test func R38_sourcesWatchedWhenTheyBecameReadyAreHandledInThatOrder() {
        expectBothRunLoops([
            .addPortSource(1, order: 0, modes: ["default"]),
            .addPortSource(2, order: 0, modes: ["default"]),
            .run("default", .zero, returnAfterSourceHandled: false),
            .makeReady(2), .makeReady(1),
            .run("default", .zero, returnAfterSourceHandled: false),
            .run("default", .zero, returnAfterSourceHandled: false),
            .run("default", .zero, returnAfterSourceHandled: false),
        ], trace: [
            returned("timedOut"), portPerformed(2), returned("timedOut"), portPerformed(1), returned("timedOut"),
            returned("timedOut"),
        ])
    }

    @Test func R38_aPortSourceCountsAsAHandledSource() {
        expectBothRunLoops([
            .addObserver(9, activities: Self.iterationPhases, order: 0, repeats: true, modes: ["default"]),
            .addPortSource(1, order: 0, modes: ["default"]),
            .makeReady(1),
            .run("default", .unguarded, returnAfterSourceHandled: true),
            .makeReady(1),
            .run("default", .zero, returnAfterSourceHandled: false),
        ], trace: observed(9, [Activity.beforeTimers, Activity.beforeSources, Activity.beforeWaiting, Activity.afterWaiting]) + [
            portPerformed(1), returned("handledSource"),
        ] + observed(9, [Activity.beforeTimers, Activity.beforeSources]) + [
            portPerformed(1), returned("timedOut"),
        ])
    }

    @Test func R16_aModeHoldingOnlyAPortSourceIsNotEmptyUntilItLeavesOrIsInvalidated() {
        expectBothRunLoops([
            .addPortSource(1, order: 0, modes: ["A"]),
            .addPortSource(2, order: 0, modes: ["B"]),
            .addObserver(3, activities: Activity.entry, order: 0, repeats: true, modes: ["A", "B"]),
            .run("A", .zero, returnAfterSourceHandled: false),
            .run("B", .zero, returnAfterSourceHandled: false),
            .remove(1, mode: "A"),
            .invalidate(2),
            .run("A", .zero, returnAfterSourceHandled: false),
            .run("B", .zero, returnAfterSourceHandled: false),
            .query(1), .query(2),
        ], trace: [
            observed(3, Activity.entry, in: "A"), returned("timedOut", "A"),
            observed(3, Activity.entry, in: "B"), returned("timedOut", "B"),
            returned("finished", "A"), returned("finished", "B"),
            .portSourceState(1, valid: true), .portSourceState(2, valid: false),
        ])
    }

    /// Found by the random programs: RunLoopKit left common version-1 sources out of a mode made
    /// common later, so that mode counted as empty.
    @Test func R13_aCommonPortSourceJoinsAModeMadeCommonLaterAndLeavesWithCommon() {
        expectBothRunLoops([
            .addObserver(9, activities: Activity.entry, order: 0, repeats: true, modes: ["A"]),
            .addPortSource(1, order: 0, modes: ["common"]),
            .addCommonMode("A"),
            .makeReady(1),
            .run("A", .zero, returnAfterSourceHandled: false),
            .remove(1, mode: "common"),
            .run("A", .zero, returnAfterSourceHandled: false),
            .run("default", .zero, returnAfterSourceHandled: false),
        ], trace: [
            observed(9, Activity.entry, in: "A"), portPerformed(1, in: "A"), returned("timedOut", "A"),
            returned("finished", "A"), returned("finished"),
        ])
    }

    @Test func R22_aPortMadeReadyFromAnotherThreadEndsTheSleep() {
        expectBothRunLoops([
            .addObserver(9, activities: Activity.beforeWaiting | Activity.afterWaiting, order: 0, repeats: true, modes: ["default"]),
            .addPortSource(1, order: 0, modes: ["default"]),
            .addObserver(2, activities: Activity.beforeWaiting, order: 1, repeats: false, modes: ["default"]),
            .onCallout(2, [.onOtherThread([.makeReady(1)])]),
            .run("default", .huge, returnAfterSourceHandled: true),
        ], trace: [
            observed(9, Activity.beforeWaiting), observed(2, Activity.beforeWaiting), observed(9, Activity.afterWaiting),
            portPerformed(1), returned("handledSource"),
        ])
    }

    @Test func R22_aStopFromAPortsCalloutEndsTheRunItWoke() {
        expectBothRunLoops([
            .addObserver(9, activities: Activity.beforeWaiting | Activity.afterWaiting, order: 0, repeats: true, modes: ["default"]),
            .addPortSource(1, order: 0, modes: ["default"]),
            .addObserver(2, activities: Activity.beforeWaiting, order: 1, repeats: false, modes: ["default"]),
            .onCallout(2, [.onOtherThread([.makeReady(1)])]),
            .onCallout(1, [.stop]),
            .run("default", .huge, returnAfterSourceHandled: false),
        ], trace: [
            observed(9, Activity.beforeWaiting), observed(2, Activity.beforeWaiting), observed(9, Activity.afterWaiting),
            portPerformed(1), returned("stopped"),
        ])
    }

    @Test func R20_signalledVersion0SourcesRunBeforeAPortSourceInTheSameIterationWhichThenPolls() {
        expectBothRunLoops([
            .addObserver(9, activities: Self.iterationPhases, order: 0, repeats: true, modes: ["default"]),
            .addSource(1, order: 5, modes: ["default"]),
            .addPortSource(2, order: 0, modes: ["default"]),
            .makeReady(2), .signal(1),
            .run("default", .guarded, returnAfterSourceHandled: false),
        ], trace: [scheduled(1)] + observed(9, [Activity.beforeTimers, Activity.beforeSources]) + [
            performed(1), portPerformed(2),
        ] + observed(9, [Activity.beforeTimers, Activity.beforeSources, Activity.beforeWaiting, Activity.afterWaiting]) + [
            returned("stopped"),
        ])
    }

    @Test func R20_aPortMadeReadyByATimerIsHandledInTheNextIterationAfterWaiting() {
        expectBothRunLoops([
            .addObserver(9, activities: Self.iterationPhases, order: 0, repeats: true, modes: ["default"]),
            .addPortSource(1, order: 0, modes: ["default"]),
            .addTimer(2, .past, interval: 0, modes: ["default"]),
            .onCallout(2, [.makeReady(1)]),
            .run("default", .unguarded, returnAfterSourceHandled: true),
        ], trace: observed(9, [Activity.beforeTimers, Activity.beforeSources, Activity.beforeWaiting, Activity.afterWaiting]) + [
            fired(2),
        ] + observed(9, [Activity.beforeTimers, Activity.beforeSources, Activity.beforeWaiting, Activity.afterWaiting]) + [
            portPerformed(1), returned("handledSource"),
        ])
    }

    @Test func R20_aPortMadeReadyInItsOwnCalloutIsHandledInALaterIteration() {
        expectBothRunLoops([
            .addPortSource(1, order: 0, modes: ["default"]),
            .onCallout(1, [.makeReady(1)]),
            .makeReady(1),
            .run("default", .zero, returnAfterSourceHandled: false),
            .run("default", .zero, returnAfterSourceHandled: false),
            .run("default", .zero, returnAfterSourceHandled: false),
        ], trace: [
            portPerformed(1), returned("timedOut"), portPerformed(1), returned("timedOut"), returned("timedOut"),
        ])
    }

    /// The wait takes the port it woke for before the AfterWaiting observers (CF's wait reads
    /// it): a run nested in one of them does not handle it, the iteration does once they return.
    /// (The guard's stop, made before the wait, ends the outer run after it.)
    @Test func R38_aRunNestedInAfterWaitingLeavesThePortTheWaitTookToItsIteration() {
        expectBothRunLoops([
            .addObserver(9, activities: Activity.all, order: 1, repeats: true, modes: ["default"]),
            .addObserver(8, activities: Activity.afterWaiting, order: 0, repeats: false, modes: ["default"]),
            .addPortSource(1, order: 0, modes: ["default"]),
            .addTimer(3, .future, interval: 0, modes: ["default"]),
            .onCallout(8, [.run("default", .zero, returnAfterSourceHandled: true)]),
            .makeReady(1),
            .run("default", .guarded, returnAfterSourceHandled: false),
        ], trace: observed(9, [Activity.entry, Activity.beforeTimers, Activity.beforeSources, Activity.beforeWaiting]) + [
            observed(8, Activity.afterWaiting),
        ] + observed(9, [Activity.entry, Activity.beforeTimers, Activity.beforeSources, Activity.exit]) + [
            returned("timedOut", depth: 2), observed(9, Activity.afterWaiting), portPerformed(1), observed(9, Activity.exit),
            returned("stopped"),
        ])
    }

    /// The same with a run of another of the port's modes nested there: it does not see the port.
    @Test func R38_aRunOfAnotherModeNestedInAfterWaitingDoesNotHandleThePortTheWaitTook() {
        expectBothRunLoops([
            .addObserver(9, activities: Activity.all, order: 1, repeats: true, modes: ["default", "A"]),
            .addObserver(8, activities: Activity.afterWaiting, order: 0, repeats: false, modes: ["default"]),
            .addPortSource(1, order: 0, modes: ["default", "A"]),
            .addTimer(3, .future, interval: 0, modes: ["default"]),
            .onCallout(8, [.run("A", .zero, returnAfterSourceHandled: true)]),
            .makeReady(1),
            .run("default", .guarded, returnAfterSourceHandled: false),
        ], trace: observed(9, [Activity.entry, Activity.beforeTimers, Activity.beforeSources, Activity.beforeWaiting]) + [
            observed(8, Activity.afterWaiting),
        ] + observed(9, [Activity.entry, Activity.beforeTimers, Activity.beforeSources, Activity.exit], in: "A") + [
            returned("timedOut", "A", depth: 2), observed(9, Activity.afterWaiting), portPerformed(1), observed(9, Activity.exit),
            returned("stopped"),
        ])
    }
}
