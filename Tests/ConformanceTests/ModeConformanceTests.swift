import Testing

/// R4, R7–R9, R11–R16, R18 on the real CFRunLoop and on RunLoopKit: teardown, modes, common
/// modes and empty modes.
@Suite struct ModeConformanceTests {
    @Test func R4_threadExitCancelsEverySourceInEveryMode() {
        expectBothRunLoops([
            .addSource(1, order: 0, modes: ["default", "A"]),
            .addSource(2, order: 0, modes: ["common"]),
            .addTimer(3, .future, interval: 0, modes: ["B"]),
            .addObserver(4, activities: Activity.all, order: 0, repeats: true, modes: ["A"]),
        ], trace: [
            scheduled(1, in: "A"), scheduled(1), scheduled(2),
            .threadExit,
            cancelled(1, in: "A"), cancelled(1), cancelled(2),
        ], includingTeardown: true)
    }

    @Test func R7_runningAModeNeverUsedReturnsFinishedAtOnce() {
        expectBothRunLoops([
            .addObserver(1, activities: Activity.all, order: 0, repeats: true, modes: ["common"]),
            .run("B", .guarded, returnAfterSourceHandled: false),
            .queryModes,
        ], trace: [returned("finished", "B"), modes(["default"])])
    }

    @Test func R7_addingAnItemOrABlockCreatesItsMode() {
        expectBothRunLoops([
            .queryModes,
            .addTimer(1, .future, interval: 0, modes: ["A"]),
            .performBlock(2, modes: ["B"]),
            .addObserver(3, activities: Activity.entry, order: 0, repeats: true, modes: ["C"]),
            .queryModes,
        ], trace: [modes(["default"]), modes(["A", "B", "C", "default"])])
    }

    @Test func R8_allModesListsEveryModeEverUsedAndTheDefault() {
        expectBothRunLoops([
            .addSource(1, order: 0, modes: ["B"]),
            .remove(1, mode: "B"),
            .invalidate(1),
            .queryModes,
        ], trace: [scheduled(1, in: "B"), cancelled(1, in: "B"), modes(["B", "default"])])
    }

    @Test func R9_currentModeIsTheInnermostRunsMode() {
        expectBothRunLoops([
            .addObserver(1, activities: Activity.beforeSources, order: 0, repeats: false, modes: ["default"]),
            .addObserver(2, activities: Activity.beforeSources, order: 0, repeats: false, modes: ["A"]),
            .addTimer(3, .future, interval: 0, modes: ["default", "A"]),
            .onCallout(1, [.queryModes, .run("A", .zero, returnAfterSourceHandled: false), .queryModes]),
            .onCallout(2, [.queryModes]),
            .queryModes,
            .run("default", .zero, returnAfterSourceHandled: false),
            .queryModes,
        ], trace: [
            modes(["A", "default"]),
            observed(1, Activity.beforeSources),
            modes(["A", "default"], current: "default"),
            observed(2, Activity.beforeSources, in: "A"),
            modes(["A", "default"], current: "A"),
            returned("timedOut", "A", depth: 2),
            modes(["A", "default"], current: "default"),
            returned("timedOut"),
            modes(["A", "default"]),
        ])
    }

    /// C10: making a mode common creates it only if common items must join it; until then
    /// `allModes` (CF: CFRunLoopCopyAllModes) does not list it and running it finds no mode.
    @Test func C10_aModeMadeCommonExistsOnlyOnceACommonItemJoinsIt() {
        expectBothRunLoops([
            .addCommonMode("A"),
            .queryModes,
            .run("A", .zero, returnAfterSourceHandled: false),
            .queryModes,
            .addObserver(1, activities: Activity.entry, order: 0, repeats: true, modes: ["common"]),
            .queryModes,
        ], trace: [modes(["default"]), returned("finished", "A"), modes(["default"]), modes(["A", "default"])])
    }

    @Test func R11_makingAModeCommonTwiceAddsTheCommonItemsOnce() {
        expectBothRunLoops([
            .addTimer(9, .future, interval: 0, modes: ["A"]),
            .addSource(1, order: 0, modes: ["common"]),
            .addCommonMode("A"),
            .addCommonMode("A"),
            .addCommonMode("default"),
        ], trace: [scheduled(1), scheduled(1, in: "A")])
    }

    @Test func R12_anItemAddedToCommonJoinsEveryCommonMode() {
        expectBothRunLoops([
            .addTimer(9, .future, interval: 0, modes: ["A", "B"]),
            .addCommonMode("A"),
            .addCommonMode("B"),
            .addSource(1, order: 0, modes: ["common"]),
            .addObserver(2, activities: Activity.beforeSources, order: 0, repeats: true, modes: ["common"]),
            .signal(1),
            .run("B", .zero, returnAfterSourceHandled: false),
            .signal(1),
            .run("A", .zero, returnAfterSourceHandled: false),
        ], trace: [
            scheduled(1, in: "A"), scheduled(1, in: "B"), scheduled(1),
            observed(2, Activity.beforeSources, in: "B"), performed(1, in: "B"), returned("timedOut", "B"),
            observed(2, Activity.beforeSources, in: "A"), performed(1, in: "A"), returned("timedOut", "A"),
        ])
    }

    /// Found by this suite: RunLoopKit ignored a second add to `.common` of a common item.
    @Test func R12_addingACommonItemToCommonAgainRejoinsTheModesItLeft() {
        expectBothRunLoops([
            .addSource(1, order: 0, modes: ["common"]),
            .addObserver(2, activities: Activity.beforeSources, order: 0, repeats: true, modes: ["common"]),
            .addTimer(3, .future, interval: 0, modes: ["common"]),
            .remove(1, mode: "default"),
            .remove(2, mode: "default"),
            .remove(3, mode: "default"),
            .run("default", .zero, returnAfterSourceHandled: false),
            .add(1, mode: "common"),
            .add(2, mode: "common"),
            .add(3, mode: "common"),
            .run("default", .zero, returnAfterSourceHandled: false),
        ], trace: [
            scheduled(1), cancelled(1), returned("finished"),
            scheduled(1), observed(2, Activity.beforeSources), returned("timedOut"),
        ])
    }

