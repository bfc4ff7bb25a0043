// System calls per operation, counted by rules that never inject.
import Dispatch
import FaultInjection
import Foundation
import RunLoopKit
import Synchronization

/// Many descriptors ready at once, handled one per iteration (R38): each costs a few
/// `epoll_ctl`s (its watch, its re-arm once handled), not one more per iteration it
/// waits. Before, every pass re-armed every still-unhandled ready entry: about n²/2 calls.
func manyReadyDescriptorsSystemCalls() {
    let count = 200
    let outcome = onNewThread { () -> String in
        let loop = EvRunLoop.current
        let handled = ReadCount()
        guard let (pipes, sources) = readingPipes(count, handled) else { return "pipe failed" }
        for pipe in pipes {
            var byte: UInt8 = 1
            _ = write(pipe.write, &byte, 1)
        }
        arm("epoll_ctl:1000000000:EINVAL@thread")
        for source in sources { loop.add(source, forMode: .default) }
        run(loop, for: 10) { handled.value == count }
        let calls = runloopkit_faults_calls("epoll_ctl")
        runloopkit_faults_disarm()
        for source in sources { source.invalidate() }
        for (readEnd, writeEnd) in pipes { close(readEnd); close(writeEnd) }
        let done = handled.value
        guard done == count else { return "\(done) of \(count) descriptors handled" }
        return calls <= 5 * count ? "ok \(calls)" : "\(calls) epoll_ctl for \(count) ready descriptors (at most \(5 * count))"
    }
    guard outcome.hasPrefix("ok") else { fail(outcome) }
    print("\(count) ready descriptors: \(outcome.dropFirst(3)) epoll_ctl")
}
/// Many descriptors ready together, round after round, as a server's connections are: each
/// handled readiness costs one `epoll_ctl`, its re-arm as its handler is about to run. A report
/// re-armed at once, its descriptor still ready, was reported again by the next pass's poll
/// before its turn came, only to rest until then: two per handled readiness.
func readyTogetherSystemCalls() {
    let count = 50
    let rounds = 20
    let outcome = onNewThread { () -> String in
        let loop = EvRunLoop.current
        let handled = ReadCount()
        guard let (pipes, sources) = readingPipes(count, handled) else { return "pipe failed" }
        for source in sources { loop.add(source, forMode: .default) }
        loop.run(mode: .default, timeout: .zero)  // every watch started
        arm("epoll_ctl:1000000000:EINVAL@thread")
        for round in 1...rounds {
            for pipe in pipes {
                var byte: UInt8 = 1
                _ = write(pipe.write, &byte, 1)
            }
            run(loop, for: 10) { handled.value == round * count }
        }
        let calls = runloopkit_faults_calls("epoll_ctl")
        runloopkit_faults_disarm()
        for source in sources { source.invalidate() }
        for (readEnd, writeEnd) in pipes { close(readEnd); close(writeEnd) }
        guard handled.value == rounds * count else { return "\(handled.value) of \(rounds * count) readinesses handled" }
        let limit = rounds * count + 10
        return calls <= limit ? "ok \(calls)" : "\(calls) epoll_ctl for \(rounds) rounds of \(count) ready descriptors (at most \(limit))"
    }
    guard outcome.hasPrefix("ok") else { fail(outcome) }
    print("\(rounds) rounds of \(count) ready descriptors: \(outcome.dropFirst(3)) epoll_ctl")
}

