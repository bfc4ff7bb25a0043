import Foundation
import RunLoopKit
import Synchronization
import Testing
import TestSupport

extension StressTests {
    /// Other threads add file-descriptor sources to a running loop and close half of the
    /// descriptors behind the sources' backs at random moments, so their numbers are reused at
    /// once for the next sources. Nothing crashes (Debian's libev aborts when a descriptor it
    /// watches is closed before it tells the kernel), and every source whose descriptor stays
    /// open is handled, as readable, exactly when its pipe has a byte.
    @Test func descriptorsClosedBehindWatchedSourcesWhileTheirNumbersAreReused() {
        let watchdog = Watchdog("descriptorsClosedBehindWatchedSourcesWhileTheirNumbersAreReused")
        let finish = Atomic<Bool>(false)
        let loopHeart = watchdog.heart("loop thread")
        let loopThread = LoopThread(named: "stress-fdloop") { loop in
            loop.add(EvTimer(after: .milliseconds(1), interval: .milliseconds(1)) { _ in loopHeart.beat() }, forMode: .default)
            while !finish.load(ordering: .acquiring) { loop.run(mode: .default, timeout: .milliseconds(50)) }
            loopHeart.stop()
        }
        let loop = loopThread.loop
        let deadline = StressDuration.deadline()
        let kept = Atomic<Int>(0)
        let lost = Atomic<Int>(0)
        let wrong = Atomic<Int>(0)
        watchdog.enter("adding sources and closing descriptors")
        let workers = (0..<2).map { index in
            let heart = watchdog.heart("worker \(index)")
            return spawnThread(named: "stress-fdclose") {
                var random = SplitMix64(seed: UInt64(index) + 1)
                while ContinuousClock.now < deadline {
                    heart.beat()
                    var ends: [Int32] = [0, 0]
                    guard pipe(&ends) == 0 else { continue }
                    for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }  // no child inherits it
                    let seen = Atomic<Int32>(0)
                    let holder = TestLocked<EvFileDescriptorSource?>(nil)
                    let source = try! EvFileDescriptorSource(fileDescriptor: ends[0], events: .readable) { readiness in
                        seen.store(readiness.rawValue, ordering: .releasing)
                        holder.withLock { $0 }?.invalidate()
                    }
                    holder.withLock { $0 = source }
                    loop.add(source, forMode: .default)
                    var byte: UInt8 = 1
                    _ = write(ends[1], &byte, 1)
                    if random.next() % 2 == 0 {
                        kept.add(1, ordering: .relaxed)
                        if !waitUntil(heart, { seen.load(ordering: .acquiring) != 0 }) {
                            lost.add(1, ordering: .relaxed)
                        } else if seen.load(ordering: .acquiring) != EvFileDescriptorSource.Readiness.readable.rawValue {
                            wrong.add(1, ordering: .relaxed)
                        }
                    } else {
                        for _ in 0..<(random.next() % 4) { sched_yield() }
                    }
                    close(ends[0])
                    close(ends[1])
                    source.invalidate()
                    holder.withLock { $0 = nil }  // the handler holds `holder`: break the cycle
                }
                heart.stop()
            }
        }
        for worker in workers { pthread_join(worker, nil) }
        watchdog.enter("ending the loop thread")
        finish.store(true, ordering: .releasing)
        loopThread.join()
        watchdog.finish()

        #expect(kept.load(ordering: .relaxed) > 0)
        #expect(lost.load(ordering: .relaxed) == 0, "sources with an open, readable descriptor never handled")
        #expect(wrong.load(ordering: .relaxed) == 0, "sources with an open, readable descriptor handled with something else")
    }
}
