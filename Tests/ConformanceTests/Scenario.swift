import Testing

/// Runs a named scenario on CF and on RunLoopKit and checks both against the trace the rule
/// predicts: the two must agree with each other and with `expected` (everything before the
/// thread's exit, or the whole trace with `includingTeardown`).
func expectBothRunLoops(
    _ program: [Op], trace expected: [TraceEvent], includingTeardown: Bool = false,
    sourceLocation: SourceLocation = #_sourceLocation
) {
    let comparison = Comparison(program, label: "\(sourceLocation)")
    #expect(comparison.agrees, "CF and RunLoopKit differ:\n\(comparison.report)", sourceLocation: sourceLocation)
    for (name, trace) in [("CF", comparison.cf), ("RunLoopKit", comparison.runLoopKit)] {
        let compared = includingTeardown ? trace : Array(trace.prefix { $0 != .threadExit })
        let wanted = includingTeardown ? expected : Array(expected.prefix { $0 != .threadExit })
        #expect(
            compared == wanted,
            "\(name) did not do what the rule says.\nexpected:\n\(lines(wanted))\nactual:\n\(lines(compared))\nprogram:\n\(describe(program))",
            sourceLocation: sourceLocation)
    }
}

private func lines(_ trace: [TraceEvent]) -> String { trace.map { "  \($0)" }.joined(separator: "\n") }

// MARK: Trace shorthands

func observed(_ id: Int, _ activity: UInt32, in mode: String = "default") -> TraceEvent {
    .observer(id, activity: activity, mode: mode)
}

/// What an observer of the given activities sees, one event per activity, in that order.
func observed(_ id: Int, _ activities: [UInt32], in mode: String = "default") -> [TraceEvent] {
    activities.map { observed(id, $0, in: mode) }
}

func fired(_ id: Int, in mode: String = "default") -> TraceEvent { .timer(id, mode: mode) }
func performed(_ id: Int, in mode: String = "default") -> TraceEvent { .perform(id, mode: mode) }
func portPerformed(_ id: Int, in mode: String = "default") -> TraceEvent { .portPerform(id, mode: mode) }
func ran(_ id: Int, in mode: String = "default") -> TraceEvent { .block(id, mode: mode) }
func scheduled(_ id: Int, in mode: String = "default") -> TraceEvent { .schedule(id, mode: mode) }
func cancelled(_ id: Int, in mode: String = "default") -> TraceEvent { .cancel(id, mode: mode) }
func returned(_ result: String, _ mode: String = "default", depth: Int = 1) -> TraceEvent {
    .result(depth: depth, mode: mode, result: result)
}
func modes(_ all: [String], current: String = "none") -> TraceEvent { .modes(current: current, all: all) }