/// A wake-up cycle makes no system call raw libev would not: 100 cycles of a signalled
/// version-0 source and a wake-up from another thread, the loop running with no timeout. Each
/// cycle sleeps once in libev's `epoll_wait` (as `ev_async_send` and `ev_run` would); the poll
/// after handling the source (R20.9) has no descriptor that could be ready, so it makes none.
/// With no timer (`timer` false) the loop never calls `timerfd_settime`; with one far-off
/// timer, once (its deadline never changes). Counted on the loop's thread by rules that never
/// inject.
func quietWakeUps(timer: Bool) {
    let handled = DispatchSemaphore(value: 0)
    let started = DispatchSemaphore(value: 0)
    let loopBox = Mutex<EvRunLoop?>(nil)
    let counts = Mutex<(settime: Int, epollWait: Int)?>(nil)
    let source = EvSource { handled.signal() }
    let thread = Thread {
        let loop = EvRunLoop.current
        loop.add(source, forMode: .default)
        if timer { loop.add(EvTimer(after: .seconds(600)) { _ in }, forMode: .default) }
        loopBox.withLock { $0 = loop }
        started.signal()
        arm("timerfd_settime:1000000000:EINVAL@thread;epoll_wait:1000000000:EINVAL@thread")
        let result = loop.run(mode: .default, timeout: nil)
        counts.withLock { $0 = (runloopkit_faults_calls("timerfd_settime"), runloopkit_faults_calls("epoll_wait")) }
        runloopkit_faults_disarm()
        if result != .stopped { fail("quiet wake-ups: run ended \(result)") }
    }
    thread.start()
    started.wait()
    let loop = loopBox.withLock { $0! }
    let cycles = 100
    for _ in 0..<cycles {
        while !loop.isWaiting { sched_yield() }
        source.signal()
        loop.wakeUp()
        handled.wait()
    }
    while !loop.isWaiting { sched_yield() }
    loop.stop()
    while counts.withLock({ $0 }) == nil { usleep(1000) }
    let (settime, epollWait) = counts.withLock { $0! }
    let settimeLimit = timer ? 1 : 0
    // One sleep per cycle, and the last one's before the stop.
    let epollWaitLimit = cycles + 1
    guard settime <= settimeLimit, epollWait <= epollWaitLimit else {
        fail("quiet wake-ups (timer: \(timer)): \(settime) timerfd_settime (at most \(settimeLimit)), \(epollWait) epoll_wait (at most \(epollWaitLimit)) for \(cycles) cycles")
    }
    print("quiet wake-ups (timer: \(timer)): \(settime) timerfd_settime, \(epollWait) epoll_wait for \(cycles) cycles")
}

/// A repeating timer costs per fire the system calls of a kernel timer that repeats by itself:
/// one `epoll_wait` (the sleep) and one `read` of the timerfd, and no `timerfd_settime` after the
/// first arming but for wake-ups late by more than a period (the code that re-armed it every
/// period made 200). 200 fires of a 1 kHz timer, counted on the loop's thread by rules that never
/// inject.
func periodicTimerSystemCalls() {
    let outcome = onNewThread { () -> String in
        let loop = EvRunLoop.current
        let fires = Mutex(0)
        let timer = EvTimer(after: .milliseconds(1), interval: .milliseconds(1)) { timer in
            if fires.withLock({ $0 += 1; return $0 }) == 200 { timer.invalidate() }
        }
        loop.add(timer, forMode: .default)
        arm("timerfd_settime:1000000000:EINVAL@thread;epoll_wait:1000000000:EINVAL@thread;read:1000000000:EINVAL@thread")
        let result = loop.run(mode: .default, timeout: .seconds(30))
        let (settime, epollWait, reads) = (runloopkit_faults_calls("timerfd_settime"), runloopkit_faults_calls("epoll_wait"), runloopkit_faults_calls("read"))
        runloopkit_faults_disarm()
        let fired = fires.withLock { $0 }
        guard result == .finished, fired == 200 else { return "run \(result), \(fired) fires" }
        // A wake-up late by more than a period, on a loaded machine, may re-arm it: a few.
        guard settime <= 2 + fired / 10, epollWait <= fired + 2, reads <= fired + 2 else {
            return "\(settime) timerfd_settime, \(epollWait) epoll_wait, \(reads) read for \(fired) fires"
        }
        return "ok: \(settime) timerfd_settime, \(epollWait) epoll_wait, \(reads) read for \(fired) fires"
    }
    guard outcome.hasPrefix("ok") else { fail("periodic timer: \(outcome)") }
    print("periodic timer: \(outcome)")
}

