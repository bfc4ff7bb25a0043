@testable import RunLoopKit
import TestSupport
import Testing

/// The block queue's count of work queued with a wake-up, which a run consults before it sleeps
/// (R56): after any mix of blocks for one or several modes, woken or not, and steps that take
/// them, it matches a plain model of what is pending.
@Suite struct BlockQueueWokenTests {
    private static let tracking = EvRunLoop.Mode("tracking")
    private static let modal = EvRunLoop.Mode("modal")

    /// What the model keeps of a pending block.
    private struct Pending {
        let modes: [EvRunLoop.Mode]
        let isWoken: Bool
    }

    @Test(arguments: 0..<200 as Range<UInt64>) func wokenWorkMatchesAModel(seed: UInt64) {
        var random = SplitMix64(seed: seed)
        var queue = BlockQueue()
        var model: [UInt64: Pending] = [:]
        let trackingIsCommon = seed % 2 == 0
        func isCommon(_ mode: EvRunLoop.Mode) -> Bool { mode == .default || (mode == Self.tracking && trackingIsCommon) }
        func mayRun(_ pending: Pending, in mode: EvRunLoop.Mode) -> Bool {
            pending.modes.contains(mode) || (pending.modes.contains(.common) && isCommon(mode))
        }
        let runModes: [EvRunLoop.Mode] = [.default, Self.tracking, Self.modal]
        for _ in 0..<60 {
            switch Int.random(in: 0..<10, using: &random) {
            case 0..<5:
                var modes: [EvRunLoop.Mode] = []
                for _ in 0..<Int.random(in: 1...3, using: &random) {
                    let mode = ([.common] + runModes).randomElement(using: &random)!
                    if !modes.contains(mode) { modes.append(mode) }
                }
                let isWoken = Bool.random(using: &random)
                model[queue.nextSequence] = Pending(modes: modes, isWoken: isWoken)
                let accepted = queue.append(.block {}, modes: modes, woken: isWoken)
                #expect(accepted)
            case 5..<8:
                let mode = runModes.randomElement(using: &random)!
                let (own, common) = queue.takeRunnable(in: mode, isCommon: isCommon(mode))
                for entry in own + common {
                    #expect(model.removeValue(forKey: entry.sequence) != nil, "seed \(seed): taken twice")
                }
            default:
                // The running mode was just made common: the step takes the `.common` blocks
                // scheduled in a range of sequence numbers.
                let start = UInt64.random(in: 0...queue.nextSequence, using: &random)
                let end = UInt64.random(in: start...queue.nextSequence, using: &random)
                for entry in queue.takeCommon(scheduledIn: start..<end) {
                    #expect(model.removeValue(forKey: entry.sequence) != nil, "seed \(seed): taken twice")
                }
            }
            #expect(queue.pendingCount == model.count, "seed \(seed)")
            #expect(queue.wokenCount == model.values.count(where: \.isWoken), "seed \(seed)")
            for mode in runModes {
                let expected = model.values.contains { $0.isWoken && mayRun($0, in: mode) }
                #expect(queue.hasWokenBlocks(for: mode, isCommon: isCommon(mode), jobsHeldBack: false) == expected, "seed \(seed), \(mode)")
            }
        }
        _ = queue.close()
        #expect(queue.wokenCount == 0)
    }
}
