/// The runs of a loop in progress, innermost last (R9, R27, R58): the outermost run's frame
/// inline, nested runs' frames in an array.
///
/// A loop's runs are seldom nested, so the usual run keeps its frame without a heap allocation;
/// nested runs, a mode switch from a callout, use the array, which keeps its capacity between them.
struct RunStack {
    /// The outermost run's frame; meaningful while `count` > 0.
    private var outermost = RunFrame(mode: .default)
    /// How many runs are in progress (32 bits: it shares a word with the outermost frame's flag).
    private var depth: UInt32 = 0
    /// The frames of runs nested in the outermost one, innermost last.
    private var nested: [RunFrame] = []

    /// How many runs are in progress.
    var count: Int { Int(depth) }

    var isEmpty: Bool { depth == 0 }

    /// The frames' positions, outermost first.
    var indices: Range<Int> { 0..<count }

    /// The innermost run's frame; `nil` when no run is in progress.
    var last: RunFrame? {
        switch depth {
        case 0: nil
        case 1: outermost
        default: nested[nested.count - 1]
        }
    }

    /// The frame of the run at `position` (0: the outermost).
    subscript(position: Int) -> RunFrame {
        get { position == 0 ? outermost : nested[position - 1] }
        set {
            if position == 0 {
                outermost = newValue
            } else {
                nested[position - 1] = newValue
            }
        }
    }

    /// Pushes the frame of a run that begins.
    mutating func append(_ frame: RunFrame) {
        if depth == 0 {
            outermost = frame
        } else {
            nested.append(frame)
        }
        depth += 1
    }

    /// Pops the innermost run's frame.
    mutating func removeLast() {
        depth -= 1
        if depth > 0 { nested.removeLast() }
    }
}
