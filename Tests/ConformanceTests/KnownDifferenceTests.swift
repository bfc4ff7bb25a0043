import Testing

/// The evidence for `KnownDifference`: each difference that a program can show deterministically
/// is shown here — CF does one thing, RunLoopKit the other, and `KnownDifference.risked(by:)`
/// flags the program, so the generator and the shrinker stay clear of it. If CF or RunLoopKit
/// changes so that an entry no longer holds, its test fails and the entry must go.
@Suite struct KnownDifferenceTests {
    /// A program, what CF does with it and what RunLoopKit does (before the thread exits).
    struct Demonstration {
        let program: [Op]
        let cf: [TraceEvent]
        let runLoopKit: [TraceEvent]
    }

    @Test(arguments: KnownDifference.allCases)
    func theDifferenceHoldsAndTheGeneratorAvoidsIt(_ difference: KnownDifference) {
        guard let demonstration = Self.demonstration(of: difference) else {
            // Shown by another test, or not showable deterministically; see `shownElsewhere`.
            #expect(Self.shownElsewhere[difference] != nil, "\(difference) has neither a demonstration nor a pointer to one")
            return
        }
        let comparison = Comparison(demonstration.program, label: "\(difference)")
        let cf = Array(comparison.cf.prefix { $0 != .threadExit })
        let runLoopKit = Array(comparison.runLoopKit.prefix { $0 != .threadExit })
        #expect(cf == demonstration.cf, "CF no longer does this: \(difference.reason)\n\(comparison.report)")
        #expect(runLoopKit == demonstration.runLoopKit, "RunLoopKit no longer does this: \(difference.reason)\n\(comparison.report)")
        #expect(KnownDifference.risked(by: demonstration.program).contains(difference), "the generator's check misses \(difference)")
    }

