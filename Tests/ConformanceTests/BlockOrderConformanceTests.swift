import Testing

/// R15, R54, R55, R57 (C22, C97, C100) on the real CFRunLoop and on RunLoopKit: the order of
/// perform-blocks spread over several modes and the common modes, which RunLoopKit keeps in a
/// queue per mode (W19) and CF in one list.
@Suite struct BlockOrderConformanceTests {
    @Test func R55_blocksOfTheModeAndOfCommonRunInTheOrderTheyWereScheduled() {
        expectBothRunLoops([
            .addCommonMode("A"),
            .performBlock(1, modes: ["A"]),
            .performBlock(2, modes: ["common"]),
            .performBlock(3, modes: ["default"]),
            .performBlock(4, modes: ["B"]),
            .performBlock(5, modes: ["A", "common"]),
            .performBlock(6, modes: ["common"]),
            .performBlock(7, modes: ["A"]),
            .run("A", .zero, returnAfterSourceHandled: false),
            .run("default", .zero, returnAfterSourceHandled: false),
            .run("B", .zero, returnAfterSourceHandled: false),
            .run("A", .zero, returnAfterSourceHandled: false),
        ], trace: [
            ran(1, in: "A"), ran(2, in: "A"), ran(5, in: "A"), ran(6, in: "A"), ran(7, in: "A"),
            returned("timedOut", "A"),
            ran(3), returned("timedOut"),
            ran(4, in: "B"), returned("timedOut", "B"),
            returned("finished", "A"),
        ])
    }

    /// R15: a `.common` block runs in whichever mode is common when its step comes (here one made
    /// common after the block was scheduled), and only once.
    @Test func R15_C22_aCommonBlockRunsInAModeMadeCommonAfterItWasScheduled() {
        expectBothRunLoops([
            .addTimer(9, .future, interval: 0, modes: ["A"]),
            .performBlock(1, modes: ["common"]),
            .run("A", .zero, returnAfterSourceHandled: false),
            .addCommonMode("A"),
            .run("A", .zero, returnAfterSourceHandled: false),
            .run("default", .zero, returnAfterSourceHandled: false),
        ], trace: [
            returned("timedOut", "A"),
            ran(1, in: "A"), returned("timedOut", "A"),
            returned("finished"),
        ])
    }

    @Test func R15_C97_aBlockThatMakesItsModeCommonLetsTheLaterCommonBlocksOfTheStepJoin() {
        expectBothRunLoops([
            .addTimer(9, .future, interval: 0, modes: ["A", "default"]),
            .performBlock(1, modes: ["common"]),
            .performBlock(2, modes: ["A"]),
            .onCallout(2, [.addCommonMode("A")]),
            .performBlock(3, modes: ["common"]),
            .performBlock(4, modes: ["A"]),
            .onCallout(4, [.performBlock(6, modes: ["common"])]),
            .performBlock(5, modes: ["common", "B"]),
            .run("A", .zero, returnAfterSourceHandled: false),
            .run("default", .zero, returnAfterSourceHandled: false),
            .run("B", .zero, returnAfterSourceHandled: false),
        ], trace: [
            ran(2, in: "A"), ran(3, in: "A"), ran(4, in: "A"), ran(5, in: "A"),
            ran(1, in: "A"), ran(6, in: "A"),  // the next blocks step of the same pass (R20 step 12)
            returned("timedOut", "A"),
            returned("timedOut"),
            returned("finished", "B"),
        ])
    }

    @Test func R57_C100_aBlockForSeveralModesRunsOnceAndNoLongerKeepsTheOthersAlive() {
        expectBothRunLoops([
            .performBlock(1, modes: ["A", "B"]),
            .performBlock(2, modes: ["B"]),
            .performBlock(3, modes: ["common", "C"]),
            .run("B", .zero, returnAfterSourceHandled: false),
            .run("A", .zero, returnAfterSourceHandled: false),
            .run("C", .zero, returnAfterSourceHandled: false),
            .run("default", .zero, returnAfterSourceHandled: false),
            .run("B", .zero, returnAfterSourceHandled: false),
        ], trace: [
            ran(1, in: "B"), ran(2, in: "B"), returned("timedOut", "B"),
            returned("finished", "A"),
            ran(3, in: "C"), returned("timedOut", "C"),
            returned("finished"),
            returned("finished", "B"),
        ])
    }
}