/// A connection's usual end on the loop's thread, its source invalidated and then its descriptor
/// closed, removes the number's kernel entry before the close: the next file under the number
/// has no stale entry to be told from, and its re-arms are not checked. Each of 100 turns costs
/// five `epoll_ctl`s: the source's entry in the file register, the register's look as the watch
/// starts, the watch, its re-arm once reported and its removal (and a few once, for the loop's
/// own descriptors). Removed after the close instead, every later turn would check its re-arm
/// against the register (one more).
func reusedNumberSystemCalls() {
    let turns = 100
    let outcome = onNewThread { () -> String in
        let loop = EvRunLoop.current
        loop.add(EvTimer(after: .seconds(3600)) { _ in }, forMode: .default)
        var numbers: Set<Int32> = []
        arm("epoll_ctl:1000000000:EINVAL@thread")
        for _ in 0..<turns {
            var fds: [Int32] = [0, 0]
            guard pipe(&fds) == 0 else { return "pipe failed" }
            let readEnd = fds[0]
            numbers.insert(readEnd)
            var byte: UInt8 = 1
            _ = write(fds[1], &byte, 1)
            let handled = Mutex(false)
            let source = Mutex<EvFileDescriptorSource?>(nil)
            source.withLock {
                $0 = try! EvFileDescriptorSource(fileDescriptor: readEnd, events: .readable) { _ in
                    var byte: UInt8 = 0
                    _ = read(readEnd, &byte, 1)
                    source.withLock { $0?.invalidate() }
                    close(readEnd)
                    handled.withLock { $0 = true }
                }
            }
            loop.add(source.withLock { $0! }, forMode: .default)
            run(loop, for: 10) { handled.withLock { $0 } }
            source.withLock { $0 = nil }
            close(fds[1])
            guard handled.withLock({ $0 }) else { return "a turn was not handled" }
        }
        let calls = runloopkit_faults_calls("epoll_ctl")
        runloopkit_faults_disarm()
        guard numbers.count == 1 else { return "the read ends took \(numbers.count) numbers, not one" }
        return calls <= 5 * turns + 10 ? "ok \(calls)" : "\(calls) epoll_ctl for \(turns) turns (at most \(5 * turns + 10))"
    }
    guard outcome.hasPrefix("ok") else { fail(outcome) }
    print("\(turns) turns on one number: \(outcome.dropFirst(3)) epoll_ctl")
}

/// A nested run of another mode, from a callout of a mode that watches many descriptors, parks
/// their watches instead of ending them: the switch there costs no system call per descriptor,
/// and the switch back one `epoll_ctl` each, the re-arm that also shows the number still naming
/// its file. Ended and started again, each cost three (the removal, the register's look and the
/// watch) and an `fstat`. Readiness that arrives during the nested run is handled once its mode
/// runs again (R37).
func modeSwitchSystemCalls() {
    let count = 50
    let switches = 20
    let outcome = onNewThread { () -> String in
        let loop = EvRunLoop.current
        let inner = EvRunLoop.Mode("harness.inner")
        loop.add(EvTimer(after: .seconds(3600)) { _ in }, forMode: inner)
        let handled = ReadCount()
        guard let (pipes, sources) = readingPipes(count, handled) else { return "pipe failed" }
        for source in sources { loop.add(source, forMode: .default) }
        let nestedRuns = Mutex(0)
        let switcher = EvSource {
            _ = loop.run(mode: inner, timeout: .zero)
            nestedRuns.withLock { $0 += 1 }
        }
        loop.add(switcher, forMode: .default)
        loop.run(mode: .default, timeout: .zero)  // every watch started
        arm("epoll_ctl:1000000000:EINVAL@thread")
        for _ in 0..<switches {
            switcher.signal()
            loop.run(mode: .default, timeout: .zero)
        }
        let calls = runloopkit_faults_calls("epoll_ctl")
        runloopkit_faults_disarm()
        // Ready while parked: handled once the default mode runs again.
        switcher.signal()
        let writer = pipes[0].write
        let writeDuringNestedRun = EvSource {
            var byte: UInt8 = 1
            _ = write(writer, &byte, 1)
        }
        loop.add(writeDuringNestedRun, forMode: inner)
        writeDuringNestedRun.signal()
        run(loop, for: 10) { handled.value == 1 }
        switcher.invalidate()
        writeDuringNestedRun.invalidate()
        for source in sources { source.invalidate() }
        for (readEnd, writeEnd) in pipes { close(readEnd); close(writeEnd) }
        guard nestedRuns.withLock({ $0 }) == switches + 1 else { return "\(nestedRuns.withLock { $0 }) nested runs, not \(switches + 1)" }
        guard handled.value == 1 else { return "readiness that arrived during a nested run was not handled" }
        let limit = count * switches + 10
        return calls <= limit ? "ok \(calls)" : "\(calls) epoll_ctl for \(switches) switches with \(count) descriptors (at most \(limit))"
    }
    guard outcome.hasPrefix("ok") else { fail(outcome) }
    print("\(switches) mode switches with \(count) descriptors: \(outcome.dropFirst(3)) epoll_ctl")
}

