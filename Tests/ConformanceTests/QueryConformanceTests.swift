import Testing

/// C21 and C84 on the real CFRunLoop and on RunLoopKit: what contains answers for named modes
/// and the common pseudo-mode, and which timer a mode's next timer fire date belongs to.
@Suite struct QueryConformanceTests {
    private func contained(_ id: Int, _ mode: String = "default", _ answer: Bool = true) -> TraceEvent {
        .containment(id, mode: mode, contained: answer)
    }

    private func next(_ timers: [Int]?, in mode: String = "default") -> TraceEvent { .nextTimer(mode: mode, timers: timers) }

    @Test func C21_aCommonTimerRemovedByNameFromItsLastModeIsNotContainedYetStaysCommon() {
        expectBothRunLoops([
            .addTimer(1, .future, interval: 0, modes: ["common"]),
            .contains(1, mode: "common"), .contains(1, mode: "default"),
            .remove(1, mode: "default"),
            .contains(1, mode: "common"), .contains(1, mode: "default"),
            .addCommonMode("A"),
            .contains(1, mode: "A"), .contains(1, mode: "common"),
        ], trace: [
            contained(1, "common"), contained(1), contained(1, "common", false), contained(1, "default", false),
            contained(1, "A"), contained(1, "common"),
        ])
    }

    @Test func C21_aCommonSourceOrObserverRemovedByNameFromEveryModeIsStillContainedInTheCommonModes() {
        expectBothRunLoops([
            .addSource(1, order: 0, modes: ["common"]),
            .addObserver(2, activities: Activity.entry, order: 0, repeats: true, modes: ["common"]),
            .remove(1, mode: "default"), .remove(2, mode: "default"),
            .contains(1, mode: "common"), .contains(2, mode: "common"), .contains(1, mode: "default"), .contains(2, mode: "default"),
            .addCommonMode("A"),
            .contains(1, mode: "A"), .contains(2, mode: "A"),
        ], trace: [
            scheduled(1), cancelled(1),
            contained(1, "common"), contained(2, "common"), contained(1, "default", false), contained(2, "default", false),
            scheduled(1, in: "A"), contained(1, "A"), contained(2, "A"),
        ])
    }

    @Test func C21_invalidatedItemsAreInNoModeAndATimerIsNoCommonItem() {
        expectBothRunLoops([
            .addTimer(1, .future, interval: 0, modes: ["common", "A"]),
            .addSource(2, order: 0, modes: ["A"]),
            .addObserver(3, activities: Activity.entry, order: 0, repeats: true, modes: ["A", "B"]),
            .invalidate(1), .invalidate(2), .invalidate(3),
            .contains(1, mode: "A"), .contains(1, mode: "default"), .contains(1, mode: "common"),
            .contains(2, mode: "A"), .contains(3, mode: "B"),
        ], trace: [
            scheduled(2, in: "A"), cancelled(2, in: "A"),
            contained(1, "A", false), contained(1, "default", false), contained(1, "common", false),
            contained(2, "A", false), contained(3, "B", false),
        ])
    }

    @Test func C84_theNextTimerFireDateIsTheEarliestTimersOfTheModeAndNoneForTheCommonPseudoMode() {
        expectBothRunLoops([
            .nextTimerFireDate("default"),
            .addTimer(1, .future, interval: 0, modes: ["default"]),
            .addTimer(2, .future, interval: 0, modes: ["common", "A"]),
            .nextTimerFireDate("default"), .nextTimerFireDate("A"), .nextTimerFireDate("common"), .nextTimerFireDate("B"),
            .setFireDate(2, .past),
            .nextTimerFireDate("default"),
            .remove(2, mode: "default"),
            .nextTimerFireDate("default"), .nextTimerFireDate("A"),
            .queryModes,
        ], trace: [
            next(nil), next([1]), next([2], in: "A"), next(nil, in: "common"), next(nil, in: "B"),
            next([2]), next([1]), next([2], in: "A"), modes(["A", "default"]),
        ])
    }

    @Test func C84_aFiringTimerKeepsItsDateUntilItsCalloutMovesIt() {
        expectBothRunLoops([
            .addTimer(1, .past, interval: 0, modes: ["default"]),
            .addTimer(2, .future, interval: 0, modes: ["default"]),
            .onCallout(1, [.nextTimerFireDate("default"), .setFireDate(1, .future), .nextTimerFireDate("default")]),
            .run("default", .zero, returnAfterSourceHandled: false),
            .nextTimerFireDate("default"),
        ], trace: [fired(1), next([1]), next([2]), returned("timedOut"), next([2])])
    }

    @Test func C84_aRepeatingTimerThatFiredIsDueAnIntervalLater() {
        expectBothRunLoops([
            .addTimer(1, .past, interval: 1_000_000, modes: ["default"]),
            .addTimer(2, .future, interval: 0, modes: ["A"]),
            .onCallout(1, [.nextTimerFireDate("default")]),
            .run("default", .zero, returnAfterSourceHandled: false),
            .nextTimerFireDate("default"),
            .add(2, mode: "default"),
            .nextTimerFireDate("default"),
        ], trace: [fired(1), next([1]), returned("timedOut"), next([1]), next([2])])
    }
}
