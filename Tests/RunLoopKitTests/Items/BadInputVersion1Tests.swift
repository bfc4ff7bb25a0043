import Foundation
import RunLoopKit
import Testing

/// Misuse of version-1 sources and of the concurrency API: each stops the process with a message
/// naming the call (an exit test per case; bodies capture nothing).
@Suite struct BadInputVersion1Tests {
    private func message(_ result: ExitTest.Result?) -> String {
        String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
    }

    @Test func aFileDescriptorSourceWithNoEventsStops() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = try? EvFileDescriptorSource(fileDescriptor: 0, events: []) { _ in }
        }
        #expect(message(result).contains("EvFileDescriptorSource.init"))
    }

    @Test func aPortInASecondLoopStops() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let port = EvMessagePort<Int> { _ in }
            let first = startLoopThread { _ in Latch().wait() }
            first.loop.add(port, forMode: .default)
            onLoopThread { loop in loop.add(port, forMode: .default) }
        }
        #expect(message(result).contains("EvRunLoop.add(_:forMode:)"))
        #expect(message(result).contains("version-1 source is already scheduled in another run loop"))
    }

    @Test func oneSignalWatchedByTwoLoopsStops() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let first = startLoopThread { _ in Latch().wait() }
            first.loop.add(try! EvSignalSource(signal: SIGUSR2) {}, forMode: .default)
            onLoopThread { loop in loop.add(try! EvSignalSource(signal: SIGUSR2) {}, forMode: .default) }
        }
        #expect(message(result).contains("signal \(SIGUSR2) is already watched by another run loop"))
    }

    @Test func ticksWithAZeroIntervalStops() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = onLoopThread { loop in loop.ticks(every: .zero) }
        }
        #expect(message(result).contains("EvRunLoop.ticks(every:tolerance:inModes:)"))
    }

    /// With no mode, the timer would join none and the sequence would wait for ever.
    @Test func ticksInNoModeStops() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = onLoopThread { loop in loop.ticks(every: .seconds(1), inModes: []) }
        }
        #expect(message(result).contains("EvRunLoop.ticks(every:tolerance:inModes:): modes must not be empty"))
    }

    @Test func ticksWithANegativeToleranceStopsNamingTicks() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = onLoopThread { loop in loop.ticks(every: .seconds(1), tolerance: .seconds(-1)) }
        }
        #expect(message(result).contains("EvRunLoop.ticks(every:tolerance:inModes:): tolerance must not be negative"))
    }

    @Test func checkingIsolationOffTheLoopsThreadStops() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let other = startLoopThread { _ in Latch().wait() }
            EvRunLoopExecutor(other.loop).checkIsolated()
        }
        #expect(message(result).contains("EvRunLoopExecutor.checkIsolated()"))
    }
}