/// A source whose watch is parked (a nested run of another mode) invalidated on the loop's
/// thread and its descriptor then closed, as a connection ends: its kernel entry is removed
/// before the close, so the next file under the number has no stale entry to be told from. Each
/// of 20 readinesses of that file then costs one `epoll_ctl` (the re-arm) and a few once (the
/// register's look as the watch starts, the watch, the loop's own descriptors); removed after
/// the close, every re-arm would also be checked against the file register (one more each).
func parkedSourceEndedThenClosedSystemCalls() {
    let turns = 20
    let outcome = onNewThread { () -> String in
        let loop = EvRunLoop.current
        let inner = EvRunLoop.Mode("harness.inner")
        loop.add(EvTimer(after: .seconds(3600)) { _ in }, forMode: inner)
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { return "pipe failed" }
        let (number, firstWriter) = (fds[0], fds[1])
        let first = try! EvFileDescriptorSource(fileDescriptor: number, events: .readable) { _ in }
        loop.add(first, forMode: .default)
        // A timer: it fires after the nested run's poll, which parked the watch.
        let ender = EvTimer(after: .zero) { _ in
            first.invalidate()
            close(number)
        }
        let switcher = EvSource {
            loop.add(ender, forMode: inner)
            _ = loop.run(mode: inner, timeout: .zero)
        }
        loop.add(switcher, forMode: .default)
        loop.run(mode: .default, timeout: .zero)  // the watch started
        switcher.signal()
        loop.run(mode: .default, timeout: .zero)  // parked, then ended in the nested run
        guard !first.isValid else { return "the nested run did not end the first source" }
        guard pipe(&fds) == 0 else { return "pipe failed" }
        let (reader, writer) = (fds[0], fds[1])
        guard reader == number else { return "the new pipe took \(reader), not \(number)" }
        let handled = Mutex(0)
        let second = try! EvFileDescriptorSource(fileDescriptor: reader, events: .readable) { _ in
            var byte: UInt8 = 0
            if read(reader, &byte, 1) == 1 { handled.withLock { $0 += 1 } }
        }
        arm("epoll_ctl:1000000000:EINVAL@thread")
        loop.add(second, forMode: .default)
        for turn in 1...turns {
            var byte: UInt8 = 1
            _ = write(writer, &byte, 1)
            run(loop, for: 10) { handled.withLock { $0 } == turn }
        }
        let calls = runloopkit_faults_calls("epoll_ctl")
        runloopkit_faults_disarm()
        second.invalidate()
        switcher.invalidate()
        ender.invalidate()
        for fd in [firstWriter, reader, writer] { close(fd) }
        guard handled.withLock({ $0 }) == turns else { return "\(handled.withLock { $0 }) of \(turns) readinesses handled" }
        return calls <= turns + 10 ? "ok \(calls)" : "\(calls) epoll_ctl for \(turns) readinesses (at most \(turns + 10))"
    }
    guard outcome.hasPrefix("ok") else { fail(outcome) }
    print("\(turns) readinesses after a parked source ended: \(outcome.dropFirst(3)) epoll_ctl")
}

