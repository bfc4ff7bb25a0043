import Foundation
@testable import RunLoopKit
import Testing

/// After a source is handled, CF polls and begins another pass; when no callout could run in
/// between, the run sleeps at once instead, the poll merged into that sleep. Each test here
/// leaves something for the next pass that such a sleep would miss, and checks that the run
/// does not sleep on it: it would sleep until the run's timeout and return
/// ``EvRunLoop/RunResult/timedOut``. No observer is added: one of the steps in between
/// already keeps the poll.
@Suite struct MergedPollTests {
    /// R46: a timer due by the end of a source's perform fires in the poll's pass, although its
    /// tolerance would let a sleep wait a minute for it.
    @Test func R46_aTimerThatFellDueDuringAPerformFiresAtOnceWhateverItsTolerance() {
        let result = onLoopThread { loop in
            let fireDate = ContinuousClock.now + .milliseconds(5)
            let fired = Box(false)
            loop.add(EvTimer(fireAt: fireDate, tolerance: .seconds(60)) { _ in
                fired.set(true)
                loop.stop()
            }, forMode: .default)
            let source = EvSource {
                while ContinuousClock.now <= fireDate {}  // the timer falls due during the perform
            }
            loop.add(source, forMode: .default)
            source.signal()
            return (loop.run(mode: .default, timeout: .seconds(20)), fired.get)
        }
        #expect(result.0 == .stopped)
        #expect(result.1)
    }

    /// R16: a perform that takes its source, the mode's only item, out of it ends the run as
    /// finished.
    @Test func R16_aPerformThatEmptiesTheModeEndsTheRun() {
        let result = onLoopThread { loop in
            let own = Box<EvSource?>(nil)
            let source = EvSource {
                own.get?.invalidate()
                own.set(nil)  // the box and the source's handler would hold each other
            }
            own.set(source)
            loop.add(source, forMode: .default)
            source.signal()
            return loop.run(mode: .default, timeout: .seconds(20))
        }
        #expect(result == .finished)
    }

    /// R55: a block queued by a block that a perform queued runs at the poll's blocks step (the
    /// step after a perform ran the first).
    @Test func R55_aBlockQueuedByABlockAfterAPerformRunsWithoutAWakeUp() {
        let result = onLoopThread { loop in
            let source = EvSource {
                loop.perform(inModes: [.default]) {
                    loop.perform(inModes: [.default]) { loop.stop() }
                }
            }
            loop.add(source, forMode: .default)
            source.signal()
            return loop.run(mode: .default, timeout: .seconds(20))
        }
        #expect(result == .stopped)
    }

    /// R33: a source signalled by another's perform, with no wake-up, performs in the next pass.
    @Test func R33_aSourceSignalledByAPerformRunsInTheNextPassWithoutAWakeUp() {
        let result = onLoopThread { loop in
            let second = EvSource { loop.stop() }
            let first = EvSource { second.signal() }
            loop.add(first, forMode: .default)
            loop.add(second, forMode: .default)
            first.signal()
            return loop.run(mode: .default, timeout: .seconds(20))
        }
        #expect(result == .stopped)
    }

    /// R20.9, R37: a descriptor that became ready during a perform is handled at once.
    @Test func R37_aDescriptorReadyByTheEndOfAPerformIsHandledAtOnce() throws {
        var fds: [Int32] = [0, 0]
        precondition(pipe(&fds) == 0)
        let (readEnd, writeEnd) = (fds[0], fds[1])
        defer { close(readEnd); close(writeEnd) }
        let result = onLoopThread { loop in
            let descriptor = try! EvFileDescriptorSource(fileDescriptor: readEnd, events: .readable) { _ in loop.stop() }
            loop.add(descriptor, forMode: .default)
            let source = EvSource {
                var byte: UInt8 = 1
                precondition(write(writeEnd, &byte, 1) == 1)
            }
            loop.add(source, forMode: .default)
            source.signal()
            defer { descriptor.invalidate() }
            return loop.run(mode: .default, timeout: .seconds(20))
        }
        #expect(result == .stopped)
    }

