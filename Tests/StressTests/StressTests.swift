import Foundation
import RunLoopKit
import Synchronization
import Testing
import TestSupport

/// Many threads at one loop while it runs and nests runs: nothing lost, nothing run twice, no
/// deadlock (a `Watchdog` stops the process with a thread dump instead of hanging).
@Suite struct StressTests {
    /// A source whose perform records how many signals had been made when it ran: every signal
    /// must be followed by a perform that saw it (R33, R35: signals coalesce, never vanish).
    final class TrackedSource: Sendable {
        final class Counts: Sendable {
            let sent = Atomic<Int>(0)
            let seen = Atomic<Int>(0)
        }
        let counts: Counts
        let source: EvSource
        init(order: Int) {
            let counts = Counts()
            self.counts = counts
            source = EvSource(order: order) { counts.seen.store(counts.sent.load(ordering: .acquiring), ordering: .releasing) }
        }
        func signal() {
            counts.sent.add(1, ordering: .acquiringAndReleasing)
            source.signal()
        }
        var isCaughtUp: Bool { counts.seen.load(ordering: .acquiring) == counts.sent.load(ordering: .acquiring) }
        var report: String { "\(counts.sent.load(ordering: .relaxed)) signals, the last perform saw \(counts.seen.load(ordering: .relaxed))" }
    }

    /// Schedule minus cancel callouts of a source: zero once it left every mode (R4, R36).
    final class Membership: Sendable {
        let balance = Atomic<Int>(0)
        func source(order: Int = 0, perform: @escaping @Sendable () -> Void = {}) -> EvSource {
            EvSource(
                order: order,
                schedule: { [self] _, _ in balance.add(1, ordering: .relaxed) },
                cancel: { [self] _, _ in balance.subtract(1, ordering: .relaxed) },
                perform: perform)
        }
    }

