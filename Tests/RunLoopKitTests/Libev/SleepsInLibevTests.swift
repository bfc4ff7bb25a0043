import Foundation
@testable import RunLoopKit
import Testing
import TestSupport

/// libev's `ev_run` is the only place a loop's thread blocks: in every state a loop spends its
/// life in, the kernel shows its sleeping thread asleep in `epoll_wait` on the epoll descriptor
/// of one of the loop's libev loops. The main loop's case runs in MainLoopHarness
/// (`MainThreadTests`).
@Suite struct SleepsInLibevTests {
    @Test func aLoopWithOnlyAPortSleepsInLibev() {
        expectSleepsInLibev { loop in
            loop.add(EvMessagePort<Int> { _ in }, forMode: .default)
            _ = loop.run(mode: .default, timeout: nil)
        }
    }

    @Test func aLoopWithATimerDueFarAwaySleepsInLibev() {
        expectSleepsInLibev { loop in
            loop.add(keepAliveTimer(), forMode: .default)
            _ = loop.run(mode: .default, timeout: nil)
        }
    }

    @Test func aLoopRunningACustomModeWithACommonTimerSleepsInLibev() {
        expectSleepsInLibev { loop in
            let tracking = EvRunLoop.Mode("tracking")
            loop.addCommonMode(tracking)
            loop.add(EvTimer(after: .seconds(3600), interval: .seconds(3600)) { _ in }, forMode: .common)
            _ = loop.run(mode: tracking, timeout: nil)
        }
    }

    @Test func aLoopWatchingAPipeSleepsInLibev() throws {
        var fds: [Int32] = [0, 0]
        try #require(pipe(&fds) == 0)
        defer { close(fds[0]); close(fds[1]) }
        let readEnd = fds[0]
        expectSleepsInLibev { loop in
            let source = try! EvFileDescriptorSource(fileDescriptor: readEnd, events: .readable) { _ in }
            loop.add(source, forMode: .default)
            _ = loop.run(mode: .default, timeout: nil)
            source.invalidate()
        }
    }

    /// While a mode holding an EvLibevSource runs, the loop sleeps in the libev libraries' loop,
    /// which embeds its own: inside that loop's `ev_run`, in `epoll_wait`.
    @Test func aLoopRunningAModeWithAnEvLibevSourceSleepsInLibev() {
        expectSleepsInLibev { loop in
            let source = EvLibevSource()
            loop.add(source, forMode: .default)
            _ = loop.run(mode: .default, timeout: nil)
            source.invalidate()
        }
    }

    /// After 1,000 wake-ups (each a source signalled from another thread) it still sleeps there.
    @Test func aLoopAfterAThousandWakeUpsSleepsInLibev() {
        let handled = Latch()
        let count = Box(0)
        let source = EvSource {
            count.set(count.get + 1)
            if count.get == 1000 { handled.open() }
        }
        let (loop, finished, tid) = startProbedLoop { loop in
            loop.add(source, forMode: .default)
            _ = loop.run(mode: .default, timeout: nil)
        }
        for _ in 0..<1000 {
            #expect(spinUntil { loop.isWaiting })
            let before = count.get
            source.signal()
            loop.wakeUp()
            #expect(spinUntil { count.get > before })
        }
        #expect(handled.wait())
        #expect(isInLibevPoll(loop, thread: tid))
        loop.stop()
        #expect(finished.wait())
    }

    @Test func aWorkerThreadSleepsInLibev() throws {
        let worker = EvWorkerThread(name: "sleeps-in-libev")
        let loop = try worker.start()
        let tid = try worker.submitAndWait { ThreadProbe.currentThreadID() }
        #expect(isInLibevPoll(loop, thread: tid))
        worker.stop()
    }

    private func expectSleepsInLibev(_ body: @escaping @Sendable (EvRunLoop) -> Void) {
        let (loop, finished, tid) = startProbedLoop(body)
        #expect(isInLibevPoll(loop, thread: tid))
        loop.stop()
        #expect(finished.wait())
    }

    private func startProbedLoop(_ body: @escaping @Sendable (EvRunLoop) -> Void) -> (EvRunLoop, Latch, Int32) {
        let tid = Box<Int32>(-1)
        let (loop, finished) = startLoopThread { loop in
            tid.set(ThreadProbe.currentThreadID())
            body(loop)
        }
        _ = spinUntil { tid.get >= 0 }
        return (loop, finished, tid.get)
    }
}

/// Whether `loop`, asleep, is inside libev's backend poll on thread `tid`: waits (10 s at most)
/// for the kernel to show the thread asleep in `epoll_wait` on the epoll set of one of the
/// loop's libev loops (see ``sleepsInLibevPoll(_:thread:)``).
func isInLibevPoll(_ loop: EvRunLoop, thread tid: Int32) -> Bool {
    spinUntil(timeout: 10) { sleepsInLibevPoll(loop, thread: tid) }
}

/// Whether `loop` is waiting and thread `tid` is asleep in `epoll_wait` on the epoll set of one
/// of its libev loops, now: the set that watches the loop's wake-up eventfd (only libev's own
/// set of the loop does), or the libev libraries' set, which watches that one.
func sleepsInLibevPoll(_ loop: EvRunLoop, thread tid: Int32) -> Bool {
    guard loop.isWaiting, let backend = loop.waiter as? EvBackend, let epoll = ThreadProbe.epollWaitDescriptor(of: tid) else { return false }
    return ThreadProbe.epoll(epoll, watches: backend.wake.descriptor)
}
