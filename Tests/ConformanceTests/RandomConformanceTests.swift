import Foundation
import Testing

/// Seeded random programs, the same on CF and on RunLoopKit. On a difference: the seed, whether
/// CF itself is repeatable on that program, and the shortest program that still shows it.
///
/// `RUNLOOPKIT_CONFORMANCE_SEEDS` sets the number of seeds (default 1000) and
/// `RUNLOOPKIT_CONFORMANCE_FIRST_SEED` the first one, for soak runs.
@Suite struct RandomConformanceTests {
    private static let seedCount = Int(ProcessInfo.processInfo.environment["RUNLOOPKIT_CONFORMANCE_SEEDS"] ?? "") ?? 1000
    private static let firstSeed = UInt64(ProcessInfo.processInfo.environment["RUNLOOPKIT_CONFORMANCE_FIRST_SEED"] ?? "") ?? 1

    @Test func generatedProgramsAreClearOfKnownDifferences() {
        for seed in Self.firstSeed..<Self.firstSeed + UInt64(Self.seedCount) {
            var generator = ProgramGenerator(seed: seed)
            let program = generator.program()
            let risked = KnownDifference.risked(by: program)
            #expect(risked.isEmpty, "seed \(seed) risks \(risked): \(describe(program))")
        }
    }

    @Test func randomProgramsBehaveTheSameOnCFAndRunLoopKit() {
        var failures = 0
        for seed in Self.firstSeed..<Self.firstSeed + UInt64(Self.seedCount) where failures < 3 {
            var generator = ProgramGenerator(seed: seed)
            let program = generator.program()
            let comparison = Comparison(program, label: "seed \(seed)")
            guard !comparison.agrees else { continue }
            failures += 1
            let repeatable = (0..<3).allSatisfy { _ in
                normalized(trace(of: program, with: CFInterpreter(), label: "seed \(seed) on CF again")) == comparison.cf
            }
            let shortest = Shrinker { Comparison($0, label: "seed \(seed) shrinking").agrees == false }.shrink(program)
            let minimal = Comparison(shortest, label: "seed \(seed) shortest")
            Issue.record("""
                seed \(seed) (\(generator.world) world): CF and RunLoopKit differ\
                \(repeatable ? "" : " — and CF itself is not repeatable on this program").
                again: RUNLOOPKIT_CONFORMANCE_FIRST_SEED=\(seed) RUNLOOPKIT_CONFORMANCE_SEEDS=1
                shortest program showing it:
                \(minimal.report)
                """)
        }
    }
}
