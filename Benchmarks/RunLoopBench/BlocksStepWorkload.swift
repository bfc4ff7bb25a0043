import CCFRunLoop
import Foundation
#if canImport(RunLoopKit)
import RunLoopKit
#endif

/// `instructions` operation `blocks-step`: one run of the default mode with a block pending for
/// it (one pass, timeout 0: the run's blocks steps, R20 steps 3 and 12, run the block), on the
/// loop's thread, behind `population` blocks pending for another mode that never runs.
///
/// With no such blocks the run is the baseline; with 200,000 the figure shows whether a blocks
/// step walks blocks that cannot run (CF does, in every blocks step and emptiness check: W19).
/// `runloop-bench instructions` reports the ratio of the two (`instructions.blocks-step.cliff`).
enum BlocksStepWorkload {
    /// The mode the population is pending for; never run.
    static let otherModeName = "runloop-bench.blocks-step.other"

    /// Sets up `population` blocks for the other mode, then counts `count` runs.
    static func run(backend: BackendID, population: Int, count: Int) {
        switch backend {
        #if canImport(RunLoopKit)
        case .runloopkit:
            let loop = EvRunLoop.current
            let other = EvRunLoop.Mode(otherModeName)
            for _ in 0..<population { loop.perform(inModes: [other]) {} }
            func step() {
                loop.perform(inModes: [.default]) {}
                loop.run(mode: .default, timeout: .zero)
            }
            measure(count, step)
        #endif
        case .cf:
            let loop = CFRunLoopGetCurrent().takeUnretainedValue()
            let other = CFStringCreateWithCString(nil, otherModeName, CFStringEncoding(kCFStringEncodingUTF8)).takeRetainedValue()
            let block: @convention(block) () -> Void = {}
            for _ in 0..<population { CFRunLoopPerformBlock(loop, other, block) }
            measure(count) {
                CFRunLoopPerformBlock(loop, kCFRunLoopDefaultMode, block)
                _ = CFRunLoopRunInMode(kCFRunLoopDefaultMode, 0, 0)
            }
        default:
            fatalError("no perform-blocks by mode on \(backend.rawValue)")
        }
    }

    private static func measure(_ count: Int, _ step: () -> Void) {
        for _ in 0..<3 { step() }  // warm
        bench_callgrind_start()
        for _ in 0..<count { step() }
        bench_callgrind_stop()
    }
}