    @Test func signalsBlocksAndMessagesSurviveChurnAndNestedRuns() {
        let watchdog = Watchdog("signalsBlocksAndMessagesSurviveChurnAndNestedRuns")
        let nested = EvRunLoop.Mode("stress.nested")
        let tracked = (0..<3).map { TrackedSource(order: $0 % 2) }
        let capacity = 1_000_000
        let blockRuns = Tally(count: capacity)
        let blocksSent = Atomic<Int>(0)
        let messageRuns = Tally(count: capacity)
        let messagesSent = Atomic<Int>(0)
        let churned = Membership()
        let stopLoop = Atomic<Bool>(false)
        let loopHeart = watchdog.heart("loop thread")
        let port = EvMessagePort<Int> { messageRuns.record($0) }

        let loopThread = LoopThread(named: "stress-loop") { loop in
            loop.addCommonMode(nested)
            loop.add(port, forMode: .common)
            for item in tracked { loop.add(item.source, forMode: .common) }
            loop.add(EvTimer(after: .seconds(3600)) { _ in }, forMode: .common)
            // Every third sleep first runs the nested mode: common items and blocks run there too.
            let sleeps = Atomic<Int>(0)
            let nester = EvObserver(activities: [.beforeTimers, .beforeWaiting]) { _, activity in
                loopHeart.beat()
                guard activity == .beforeWaiting, sleeps.add(1, ordering: .relaxed).newValue % 3 == 0 else { return }
                EvRunLoop.current.run(mode: nested, timeout: .milliseconds(2))
            }
            loop.add(nester, forMode: .default)
            while !stopLoop.load(ordering: .acquiring) { loop.run(mode: .default, timeout: .milliseconds(20)) }
            loopHeart.stop()
        }
        let loop = loopThread.loop
        let deadline = StressDuration.deadline()
        var producers: [pthread_t] = []

        watchdog.enter("producing")
        for (index, item) in tracked.enumerated() {
            let heart = watchdog.heart("signaller \(index)")
            producers.append(spawnThread(named: "stress-signal") {
                while ContinuousClock.now < deadline {
                    item.signal()
                    loop.wakeUp()
                    heart.beat()
                }
                heart.stop()
            })
        }
        for index in 0..<2 {
            let heart = watchdog.heart("performer \(index)")
            producers.append(spawnThread(named: "stress-perform") {
                var random = SplitMix64(seed: UInt64(index + 1))
                while ContinuousClock.now < deadline {
                    let id = blocksSent.add(1, ordering: .relaxed).oldValue
                    guard id < capacity else { break }
                    let modes: [EvRunLoop.Mode] = [[.common], [.default, nested], [nested]][Int.random(in: 0..<3, using: &random)]
                    loop.perform(inModes: modes) { blockRuns.record(id) }
                    if Bool.random(using: &random) { loop.wakeUp() }
                    heart.beat()
                }
                heart.stop()
            })
        }
        let senderHeart = watchdog.heart("port sender")
        producers.append(spawnThread(named: "stress-send") {
            while ContinuousClock.now < deadline {
                let id = messagesSent.add(1, ordering: .relaxed).oldValue
                guard id < capacity else { break }
                // Back-pressure: a port refuses messages while its queue is full; the sender
                // waits for the loop to catch up, as an application would.
                while true {
                    do throws(EvSourceError) {
                        try port.send(id)
                        break
                    } catch {
                        guard case .portFull = error else { fatalError("port.send(\(id)): \(error)") }
                        senderHeart.beat()
                        sched_yield()
                    }
                }
                senderHeart.beat()
            }
            senderHeart.stop()
        })
        let churnHeart = watchdog.heart("churner")
        producers.append(spawnThread(named: "stress-churn") {
            var random = SplitMix64(seed: 99)
            let modes: [EvRunLoop.Mode] = [.default, .common, nested, EvRunLoop.Mode("stress.other")]
            var sources: [EvSource] = []
            while ContinuousClock.now < deadline {
                let mode = modes.randomElement(using: &random)!
                switch Int.random(in: 0..<6, using: &random) {
                case 0:
                    let source = churned.source(order: Int.random(in: 0..<3, using: &random))
                    loop.add(source, forMode: mode)
                    source.signal()
                    sources.append(source)
                case 1:
                    if let source = sources.randomElement(using: &random) { loop.remove(source, forMode: mode) }
                case 2:
                    if !sources.isEmpty { sources.remove(at: Int.random(in: 0..<sources.count, using: &random)).invalidate() }
                case 3:
                    let timer = EvTimer(after: .milliseconds(Int.random(in: 0..<3, using: &random))) { _ in }
                    loop.add(timer, forMode: mode)
                    if Bool.random(using: &random) { timer.invalidate() }
                case 4:
                    let observer = EvObserver(activities: .allActivities) { _, _ in }
                    loop.add(observer, forMode: mode)
                    if Bool.random(using: &random) { loop.remove(observer, forMode: mode) } else { observer.invalidate() }
                default:
                    sources.randomElement(using: &random)?.signal()
                    loop.wakeUp()
                }
                churnHeart.beat()
            }
            churnHeart.stop()
        })
        for producer in producers { pthread_join(producer, nil) }

        watchdog.enter("draining")
        let drainHeart = watchdog.heart("drain")
        let sent = min(blocksSent.load(ordering: .relaxed), capacity)
        let messages = min(messagesSent.load(ordering: .relaxed), capacity)
        let drained = waitUntil(drainHeart, progress: { blockRuns.distinct + messageRuns.distinct }) {
            loop.wakeUp()
            return tracked.allSatisfy(\.isCaughtUp)
                && blockRuns.distinct == sent && messageRuns.distinct == messages
        }
        drainHeart.stop()
        stopLoop.store(true, ordering: .releasing)
        loop.wakeUp()
        watchdog.enter("joining the loop thread")
        loopThread.join()
        watchdog.finish()

        #expect(drained, "signals, blocks or messages were lost")
        for (index, item) in tracked.enumerated() {
            #expect(item.isCaughtUp, "source \(index): \(item.report)")
        }
        let blocksNotOnce = blockRuns.notExactlyOnce(below: sent)
        #expect(blocksNotOnce.isEmpty, "\(blocksNotOnce.count) of \(sent) blocks did not run exactly once")
        let messagesNotOnce = messageRuns.notExactlyOnce(below: messages)
        #expect(messagesNotOnce.isEmpty, "\(messagesNotOnce.count) of \(messages) messages were not handled exactly once")
        #expect(churned.balance.load(ordering: .relaxed) == 0, "schedule and cancel callouts of churned sources do not balance")
        #expect(sent > 0 && messages > 0)
    }
}
