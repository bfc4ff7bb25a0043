/// The same program on CF and on RunLoopKit, each on a fresh thread, traces normalised.
struct Comparison: Sendable {
    let program: [Op]
    let cf: [TraceEvent]
    let runLoopKit: [TraceEvent]

    init(_ program: [Op], label: String = "scenario") {
        self.program = program
        cf = normalized(trace(of: program, with: CFInterpreter(), label: "\(label) on CF"))
        runLoopKit = normalized(trace(of: program, with: RunLoopKitInterpreter(), label: "\(label) on RunLoopKit"))
    }

    var agrees: Bool { cf == runLoopKit }

    /// The two traces side by side from their first difference on.
    var report: String {
        let first = (0..<min(cf.count, runLoopKit.count)).first { cf[$0] != runLoopKit[$0] } ?? min(cf.count, runLoopKit.count)
        var lines = ["program:", describe(program), "traces (CF | RunLoopKit), first difference at event \(first):"]
        for index in 0..<max(cf.count, runLoopKit.count) {
            let left = index < cf.count ? cf[index].description : "—"
            let right = index < runLoopKit.count ? runLoopKit[index].description : "—"
            let mark = index == first ? ">>" : "  "
            lines.append("\(mark) \(index): \(left.padding(toLength: 44, withPad: " ", startingAt: 0)) | \(right)")
        }
        return lines.joined(separator: "\n")
    }
}