/// A connection's end with the descriptor closed first and the source invalidated after (as a
/// handler that closes on `.error` leaves it: the source invalidates itself after the handler):
/// the kernel's entry for the number can no longer be removed, so the next file under the number
/// has its re-arms checked against the file register until the kernel shows no entry under the
/// number but its own. Then each readiness costs one `epoll_ctl`, the re-arm; checked for good,
/// each cost two. 40 readinesses of the next file, counted on the loop's thread.
func closedFirstNumberSystemCalls() {
    let turns = 40
    let outcome = onNewThread { () -> String in
        let loop = EvRunLoop.current
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { return "pipe failed" }
        let (number, firstWriter) = (fds[0], fds[1])
        var byte: UInt8 = 1
        _ = write(firstWriter, &byte, 1)
        let ended = Mutex(false)
        let first = Mutex<EvFileDescriptorSource?>(nil)
        first.withLock {
            $0 = try! EvFileDescriptorSource(fileDescriptor: number, events: .readable) { _ in
                close(number)
                first.withLock { $0?.invalidate() }
                ended.withLock { $0 = true }
            }
        }
        loop.add(first.withLock { $0! }, forMode: .default)
        run(loop, for: 10) { ended.withLock { $0 } }
        first.withLock { $0 = nil }
        close(firstWriter)
        guard pipe(&fds) == 0 else { return "pipe failed" }
        let (reader, writer) = (fds[0], fds[1])
        guard reader == number else { return "the new pipe took \(reader), not \(number)" }
        let handled = Mutex(0)
        let second = try! EvFileDescriptorSource(fileDescriptor: reader, events: .readable) { _ in
            var byte: UInt8 = 0
            if read(reader, &byte, 1) == 1 { handled.withLock { $0 += 1 } }
        }
        arm("epoll_ctl:1000000000:EINVAL@thread")
        loop.add(second, forMode: .default)
        for turn in 1...turns {
            _ = write(writer, &byte, 1)
            run(loop, for: 10) { handled.withLock { $0 } == turn }
        }
        let calls = runloopkit_faults_calls("epoll_ctl")
        runloopkit_faults_disarm()
        second.invalidate()
        for fd in [reader, writer] { close(fd) }
        guard handled.withLock({ $0 }) == turns else { return "\(handled.withLock { $0 }) of \(turns) readinesses handled" }
        return calls <= turns + 10 ? "ok \(calls)" : "\(calls) epoll_ctl for \(turns) readinesses (at most \(turns + 10))"
    }
    guard outcome.hasPrefix("ok") else { fail(outcome) }
    print("\(turns) readinesses after a source closed first: \(outcome.dropFirst(3)) epoll_ctl")
}

