/// Delta debugging for a program that shows a difference: removes operations (top-level ones
/// in halves, then one at a time, then those inside scripts) as long as the program stays
/// clear of every known difference and CF and RunLoopKit still disagree.
struct Shrinker {
    /// Whether a candidate still shows the difference.
    let stillDiffers: ([Op]) -> Bool

    func shrink(_ program: [Op]) -> [Op] {
        var current = program
        var changed = true
        while changed {
            changed = false
            // Halves, quarters… of the top level, then single operations anywhere.
            var chunk = max(current.count / 2, 1)
            while chunk >= 1 {
                var start = 0
                while start < current.count {
                    var candidate = current
                    candidate.removeSubrange(start..<min(start + chunk, current.count))
                    if accepts(candidate) {
                        current = candidate
                        changed = true
                    } else {
                        start += chunk
                    }
                }
                chunk /= 2
            }
            for path in Self.paths(in: current).reversed() {
                let candidate = Self.removing(path, from: current)
                if accepts(candidate) {
                    current = candidate
                    changed = true
                }
            }
        }
        return current
    }

    private func accepts(_ candidate: [Op]) -> Bool {
        KnownDifference.risked(by: candidate).isEmpty && stillDiffers(candidate)
    }

    /// Every operation's position: indices from the top level down through scripts.
    private static func paths(in ops: [Op], prefix: [Int] = []) -> [[Int]] {
        var paths: [[Int]] = []
        for (index, op) in ops.enumerated() {
            paths.append(prefix + [index])
            if case .onCallout(_, let script) = op { paths += Self.paths(in: script, prefix: prefix + [index]) }
        }
        return paths
    }

    private static func removing(_ path: [Int], from ops: [Op]) -> [Op] {
        var ops = ops
        guard let index = path.first, index < ops.count else { return ops }
        if path.count == 1 {
            ops.remove(at: index)
        } else if case .onCallout(let id, let script) = ops[index] {
            let reduced = removing(Array(path.dropFirst()), from: script)
            if reduced.isEmpty { ops.remove(at: index) } else { ops[index] = .onCallout(id, reduced) }
        }
        return ops
    }
}
