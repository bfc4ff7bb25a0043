import Foundation
import RunLoopKit
import Testing

/// Misuse that stops the process with a message naming the call (see "Errors" in the DocC
/// article "Threads, lifetime and errors").
/// Each case runs in a process of its own (an exit test); its body captures nothing and builds
/// everything it needs.
@Suite struct BadInputTests {
    /// The child's standard error, as text.
    private func message(_ result: ExitTest.Result?) -> String {
        String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
    }

    // MARK: Running a loop (R4, R5, R10)

    @Test func R5_runningAnotherThreadsLoopStops() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let release = Latch()
            let other = startLoopThread { loop in
                loop.add(keepAliveTimer(), forMode: .default)
                release.wait()
            }
            _ = onLoopThread { _ in other.loop.run(mode: .default, timeout: .zero) }
        }
        #expect(message(result).contains("EvRunLoop.run(mode:timeout:returnAfterSourceHandled:)"))
        #expect(message(result).contains("its own thread"))
    }

    // R5 for the main loop run from a secondary thread: in MainThreadTests, whose harness has a
    // main thread (this process's belongs to libdispatch).

    @Test func R5_runForeverAndRunUntilOnAnotherThreadsLoopStop() async {
        let forever = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let other = startLoopThread { _ in Latch().wait() }
            onLoopThread { _ in other.loop.run() }
        }
        let until = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let other = startLoopThread { _ in Latch().wait() }
            _ = onLoopThread { _ in other.loop.run(until: .now + .seconds(30)) }
        }
        #expect(message(forever).contains("EvRunLoop.run(mode:timeout:returnAfterSourceHandled:)"))
        #expect(message(until).contains("EvRunLoop.run(mode:timeout:returnAfterSourceHandled:)"))
    }

    @Test func R10_runningTheCommonPseudoModeStops() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            onLoopThread { loop in
                loop.add(keepAliveTimer(), forMode: .common)
                _ = loop.run(mode: .common, timeout: .zero)
            }
        }
        #expect(message(result).contains("EvRunLoop.run(mode:timeout:returnAfterSourceHandled:)"))
        #expect(message(result).contains(".common"))
    }

    @Test func R4_runningADeadLoopStops() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let dead = Box<EvRunLoop?>(nil)
            let thread = JoinableTestThread { dead.set(EvRunLoop.current) }
            _ = thread.join()  // the thread has exited: its loop is torn down
            onLoopThread { _ in _ = dead.get!.run(mode: .default, timeout: .zero) }
        }
        #expect(message(result).contains("EvRunLoop.run(mode:timeout:returnAfterSourceHandled:)"))
        #expect(message(result).contains("exited"))
    }

    // MARK: Bad values

    @Test func negativeTimerIntervalStops() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = EvTimer(fireAt: .now, interval: .seconds(-1)) { _ in }
        }
        #expect(message(result).contains("EvTimer.init"))
        #expect(message(result).contains("interval"))
    }

    @Test func negativeTimerToleranceStops() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = EvTimer(fireAt: .now, tolerance: .milliseconds(-1)) { _ in }
        }
        #expect(message(result).contains("EvTimer.init"))
        #expect(message(result).contains("tolerance"))
    }

    @Test func negativeTimerToleranceSetStops() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let timer = EvTimer(after: .seconds(1)) { _ in }
            timer.tolerance = .nanoseconds(-1)
        }
        #expect(message(result).contains("EvTimer.tolerance"))
    }

    @Test func negativeTimerDelayStops() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = EvTimer(after: .seconds(-1)) { _ in }
        }
        #expect(message(result).contains("EvTimer.init(after:)"))
        #expect(message(result).contains("delay"))
    }

    @Test func emptyModeNameStops() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = EvRunLoop.Mode("")
        }
        #expect(message(result).contains("EvRunLoop.Mode.init"))
    }

    @Test func makingTheCommonPseudoModeCommonStops() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            onLoopThread { loop in loop.addCommonMode(.common) }
        }
        #expect(message(result).contains("EvRunLoop.addCommonMode(_:)"))
    }

    @Test func performWithNoModesStops() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            onLoopThread { loop in loop.perform(inModes: []) {} }
        }
        #expect(message(result).contains("EvRunLoop.perform(inModes:_:)"))
    }

    // MARK: One item, two loops (R39, R53)

    @Test func aTimerInASecondLoopStops() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let timer = keepAliveTimer()
            let first = startLoopThread { _ in Latch().wait() }
            first.loop.add(timer, forMode: .default)
            onLoopThread { loop in loop.add(timer, forMode: .default) }
        }
        #expect(message(result).contains("EvRunLoop.add(_:forMode:)"))
        #expect(message(result).contains("EvTimer"))
    }

    @Test func anObserverInASecondLoopStops() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let observer = EvObserver(activities: .entry) { _, _ in }
            let first = startLoopThread { _ in Latch().wait() }
            first.loop.add(observer, forMode: .common)
            onLoopThread { loop in loop.add(observer, forMode: EvRunLoop.Mode("other")) }
        }
        #expect(message(result).contains("EvRunLoop.add(_:forMode:)"))
        #expect(message(result).contains("EvObserver"))
    }

    @Test func aSourceInASecondLoopStops() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let source = EvSource {}
            let first = startLoopThread { _ in Latch().wait() }
            first.loop.add(source, forMode: EvRunLoop.Mode("first"))
            onLoopThread { loop in loop.add(source, forMode: .common) }
        }
        #expect(message(result).contains("EvRunLoop.add(_:forMode:)"))
        #expect(message(result).contains("EvSource"))
    }
}