/// A nested run of another mode while readiness of many descriptors waits its turn (a handler
/// that runs a modal wait on a busy server): the waiting entries, parked, rest until their mode
/// runs again, with no `epoll_ctl` before the nested run sleeps. Each readiness then costs two:
/// the re-arm as its mode runs again, and the one as its handler is about to run. Re-armed
/// before the nested sleep, an entry with every watcher parked asked the kernel for nothing.
func nestedRunBesideWaitingReadinessSystemCalls() {
    let count = 50
    let rounds = 10
    let outcome = onNewThread { () -> String in
        let loop = EvRunLoop.current
        let inner = EvRunLoop.Mode("harness.inner")
        loop.add(EvTimer(after: .seconds(3600)) { _ in }, forMode: inner)
        let handled = ReadCount()
        let nestedRuns = ReadCount()
        let switcher = EvSource {
            _ = loop.run(mode: inner, timeout: .milliseconds(1))
            nestedRuns.bump()
        }
        loop.add(switcher, forMode: .default)
        var pipes: [(read: Int32, write: Int32)] = []
        var sources: [EvFileDescriptorSource] = []
        for _ in 0..<count {
            var fds: [Int32] = [0, 0]
            guard pipe(&fds) == 0 else { return "pipe failed" }
            let readEnd = fds[0]
            pipes.append((fds[0], fds[1]))
            sources.append(try! EvFileDescriptorSource(fileDescriptor: readEnd, events: .readable) { _ in
                var byte: UInt8 = 0
                guard read(readEnd, &byte, 1) == 1 else { return }
                handled.bump()
                // The round's second: the others wait their turn, and the next pass runs the nested run.
                if handled.value % count == 2 { switcher.signal() }
            })
        }
        for source in sources { loop.add(source, forMode: .default) }
        loop.run(mode: .default, timeout: .zero)  // every watch started
        arm("epoll_ctl:1000000000:EINVAL@thread")
        for round in 1...rounds {
            for pipe in pipes {
                var byte: UInt8 = 1
                _ = write(pipe.write, &byte, 1)
            }
            run(loop, for: 10) { handled.value == round * count }
        }
        let calls = runloopkit_faults_calls("epoll_ctl")
        runloopkit_faults_disarm()
        switcher.invalidate()
        for source in sources { source.invalidate() }
        for (readEnd, writeEnd) in pipes { close(readEnd); close(writeEnd) }
        guard handled.value == rounds * count else { return "\(handled.value) of \(rounds * count) readinesses handled" }
        guard nestedRuns.value == rounds else { return "\(nestedRuns.value) nested runs, not \(rounds)" }
        let limit = 2 * rounds * count + 10
        return calls <= limit ? "ok \(calls)" : "\(calls) epoll_ctl for \(rounds) nested runs beside \(count) waiting readinesses (at most \(limit))"
    }
    guard outcome.hasPrefix("ok") else { fail(outcome) }
    print("\(rounds) nested runs beside waiting readiness: \(outcome.dropFirst(3)) epoll_ctl")
}

/// A count bumped on one thread and read on another (the bytes ``readingPipes(_:_:)``'s handlers
/// read, the main-queue blocks that ran).
private final class ReadCount: Sendable {
    private let count = Atomic(0)
    func bump() { count.add(1, ordering: .relaxed) }
    var value: Int { count.load(ordering: .relaxed) }
}

/// `count` pipes, each with a source for its read end whose handler reads a byte and counts it
/// in `handled`; `nil` if a pipe cannot be made.
private func readingPipes(_ count: Int, _ handled: ReadCount) -> ([(read: Int32, write: Int32)], [EvFileDescriptorSource])? {
    var pipes: [(read: Int32, write: Int32)] = []
    var sources: [EvFileDescriptorSource] = []
    for _ in 0..<count {
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { return nil }
        let readEnd = fds[0]
        pipes.append((fds[0], fds[1]))
        sources.append(try! EvFileDescriptorSource(fileDescriptor: readEnd, events: .readable) { _ in
            var byte: UInt8 = 0
            if read(readEnd, &byte, 1) == 1 { handled.bump() }
        })
    }
    return (pipes, sources)
}

/// The main loop switching between a common mode and one that is not: no `epoll_ctl` for the
/// main queue's watcher; work queued on the main queue meanwhile waits for the common mode
/// without ending the other mode's sleep more than once, then runs.
func mainLoopModeSwitchSystemCalls() {
    let loop = EvRunLoop.current
    guard loop === EvRunLoop.main else { fail("not the main loop") }
    let inner = EvRunLoop.Mode("harness.inner")
    loop.add(EvTimer(after: .seconds(3600)) { _ in }, forMode: inner)
    loop.run(mode: .default, timeout: .zero)  // the main queue watched
    let switches = 20
    arm("epoll_ctl:1000000000:EINVAL@thread")
    for _ in 0..<switches {
        loop.run(mode: inner, timeout: .zero)
        loop.run(mode: .default, timeout: .zero)
    }
    let calls = runloopkit_faults_calls("epoll_ctl")
    runloopkit_faults_disarm()
    let ran = Mutex(false)
    DispatchQueue.main.async { ran.withLock { $0 = true } }
    let wakeUps = Mutex(0)
    let observer = EvObserver(activities: .afterWaiting, repeats: true) { _, _ in wakeUps.withLock { $0 += 1 } }
    loop.add(observer, forMode: inner)
    loop.run(mode: inner, timeout: .milliseconds(50))
    loop.remove(observer, forMode: inner)
    guard !ran.withLock({ $0 }) else { fail("main-queue work ran in a mode that is not common") }
    guard wakeUps.withLock({ $0 }) == 1 else { fail("the queued work ended the other mode's sleep \(wakeUps.withLock { $0 }) times") }
    run(loop, for: 10) { ran.withLock { $0 } }
    guard ran.withLock({ $0 }) else { fail("main-queue work queued during another mode never ran") }
    guard calls <= 2 else { fail("\(calls) epoll_ctl for \(switches) switches of the main loop (at most 2)") }
    print("\(switches) mode switches of the main loop: \(calls) epoll_ctl")
}

