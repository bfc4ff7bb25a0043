import Testing

/// C78 with a repeating timer whose interval (`ProgramGenerator.quickInterval`) has always passed
/// by the next timers step: it fires once in every run, nested runs included, never in its own
/// callout (C81), and its date, which then depends on when it fired, is never reported.
@Suite struct QuickTimerConformanceTests {
    @Test func C78_aQuickRepeatingTimerFiresOnceInEveryRun() {
        expectBothRunLoops([
            .addTimer(1, .past, interval: ProgramGenerator.quickInterval, modes: ["default", "A"]),
            .addObserver(2, activities: Activity.beforeSources, order: 0, repeats: false, modes: ["default"]),
            .onCallout(1, [.run("A", .zero, returnAfterSourceHandled: false)]),
            .onCallout(2, [.run("A", .zero, returnAfterSourceHandled: false)]),
            .run("default", .zero, returnAfterSourceHandled: false),
            .run("A", .zero, returnAfterSourceHandled: false),
            .nextTimerFireDate("A"),
            .query(1),
        ], trace: [
            // Due again in the outer run's wait, after firing in the run nested in the observer.
            observed(2, Activity.beforeSources), fired(1, in: "A"), returned("timedOut", "A", depth: 3),
            returned("timedOut", "A", depth: 2), fired(1), returned("timedOut"),
            fired(1, in: "A"), returned("timedOut", "A"),
            .nextTimer(mode: "A", timers: [1]), .timerState(1, valid: true, fireSlot: nil),
        ])
    }

    @Test func C80_aQuickTimerMovedAheadStops() {
        expectBothRunLoops([
            .addTimer(1, .past, interval: ProgramGenerator.quickInterval, modes: ["default"]),
            .run("default", .zero, returnAfterSourceHandled: false),
            .setFireDate(1, .future),
            .run("default", .zero, returnAfterSourceHandled: false),
            .setFireDate(1, .past),
            .run("default", .zero, returnAfterSourceHandled: false),
            .run("default", .zero, returnAfterSourceHandled: false),
        ], trace: [
            fired(1), returned("timedOut"), returned("timedOut"), fired(1), returned("timedOut"), fired(1), returned("timedOut"),
        ])
    }
}