    /// R37, R22 for signals: a signal sent to the process during a perform (its handler's wake
    /// request may wait in the wake word) is handled without another wake-up. Dispositions are
    /// process-wide: a child process, where `kill`, not `raise`: the loop's thread inherits a
    /// mask that blocks the signal from the exit test's worker thread.
    @Test func R37_aSignalSentDuringAPerformIsHandledWithoutAnotherWakeUp() async {
        await #expect(processExitsWith: .success) {
            let result = onLoopThread { loop -> EvRunLoop.RunResult in
                guard let signal = try? EvSignalSource(signal: SIGUSR2, handler: { EvRunLoop.current.stop() }) else { exit(9) }
                loop.add(signal, forMode: .default)
                let source = EvSource { kill(getpid(), SIGUSR2) }
                loop.add(source, forMode: .default)
                source.signal()
                defer { signal.invalidate() }
                return loop.run(mode: .default, timeout: .seconds(20))
            }
            guard result == .stopped else { exit(10) }
        }
    }

    /// R37, R38: a message sent to a port during a perform is handled at once.
    @Test func R37_aMessageSentDuringAPerformIsHandledAtOnce() {
        let result = onLoopThread { loop -> EvRunLoop.RunResult in
            let port = EvMessagePort<Int> { _ in EvRunLoop.current.stop() }
            loop.add(port, forMode: .default)
            let source = EvSource { try! port.send(1) }
            loop.add(source, forMode: .default)
            source.signal()
            defer { port.invalidate() }
            return loop.run(mode: .default, timeout: .seconds(20))
        }
        #expect(result == .stopped)
    }

    /// R37: a run nested in a perform, of a mode without the outer mode's descriptor, leaves the
    /// watchers in step with its own mode; the descriptor, made ready before it, is still handled
    /// at once when the outer run goes on.
    @Test func R37_aDescriptorReadyBeforeARunNestedInAPerformIsHandledAfterIt() {
        var fds: [Int32] = [0, 0]
        precondition(pipe(&fds) == 0)
        let (readEnd, writeEnd) = (fds[0], fds[1])
        defer { close(readEnd); close(writeEnd) }
        let log = EventLog<String>()
        let result = onLoopThread { loop -> EvRunLoop.RunResult in
            let descriptor = try! EvFileDescriptorSource(fileDescriptor: readEnd, events: .readable) { _ in
                log.append("readable")
                EvRunLoop.current.stop()
            }
            loop.add(descriptor, forMode: .default)
            let other = EvRunLoop.Mode("other")
            let otherSource = EvSource { log.append("other") }
            loop.add(otherSource, forMode: other)
            let source = EvSource {
                var byte: UInt8 = 1
                precondition(write(writeEnd, &byte, 1) == 1)
                otherSource.signal()
                log.append("nested \(EvRunLoop.current.run(mode: other, timeout: .seconds(20), returnAfterSourceHandled: true))")
            }
            loop.add(source, forMode: .default)
            source.signal()
            defer { descriptor.invalidate() }
            return loop.run(mode: .default, timeout: .seconds(20))
        }
        #expect(result == .stopped)
        #expect(log.all == ["other", "nested handledSource", "readable"])
    }

    /// R27: a stop from another thread ends a run that goes through merged sleeps (a source
    /// signalled and the loop woken again and again), wherever between them it lands.
    @Test func R27_aStopFromAnotherThreadEndsARunOfMergedSleepsWhereverItLands() {
        for round in 0..<200 {
            let source = EvSource {}
            let result = Box<EvRunLoop.RunResult?>(nil)
            let (loop, finished) = startLoopThread { loop in
                loop.add(source, forMode: .default)
                result.set(loop.run(mode: .default, timeout: .seconds(30)))
            }
            #expect(spinUntil { loop.isWaiting })
            for _ in 0..<round % 20 {
                source.signal()
                loop.wakeUp()
            }
            loop.stop()
            #expect(finished.wait(timeout: 40))
            #expect(result.get == .stopped)
        }
    }

    /// A libev library's prepare callback runs in every wait of a mode that holds an
    /// ``EvLibevSource``, the poll after a perform included, and its check callback after every
    /// poll of such a wait, in the version-1 step: a source either signals there, with no
    /// wake-up, performs in the next pass, before the loop sleeps.
    @Test(arguments: ["prepare", "check"])
    func aSourceSignalledByALibraryCallbackOfThePollAfterAPerformRunsWithoutAWakeUp(_ phase: String) {
        let log = EventLog<String>()
        let result = onLoopThread { loop -> EvRunLoop.RunResult in
            let library = EvLibevSource()
            loop.add(library, forMode: .default)
            let armed = Box(false)
            let second = EvSource {
                log.append("second")
                loop.stop()
            }
            let watcher = LibraryWatcher(phase == "prepare" ? .prepare : .check) {
                guard armed.get else { return }
                armed.set(false)
                log.append(phase)
                second.signal()
            }
            library.withEventLoop { watcher.start($0) }
            let first = EvSource {
                log.append("first")
                armed.set(true)
            }
            loop.add(first, forMode: .default)
            loop.add(second, forMode: .default)
            first.signal()
            let result = loop.run(mode: .default, timeout: .seconds(20))
            library.withEventLoop { watcher.stop($0) }
            library.invalidate()
            return result
        }
        #expect(result == .stopped)
        #expect(log.all == ["first", phase, "second"])
    }

    /// The merged sleep stands for the pass CF would have begun, and counts as its iteration:
    /// the pass that performs a source, the pass that sleeps, and the pass after the wake-up.
    @Test func aMergedSleepCountsThePassItStandsFor() {
        let iterations = Box<UInt64?>(nil)
        let stopper = EvSource { EvRunLoop.current.stop() }
        let (loop, finished) = startLoopThread { loop in
            let first = EvSource {}
            loop.add(first, forMode: .default)
            loop.add(stopper, forMode: .default)
            first.signal()
            let before = loop.metrics.iterations
            loop.run(mode: .default, timeout: .seconds(30))
            iterations.set(loop.metrics.iterations - before)
        }
        #expect(spinUntil { loop.isWaiting })
        stopper.signal()
        loop.wakeUp()
        #expect(finished.wait())
        #expect(iterations.get == 3)
    }

    /// R20.6 lets the poll merge only while no observer of the steps in between exists. Once
    /// the loop's last such observer left, its cycles merge again; one in another mode of the
    /// loop still keeps them apart (the check is loop-wide). Counted on a virtual wait: a
    /// cycle that keeps CF's poll makes one, a merged one none.
    @Test func R20_6_pollsMergeAgainOnceTheLastObserverOfTheStepsBetweenLeft() {
        let polls = onVirtualLoopThread { loop, clock in
            let source = EvSource {}
            loop.add(source, forMode: .default)
            let pollsOfOneCycle = {
                let before = clock.pollCount
                source.signal()
                #expect(loop.run(mode: .default, timeout: .seconds(1)) == .timedOut)
                return clock.pollCount - before
            }
            let observer = EvObserver(activities: .beforeWaiting) { _, _ in }
            let other = EvRunLoop.Mode("other")
            var counts = [pollsOfOneCycle()]
            loop.add(observer, forMode: .default)
            counts.append(pollsOfOneCycle())
            loop.remove(observer, forMode: .default)
            counts.append(pollsOfOneCycle())
            loop.add(observer, forMode: other)
            counts.append(pollsOfOneCycle())
            observer.invalidate()
            counts.append(pollsOfOneCycle())
            return counts
        }
        #expect(polls == [0, 1, 0, 1, 0])
    }
}