    @Test func R13_aModeMadeCommonLaterGetsEveryCommonItem() {
        expectBothRunLoops([
            .addTimer(9, .future, interval: 0, modes: ["A"]),
            .addSource(1, order: 0, modes: ["common"]),
            .addObserver(2, activities: Activity.beforeSources, order: 0, repeats: true, modes: ["common"]),
            .addTimer(3, .past, interval: 0, modes: ["common"]),
            .signal(1),
            .addCommonMode("A"),
            .run("A", .zero, returnAfterSourceHandled: false),
        ], trace: [
            scheduled(1), scheduled(1, in: "A"),
            observed(2, Activity.beforeSources, in: "A"), performed(1, in: "A"), fired(3, in: "A"),
            returned("timedOut", "A"),
        ])
    }

    @Test func R14_removingFromCommonRemovesFromEveryCommonMode() {
        expectBothRunLoops([
            .addTimer(9, .future, interval: 0, modes: ["A"]),
            .addCommonMode("A"),
            .addSource(1, order: 0, modes: ["common"]),
            .addObserver(2, activities: Activity.all, order: 0, repeats: true, modes: ["common"]),
            .remove(1, mode: "common"),
            .remove(2, mode: "common"),
            .signal(1),
            .run("A", .zero, returnAfterSourceHandled: false),
            .run("default", .zero, returnAfterSourceHandled: false),
        ], trace: [
            scheduled(1, in: "A"), scheduled(1), cancelled(1, in: "A"), cancelled(1),
            returned("timedOut", "A"), returned("finished"),
        ])
    }

    @Test func R14_removingFromOneModeLeavesTheOthers() {
        expectBothRunLoops([
            .addSource(1, order: 0, modes: ["default", "A"]),
            .remove(1, mode: "A"),
            .signal(1),
            .run("A", .zero, returnAfterSourceHandled: false),
            .run("default", .zero, returnAfterSourceHandled: false),
        ], trace: [
            scheduled(1, in: "A"), scheduled(1), cancelled(1, in: "A"),
            returned("finished", "A"), performed(1), returned("timedOut"),
        ])
    }

    /// Found by this suite: RunLoopKit checked membership once per blocks step, CF per block.
    @Test func R15_aModeMadeCommonByABlockRunsTheCommonBlocksAfterIt() {
        expectBothRunLoops([
            .performBlock(1, modes: ["common"]),
            .performBlock(2, modes: ["B"]),
            .performBlock(3, modes: ["common"]),
            .performBlock(4, modes: ["B"]),
            .onCallout(2, [.addCommonMode("B")]),
            .run("B", .zero, returnAfterSourceHandled: false),
            .run("B", .zero, returnAfterSourceHandled: false),
        ], trace: [
            // Block 1 was passed over before B became common: it waits for the next step.
            ran(2, in: "B"), ran(3, in: "B"), ran(4, in: "B"), ran(1, in: "B"), returned("timedOut", "B"),
            returned("finished", "B"),
        ])
    }

    @Test func R16_observersDoNotKeepAModeAlive() {
        expectBothRunLoops([
            .addObserver(1, activities: Activity.all, order: 0, repeats: true, modes: ["A"]),
            .run("A", .guarded, returnAfterSourceHandled: false),
        ], trace: [returned("finished", "A")])
    }

    @Test func R16_invalidatedItemsNoLongerCount() {
        expectBothRunLoops([
            .addTimer(1, .future, interval: 0, modes: ["A"]),
            .addSource(2, order: 0, modes: ["A"]),
            .addObserver(3, activities: Activity.all, order: 0, repeats: true, modes: ["A"]),
            .invalidate(1),
            .invalidate(2),
            .run("A", .guarded, returnAfterSourceHandled: false),
        ], trace: [scheduled(2, in: "A"), cancelled(2, in: "A"), returned("finished", "A")])
    }

    @Test func R16_aCommonBlockKeepsOnlyCommonModesAlive() {
        expectBothRunLoops([
            .addObserver(1, activities: Activity.entry | Activity.exit, order: 0, repeats: true, modes: ["A"]),
            .performBlock(2, modes: ["common"]),
            .run("A", .zero, returnAfterSourceHandled: false),
            .addCommonMode("A"),
            .run("A", .zero, returnAfterSourceHandled: false),
        ], trace: [
            returned("finished", "A"),
            observed(1, Activity.entry, in: "A"), ran(2, in: "A"), observed(1, Activity.exit, in: "A"),
            returned("timedOut", "A"),
        ])
    }

    @Test func R18_anEmptyModeReturnsFinishedWithoutEntryOrExit() {
        expectBothRunLoops([
            .addObserver(1, activities: Activity.all, order: 0, repeats: true, modes: ["default"]),
            .run("default", .zero, returnAfterSourceHandled: false),
            .addTimer(2, .past, interval: 0, modes: ["default"]),
            .run("default", .zero, returnAfterSourceHandled: false),
            .run("default", .huge, returnAfterSourceHandled: false),
        ], trace: [
            returned("finished"),
            observed(1, Activity.entry), observed(1, Activity.beforeTimers), observed(1, Activity.beforeSources),
            fired(2), observed(1, Activity.exit), returned("timedOut"),
            returned("finished"),
        ])
    }
}