    /// `oneWakeReasonPerIteration` with a port source instead of a wake-up: the timer's timerfd
    /// became ready first, so CF fires it in the first run and handles the port in the second;
    /// RunLoopKit does both in the first.
    @Test func oneReadyDescriptorPerIterationAlsoSeparatesDueTimersFromAPortSource() {
        let program: [Op] = [
            .addTimer(1, .past, interval: 0, modes: ["default"]),
            .addPortSource(2, order: 0, modes: ["default"]),
            .makeReady(2),
            .run("default", .zero, returnAfterSourceHandled: false),
            .run("default", .zero, returnAfterSourceHandled: false),
        ]
        let comparison = Comparison(program, label: "oneWakeReasonPerIteration with a port")
        #expect(
            comparison.cf.prefix { $0 != .threadExit } == [fired(1), returned("timedOut"), portPerformed(2), returned("timedOut")],
            "CF no longer does this\n\(comparison.report)")
        #expect(
            comparison.runLoopKit.prefix { $0 != .threadExit } == [fired(1), portPerformed(2), returned("timedOut"), returned("timedOut")],
            "RunLoopKit no longer does this\n\(comparison.report)")
        #expect(KnownDifference.risked(by: program).contains(.oneWakeReasonPerIteration), "the generator's check misses it")
    }

    /// `pastFireDatesClampedToNow` next to a quick timer: a past date set after it fired is "now"
    /// in CF, later than the quick timer's next date, but stays long gone in RunLoopKit.
    @Test func aPastDateSetAfterAQuickTimerFiredComesAfterItInCF() {
        let program: [Op] = [
            .addTimer(1, .past, interval: ProgramGenerator.quickInterval, modes: ["default"]),
            .run("default", .zero, returnAfterSourceHandled: false),
            .addTimer(2, .past, interval: 0, modes: ["default"]),
            .run("default", .zero, returnAfterSourceHandled: false),
        ]
        let comparison = Comparison(program, label: "pastFireDatesClampedToNow with a quick timer")
        let start = [fired(1), returned("timedOut")]
        #expect(
            comparison.cf.prefix { $0 != .threadExit } == start + [fired(1), fired(2), returned("timedOut")],
            "CF no longer does this\n\(comparison.report)")
        #expect(
            comparison.runLoopKit.prefix { $0 != .threadExit } == start + [fired(2), fired(1), returned("timedOut")],
            "RunLoopKit no longer does this\n\(comparison.report)")
        #expect(KnownDifference.risked(by: program).contains(.pastFireDatesClampedToNow), "the generator's check misses it")
    }

    /// `invalidatedItemIsNoCommonItem` without an invalidate call: a one-shot common observer
    /// that removes itself from its last mode in its callout, which CF then invalidates.
    @Test func aOneShotObserverThatLeftEveryModeStaysCommonInCF() {
        let program: [Op] = [
            .addObserver(1, activities: Activity.entry, order: 0, repeats: false, modes: ["common"]),
            .addTimer(9, .future, interval: 0, modes: ["default"]),
            .onCallout(1, [.remove(1, mode: "default")]),
            .run("default", .zero, returnAfterSourceHandled: false),
            .query(1), .contains(1, mode: "common"),
        ]
        let comparison = Comparison(program, label: "invalidatedItemIsNoCommonItem with a one-shot observer")
        let start = [observed(1, Activity.entry), returned("timedOut"), .observerState(1, valid: false)]
        #expect(
            comparison.cf.prefix { $0 != .threadExit } == start + [.containment(1, mode: "common", contained: true)],
            "CF no longer does this\n\(comparison.report)")
        #expect(
            comparison.runLoopKit.prefix { $0 != .threadExit } == start + [.containment(1, mode: "common", contained: false)],
            "RunLoopKit no longer does this\n\(comparison.report)")
        #expect(KnownDifference.risked(by: program).contains(.invalidatedItemIsNoCommonItem), "the generator's check misses it")
    }

    /// `removedTimerNeverWakes` without a remove: a one-shot timer in A and B that fired in A is
    /// gone from B, but B's timerfd still holds its date, so CF's later run of B wakes once for
    /// nothing.
    @Test func aOneShotTimerThatFiredInAnotherModeStillWakesTheLoopInCF() {
        let program: [Op] = [
            .addObserver(9, activities: Activity.beforeWaiting | Activity.afterWaiting, order: 0, repeats: true, modes: ["A", "B"]),
            .addSource(2, order: 0, modes: ["B"]),
            .addTimer(1, .past, interval: 0, modes: ["A", "B"]),
            .run("A", .zero, returnAfterSourceHandled: false),
            .run("B", .short, returnAfterSourceHandled: false),
        ]
        let comparison = Comparison(program, label: "removedTimerNeverWakes with a one-shot timer")
        let waits = observed(9, [Activity.beforeWaiting, Activity.afterWaiting], in: "B")
        let start = [scheduled(2, in: "B"), fired(1, in: "A"), returned("timedOut", "A")] + waits
        #expect(
            comparison.cf.prefix { $0 != .threadExit } == start + waits + [returned("timedOut", "B")],
            "CF no longer does this\n\(comparison.report)")
        #expect(
            comparison.runLoopKit.prefix { $0 != .threadExit } == start + [returned("timedOut", "B")],
            "RunLoopKit no longer does this\n\(comparison.report)")
        #expect(KnownDifference.risked(by: program).contains(.removedTimerNeverWakes), "the generator's check misses it")
    }

    /// `firingTimerNeverWakesRunNestedInItsCallout` needs the firing timer in the nested run's
    /// mode: neither a timer in one mode only nor another timer's callout shows it, and neither
    /// is flagged for it.
    @Test(arguments: [
        [Op.addTimer(1, .past, interval: 1_000_000, modes: ["A"]), .addTimer(2, .future, interval: 0, modes: ["B"])],
        [Op.addTimer(2, .past, interval: 1_000_000, modes: ["A", "B"]), .addTimer(1, .past, interval: 0, modes: ["A"])],
    ])
    func aRunNestedWhereTheFiringTimerIsNotWakesOnlyAtItsTimeout(_ timers: [Op]) {
        let program: [Op] = [
            .addObserver(9, activities: Activity.beforeWaiting | Activity.afterWaiting, order: 0, repeats: true, modes: ["B"]),
        ] + timers + [
            .onCallout(1, [.run("B", .short, returnAfterSourceHandled: false)]),
            .run("A", .zero, returnAfterSourceHandled: false),
        ]
        let comparison = Comparison(program, label: "a run nested where the firing timer is not")
        #expect(comparison.agrees, "\(comparison.report)")
        #expect(!KnownDifference.risked(by: program).contains(.firingTimerNeverWakesRunNestedInItsCallout))
    }

    /// Where the differences without a program here are shown, or why they cannot be.
    static let shownElsewhere: [KnownDifference: String] = [
        .sourceInOneLoopOnly: "RunLoopKit stops the process; RunLoopKitTests' bad-input exit tests show it",
        .runningCommonStops: "RunLoopKit stops the process; RunLoopKitTests' bad-input exit tests show it",
        .blockForNoModeStops: "RunLoopKit stops the process; RunLoopKitTests' bad-input exit tests show it",
        .runningAnotherThreadsLoopStops: "RunLoopKit stops the process; RunLoopKitTests' bad-input exit tests show it",
        .negativeIntervalStops: "RunLoopKit stops the process; RunLoopKitTests' bad-input exit tests show it",
        .intervalUnderANanosecondIsOne: "CF halts the process at the first fire; RunLoopKitTests' R47_aRepeatingIntervalUnderANanosecondIsOne shows RunLoopKit's side",
        .pollNeverWaits: "a matter of an instant another thread would have to hit; RunLoopKitTests' R23 test shows RunLoopKit's side",
        .itemInSecondLoopStops: "RunLoopKit stops the process; RunLoopKitTests' bad-input exit tests show it",
        .toleranceHonoured: "a matter of timing (ToleranceTests in RunLoopKitTests); the harness never sets a tolerance",
        .commonItemsInHashOrder: "CF's order depends on object addresses, so it is not repeatable",
        .timersInAHeap: "cost only, the firing order is the same: `runloop-bench scaling` measures it",
        .fixedDescriptorsPerLoop: "RunLoopKitTests' keepAliveThreadsLoopHoldsThreeDescriptorsAndClosesThemWhenItExits",
        .timeoutInTheWait: "cost only, the results are the same: every timed run of this suite uses it",
        .runReturnsWhenStopped: "Foundation, not CF (CFRunLoopRun returns when stopped, as run() does): RunLoopKitTests' R31 tests",
        .publicWakeUpObserversAndSources: "Foundation's API, not CF's: the whole RunLoopKit test suite uses the public calls",
        .deadLoopKeepsNothing: "KnownDifferenceObjectTests.deadLoopKeepsNothing (a dead loop is outside the harness's programs)",
        .descriptorLeftToTheHandler: "KnownDifferenceObjectTests.descriptorLeftToTheHandler",
        .sourcesNeverMerge: "KnownDifferenceObjectTests.sourcesNeverMerge (the harness gives every source its own info)",
    ]

    static func demonstration(of difference: KnownDifference) -> Demonstration? {
        switch difference {
        case .lostHandledSource:
            // CF's iteration counts as "no source", so it does not poll: it waits at once.
            let start = [scheduled(1), scheduled(2)] + observed(9, [Activity.beforeTimers, Activity.beforeSources])
                + [performed(1), cancelled(2)]
            let end = observed(9, [Activity.beforeWaiting, Activity.afterWaiting]) + [returned("stopped")]
            return Demonstration(program: [
                .addObserver(9, activities: Activity.all & ~(Activity.entry | Activity.exit), order: 0, repeats: true, modes: ["default"]),
                .addSource(1, order: 0, modes: ["default"]),
                .addSource(2, order: 1, modes: ["default"]),
                .onCallout(1, [.invalidate(2)]),
                .signal(1), .signal(2),
                .run("default", .guarded, returnAfterSourceHandled: false),
            ], cf: start + end,
            runLoopKit: start + observed(9, [Activity.beforeTimers, Activity.beforeSources]) + end)
        case .oneWakeReasonPerIteration:
            return Demonstration(program: [
                .addObserver(1, activities: Activity.beforeSources, order: 0, repeats: false, modes: ["default"]),
                .onCallout(1, [.wakeUp, .addTimer(2, .past, interval: 0, modes: ["default"])]),
                .addTimer(9, .future, interval: 0, modes: ["default"]),
                .run("default", .zero, returnAfterSourceHandled: false),
                .run("default", .zero, returnAfterSourceHandled: false),
            ], cf: [observed(1, Activity.beforeSources), returned("timedOut"), fired(2), returned("timedOut")],
            runLoopKit: [observed(1, Activity.beforeSources), fired(2), returned("timedOut"), returned("timedOut")])
        case .pastFireDatesClampedToNow:
            return Demonstration(program: [
                .addTimer(1, .at(-100), interval: 0, modes: ["default"]),
                .addTimer(2, .at(-200), interval: 0, modes: ["default"]),
                .run("default", .zero, returnAfterSourceHandled: false),
            ], cf: [fired(1), fired(2), returned("timedOut")], runLoopKit: [fired(2), fired(1), returned("timedOut")])
        case .commonBlockCreatesMode:
            return Demonstration(
                program: [.performBlock(1, modes: ["common"]), .queryModes],
                cf: [modes(["common", "default"])], runLoopKit: [modes(["default"])])
        case .timerRemovedFromRunningModeStillFires:
            return Demonstration(program: [
                .addTimer(1, .past, interval: 1_000_000, modes: ["default"]),
                .addTimer(2, .past, interval: 0, modes: ["default", "A"]),
                .onCallout(1, [.remove(2, mode: "default")]),
                .run("default", .zero, returnAfterSourceHandled: false),
            ], cf: [fired(1), fired(2), returned("timedOut")], runLoopKit: [fired(1), returned("timedOut")])
        case .timerRedatedWhileFiringNotArmedInOtherModes:
            return Demonstration(program: [
                .addTimer(1, .past, interval: 1_000_000, modes: ["default", "B"]),
                .onCallout(1, [.setFireDate(1, .past), .addTimer(2, .future, interval: 0, modes: ["B"])]),
                .run("default", .zero, returnAfterSourceHandled: false),
                .run("B", .zero, returnAfterSourceHandled: false),
            ], cf: [fired(1), returned("timedOut"), returned("timedOut", "B")],
            runLoopKit: [fired(1), returned("timedOut"), fired(1, in: "B"), returned("timedOut", "B")])
        case .firingTimerNeverWakesRunNestedInItsCallout:
            // B's timerfd still holds timer 1's passed date while its callout runs B: CF wakes at
            // once for nothing, then at the timeout (+50 ms); RunLoopKit sleeps until the timeout.
            let waits = observed(9, [Activity.beforeWaiting, Activity.afterWaiting], in: "B")
            let end = [returned("timedOut", "B", depth: 2), returned("timedOut", "A")]
            return Demonstration(program: [
                .addObserver(9, activities: Activity.beforeWaiting | Activity.afterWaiting, order: 0, repeats: true, modes: ["B"]),
                .addTimer(1, .past, interval: 1_000_000, modes: ["A", "B"]),
                .onCallout(1, [.run("B", .short, returnAfterSourceHandled: false)]),
                .run("A", .zero, returnAfterSourceHandled: false),
            ], cf: [fired(1, in: "A")] + waits + waits + end, runLoopKit: [fired(1, in: "A")] + waits + end)
        case .blockListDetached:
            return Demonstration(program: [
                .addTimer(9, .future, interval: 0, modes: ["A"]),
                .performBlock(1, modes: ["default"]),
                .performBlock(2, modes: ["A"]),
                .onCallout(1, [.run("A", .zero, returnAfterSourceHandled: false)]),
                .run("default", .zero, returnAfterSourceHandled: false),
                .run("A", .zero, returnAfterSourceHandled: false),
            ], cf: [
                ran(1), returned("timedOut", "A", depth: 2), returned("timedOut"), ran(2, in: "A"), returned("timedOut", "A"),
            ], runLoopKit: [
                ran(1), ran(2, in: "A"), returned("timedOut", "A", depth: 2), returned("timedOut"), returned("timedOut", "A"),
            ])
        case .stoppedRunSleepsAfterANestedRunTookItsWakeUp:
            // CF sleeps until the deadline and reports timedOut; RunLoopKit returns stopped at once.
            let start = [observed(9, Activity.entry), observed(1, Activity.beforeSources), returned("timedOut", "A", depth: 2)]
            return Demonstration(program: [
                .addObserver(9, activities: Activity.entry, order: 0, repeats: true, modes: ["default"]),
                .addObserver(1, activities: Activity.beforeSources, order: 1, repeats: false, modes: ["default"]),
                .addTimer(2, .future, interval: 0, modes: ["default", "A"]),
                .onCallout(1, [.stop, .run("A", .zero, returnAfterSourceHandled: false)]),
                .run("default", .short, returnAfterSourceHandled: false),
            ], cf: start + [returned("timedOut")], runLoopKit: start + [returned("stopped")])
        case .readyVersion1SourcesUnwatchedInNoFixedOrder:
            // RunLoopKit watches 1 since the run in default, and 2 only once A runs: it notices
            // 1 first. CF had both in A's epoll set when they became ready: 2 first.
            return Demonstration(program: [
                .addPortSource(1, order: 0, modes: ["default", "A"]),
                .addPortSource(2, order: 0, modes: ["A"]),
                .run("default", .zero, returnAfterSourceHandled: false),
                .makeReady(2), .makeReady(1),
                .run("A", .zero, returnAfterSourceHandled: false),
                .run("A", .zero, returnAfterSourceHandled: false),
            ], cf: [
                returned("timedOut"), portPerformed(2, in: "A"), returned("timedOut", "A"), portPerformed(1, in: "A"),
                returned("timedOut", "A"),
            ], runLoopKit: [
                returned("timedOut"), portPerformed(1, in: "A"), returned("timedOut", "A"), portPerformed(2, in: "A"),
                returned("timedOut", "A"),
            ])
        case .commonModesNameIsThePseudoMode:
            // CF: a real mode of that name (the harness passes a copy, not the constant).
            return Demonstration(
                program: [.addTimer(1, .future, interval: 0, modes: ["kCFRunLoopCommonModes"]), .queryModes],
                cf: [modes(["common", "default"])], runLoopKit: [modes(["default"])])
        case .removedTimerNeverWakes:
            // CF's timerfd stays armed for the removed timer: it wakes at +20 ms for nothing,
            // then sleeps until the run's timeout (+50 ms). RunLoopKit sleeps until the timeout.
            let waits = [Activity.beforeWaiting, Activity.afterWaiting]
            return Demonstration(program: [
                .addObserver(9, activities: Activity.beforeWaiting | Activity.afterWaiting, order: 0, repeats: true, modes: ["default"]),
                .addSource(2, order: 0, modes: ["default"]),
                .addTimer(1, .at(0.02), interval: 0, modes: ["default"]),
                .remove(1, mode: "default"),
                .run("default", .short, returnAfterSourceHandled: false),
            ], cf: [scheduled(2)] + observed(9, waits) + observed(9, waits) + [returned("timedOut")],
            runLoopKit: [scheduled(2)] + observed(9, waits) + [returned("timedOut")])
        case .invalidatedItemIsNoCommonItem:
            // Common items removed by name from the one common mode, then invalidated.
            let asked: [Op] = [.contains(1, mode: "common"), .contains(2, mode: "common")]
            return Demonstration(program: [
                .addSource(1, order: 0, modes: ["common"]),
                .addObserver(2, activities: Activity.entry, order: 0, repeats: true, modes: ["common"]),
                .remove(1, mode: "default"), .remove(2, mode: "default"),
                .invalidate(1), .invalidate(2),
            ] + asked, cf: [scheduled(1), cancelled(1), .containment(1, mode: "common", contained: true),
                .containment(2, mode: "common", contained: true)],
            runLoopKit: [scheduled(1), cancelled(1), .containment(1, mode: "common", contained: false),
                .containment(2, mode: "common", contained: false)])
        case .portTakenOutAfterTheWaitKeepsItsReadiness:
            // The wait returns for port 1; an AfterWaiting observer takes it out of default. CF
            // has read it and performs nothing, then or in A; RunLoopKit handles it in A.
            return Demonstration(program: [
                .addObserver(8, activities: Activity.afterWaiting, order: 0, repeats: false, modes: ["default"]),
                .addPortSource(1, order: 0, modes: ["default", "A"]),
                .addTimer(3, .future, interval: 0, modes: ["default"]),
                .onCallout(8, [.remove(1, mode: "default")]),
                .makeReady(1),
                .run("default", .guarded, returnAfterSourceHandled: false),
                .run("A", .zero, returnAfterSourceHandled: false),
            ], cf: [observed(8, Activity.afterWaiting), returned("stopped"), returned("timedOut", "A")],
            runLoopKit: [observed(8, Activity.afterWaiting), returned("stopped"), portPerformed(1, in: "A"), returned("timedOut", "A")])
        case .sourceInOneLoopOnly, .runningCommonStops, .blockForNoModeStops, .runningAnotherThreadsLoopStops,
            .negativeIntervalStops, .intervalUnderANanosecondIsOne, .pollNeverWaits, .itemInSecondLoopStops, .toleranceHonoured, .commonItemsInHashOrder,
            .timersInAHeap, .fixedDescriptorsPerLoop, .timeoutInTheWait, .runReturnsWhenStopped, .publicWakeUpObserversAndSources,
            .deadLoopKeepsNothing, .descriptorLeftToTheHandler, .sourcesNeverMerge:
            return nil
        }
    }
}