/// The main loop handling version-0 sources signalled from another thread, 40 cycles: with no
/// observer of BeforeWaiting or AfterWaiting, nothing can tell the main-queue shortcut (R20.7)
/// from the sleep, so no iteration makes the shortcut's look (a `poll` of the main queue's
/// eventfd; before, one in every iteration after the first: about two a cycle), and the poll
/// after each handled source is the next iteration's sleep (R20.6): one `epoll_wait` a cycle,
/// not two. With such an observer the look is made, as CF makes it. Main-queue work queued
/// meanwhile runs either way.
func mainLoopHandledSourcesSystemCalls() {
    let loop = EvRunLoop.current
    guard loop === EvRunLoop.main else { fail("not the main loop") }
    let handled = DispatchSemaphore(value: 0)
    let source = EvSource { handled.signal() }
    loop.add(source, forMode: .default)
    let mainQueueWork = ReadCount()
    let cycles = 40
    func looks(observed: Bool) -> (looks: Int, epollWaits: Int) {
        let observer = EvObserver(activities: .beforeWaiting, repeats: true) { _, _ in }
        if observed { loop.add(observer, forMode: .default) }
        let driver = Thread {
            for cycle in 0..<cycles {
                while !loop.isWaiting { sched_yield() }
                if cycle % 10 == 0 { DispatchQueue.main.async { mainQueueWork.bump() } }
                source.signal()
                loop.wakeUp()
                handled.wait()
            }
            while !loop.isWaiting { sched_yield() }
            loop.stop()
        }
        arm("poll:1000000000:EINVAL@thread;epoll_wait:1000000000:EINVAL@thread")
        driver.start()
        let result = loop.run(mode: .default, timeout: .seconds(30))
        let calls = (runloopkit_faults_calls("poll"), runloopkit_faults_calls("epoll_wait"))
        runloopkit_faults_disarm()
        loop.remove(observer, forMode: .default)
        if result != .stopped { fail("main loop handled sources (observed: \(observed)): run ended \(result)") }
        return calls
    }
    let (unobserved, sleeps) = looks(observed: false)
    let observed = looks(observed: true).looks
    run(loop, for: 10) { mainQueueWork.value == 2 * cycles / 10 }
    source.invalidate()
    let ran = mainQueueWork.value
    guard ran == 2 * cycles / 10 else { fail("\(ran) of \(2 * cycles / 10) main-queue blocks ran") }
    guard unobserved == 0 else { fail("\(unobserved) looks at the main queue for \(cycles) cycles with no observer of the wait (none expected)") }
    // One sleep a cycle, the last one's before the stop, and up to two for each main-queue
    // block, which may wake the loop by itself and end a cycle's merged sleep early.
    let sleepLimit = cycles + 1 + 2 * (cycles / 10)
    guard sleeps <= sleepLimit else { fail("\(sleeps) epoll_wait for \(cycles) cycles with no observer (at most \(sleepLimit))") }
    guard observed >= cycles else { fail("\(observed) looks at the main queue for \(cycles) cycles with a BeforeWaiting observer (CF makes one per iteration after the first)") }
    print("main loop, \(cycles) handled sources: \(unobserved) looks at the main queue and \(sleeps) epoll_wait unobserved, \(observed) looks observed")
}
