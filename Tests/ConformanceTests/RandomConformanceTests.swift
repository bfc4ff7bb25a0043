import Foundation
import Testing

/// Seeded random programs, the same on CF and on RunLoopKit. On a difference: the seed, whether
/// CF itself is repeatable on that program, and the shortest program that still shows it.
///
/// `RUNLOOPKIT_CONFORMANCE_SEEDS` sets the number of seeds (default 1000) and
/// `RUNLOOPKIT_CONFORMANCE_FIRST_SEED` the first one, for soak runs.
@Suite struct RandomConformanceTests {
    private static let seedCount = Int(ProcessInfo.processInfo.environment["RUNLOOPKIT_CONFORMANCE_SEEDS"] ?? "") ?? 1000
    /// Merged-poll programs sleep in most runs (about 8 ms a seed alone, several times that beside
    /// the rest of the suite): a tenth as many by default, so that the sanitizer runs do not hold
    /// a thread of the test pool for minutes.
    private static let mergingSeedCount = ProcessInfo.processInfo.environment["RUNLOOPKIT_CONFORMANCE_SEEDS"] == nil ? seedCount / 10 : seedCount
    private static let firstSeed = UInt64(ProcessInfo.processInfo.environment["RUNLOOPKIT_CONFORMANCE_FIRST_SEED"] ?? "") ?? 1

    @Test(arguments: [false, true]) func generatedProgramsAreClearOfKnownDifferences(mergingPolls: Bool) {
        for seed in Self.firstSeed..<Self.firstSeed + UInt64(Self.seedCount) {
            var generator = mergingPolls ? ProgramGenerator(mergingPollsWithSeed: seed) : ProgramGenerator(seed: seed)
            let program = generator.program()
            let risked = KnownDifference.risked(by: program)
            #expect(risked.isEmpty, "seed \(seed) risks \(risked): \(describe(program))")
        }
    }

    @Test func randomProgramsBehaveTheSameOnCFAndRunLoopKit() {
        compare(seeds: Self.seedCount) { ProgramGenerator(seed: $0) }
    }

    /// No observer of the steps between a handled source's poll and the next sleep, so that
    /// RunLoopKit merges them (R20.6) wherever nothing else keeps them apart.
    @Test func programsThatMayMergePollsBehaveTheSameOnCFAndRunLoopKit() {
        compare(seeds: Self.mergingSeedCount) { ProgramGenerator(mergingPollsWithSeed: $0) }
    }

    private func compare(seeds: Int, _ makeGenerator: (UInt64) -> ProgramGenerator) {
        var failures = 0
        for seed in Self.firstSeed..<Self.firstSeed + UInt64(seeds) where failures < 3 {
            var generator = makeGenerator(seed)
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
                seed \(seed) (\(generator.world) world\(generator.observesPasses ? "" : ", programs that may merge polls")): \
                CF and RunLoopKit differ\
                \(repeatable ? "" : " — and CF itself is not repeatable on this program").
                again: RUNLOOPKIT_CONFORMANCE_FIRST_SEED=\(seed) RUNLOOPKIT_CONFORMANCE_SEEDS=1
                shortest program showing it:
                \(minimal.report)
                """)
        }
    }
}
