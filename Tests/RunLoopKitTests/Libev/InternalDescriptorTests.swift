import Foundation
import CEpoll
import RunLoopKit
import Synchronization
import Testing
import TestSupport

/// A run loop's own descriptors cannot be watched as a caller's (`EvSourceError.internalDescriptor`).
@Suite struct InternalDescriptorTests {
    /// Each descriptor a loop opens — libev's epoll set, the wake-up eventfd, the timerfd (made
    /// at its first sleep with a deadline), and the epoll set for callers' descriptors — is
    /// refused with a clear error. Before, they
    /// were accepted, and watching the loop's epoll set aborted inside libev (`ELOOP`
    /// assertion). In a child process, so that no other test opens descriptors meanwhile.
    @Test func aLoopsOwnDescriptorsAreRefused() async {
        await #expect(processExitsWith: .success) {
            // libdispatch makes its own descriptors lazily; make them now, before counting.
            DescriptorSnapshot.settleLibdispatch()
            let outcomes = onLoopThread { loop -> [String] in
                // A sleep with a deadline makes the loop's timerfd.
                loop.add(EvTimer(after: .milliseconds(1)) { _ in }, forMode: .default)
                guard loop.run(mode: .default, timeout: .seconds(10)) == .finished else { exit(14) }
                // A first descriptor source makes the loop's second epoll set (for callers' fds).
                var pipeFDs: [Int32] = [0, 0]
                guard pipe(&pipeFDs) == 0 else { exit(10) }
                guard let first = try? EvFileDescriptorSource(fileDescriptor: pipeFDs[1], events: .writable, handler: { _ in }) else { exit(11) }
                loop.add(first, forMode: .default)
                // A sleep, not a poll: libev registers the new set in its own at its next wait.
                _ = loop.run(mode: .default, timeout: .seconds(10), returnAfterSourceHandled: true)
                // Found positively, through the kernel's epoll sets (new numbers alone are not
                // enough: a number closed and reused meanwhile does not look new): the loop's
                // set for callers' descriptors is the epoll set watching the pipe, libev's is the
                // one watching that set, and libev's also watches the eventfd and the timerfd.
                // (The process's file register watches the pipe too, but no set watches it.)
                let epollTargets = currentEpollTargets()
                let sets = epollTargets.compactMap { fd, targets -> (callers: Int32, libev: Int32)? in
                    guard targets.contains(pipeFDs[1]), let libev = epollTargets.first(where: { $0.value.contains(fd) })?.key else { return nil }
                    return (fd, libev)
                }
                guard sets.count == 1, let (callers, libev) = sets.first else { exit(13) }
                var opened: Set<Int32> = [callers, libev]
                opened.formUnion(epollTargets[libev] ?? [])
                opened.subtract(pipeFDs)
                var outcomes: [String] = []
                for fd in opened.sorted() {
                    let link = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(fd)")) ?? "?"
                    guard link.hasPrefix("anon_inode:") else { continue }  // the directory listing's own
                    do {
                        let source = try EvFileDescriptorSource(fileDescriptor: fd, events: .readable) { _ in }
                        loop.add(source, forMode: .default)
                        _ = loop.run(mode: .default, timeout: .zero)
                        outcomes.append("\(link) accepted")
                    } catch {
                        outcomes.append("\(link) refused: \(error)")
                    }
                }
                first.invalidate()
                close(pipeFDs[0])
                close(pipeFDs[1])
                return outcomes
            }
            // Two epoll sets, the eventfd and the timerfd, each refused.
            guard outcomes.count == 4, outcomes.allSatisfy({ $0.contains("refused") && $0.contains("belongs to a run loop") }) else {
                print(outcomes)
                exit(12)
            }
        }
    }

    /// The record of loops' descriptors grows with the numbers it holds: a loop whose descriptors
    /// are numbered past 2,000 (beyond the record's first size) has them refused, and once its
    /// thread has exited the same numbers, reused by the caller, are accepted. In a child
    /// process, which raises its descriptor limit and fills the low numbers.
    @Test func highNumberedDescriptorsAreRefusedWhileTheirLoopLives() async {
        await #expect(processExitsWith: .success) {
            var limit = rlimit()
            getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit)
            guard limit.rlim_max >= 2_100 else { exit(0) }  // nothing to test under a low hard limit
            limit.rlim_cur = limit.rlim_max
            guard setrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0 else { exit(10) }
            DescriptorSnapshot.settleLibdispatch()
            let filler = open("/dev/null", O_RDONLY)
            guard filler >= 0 else { exit(11) }
            // The first descriptor source makes the process's file register: made now, it takes
            // a low number, not one of the loop's that the caller reuses below.
            _ = try? EvFileDescriptorSource(fileDescriptor: filler, events: .readable) { _ in }
            while true {
                let fd = dup(filler)
                guard fd >= 0 else { exit(11) }
                if fd >= 2_000 { break }
            }
            let numbers = Mutex<(eventfd: Int32, epoll: Int32)>((-1, -1))
            let refusedWhileAlive = Atomic<Int>(0)
            let thread = spawnThread {
                // Numbers another thread of this process freed since (under load the test
                // harness's threads may close theirs late) are filled again just before the
                // loop is made, so that its descriptors are numbered past 2,000.
                while true {
                    let fd = dup(filler)
                    guard fd >= 0 else { exit(11) }
                    if fd >= 2_000 { close(fd); break }
                }
                _ = try? EvRunLoop.forCurrentThread()
                // libev's epoll set is the one watching an eventfd numbered past 2,000.
                guard let (epoll, targets) = currentEpollTargets().first(where: { $0.key >= 2_000 }),
                    let eventfd = targets.first(where: { $0 >= 2_000 }) else { exit(12) }
                numbers.withLock { $0 = (eventfd, epoll) }
                for fd in [eventfd, epoll] where fd >= 2_000 {
                    if (try? EvFileDescriptorSource(fileDescriptor: fd, events: .readable) { _ in }) == nil {
                        refusedWhileAlive.add(1, ordering: .relaxed)
                    }
                }
            }
            pthread_join(thread, nil)
            guard refusedWhileAlive.load(ordering: .relaxed) == 2 else { exit(13) }
            // The loop is gone and its numbers closed: the caller's new descriptors reuse them.
            let (eventfdNumber, epollNumber) = numbers.withLock { $0 }
            for number in [eventfdNumber, epollNumber] {
                let fd = eventfd(0, 0)
                guard fd == number || dup2(fd, number) == number else { exit(14) }
                guard (try? EvFileDescriptorSource(fileDescriptor: number, events: .readable) { _ in }) != nil else { exit(15) }
            }
        }
    }

    /// A loop learns libev's epoll descriptor by noting the lowest free number just before libev
    /// makes it. Another thread may take that number in between: the loop must then not claim it,
    /// or that thread's own epoll set (or whatever later reuses the number) is refused as a run
    /// loop's descriptor. Before, any epoll set at that number was claimed. Threads making loops
    /// race a thread making epoll sets of its own, each of which must be accepted.
    @Test func aNumberAnotherThreadTookWhileALoopWasMadeIsNotClaimed() {
        let done = Atomic<Bool>(false)
        let refused = Atomic<Int>(0)
        let maker = spawnThread(named: "epoll maker") {
            while !done.load(ordering: .acquiring) {
                let fd = epoll_create1(Int32(EPOLL_CLOEXEC))
                guard fd >= 0 else { continue }
                do {
                    _ = try EvFileDescriptorSource(fileDescriptor: fd, events: .readable) { _ in }
                } catch {
                    refused.add(1, ordering: .relaxed)
                }
                close(fd)
            }
        }
        for _ in 0..<40 {
            let threads = (0..<25).map { _ in spawnThread { _ = try? EvRunLoop.forCurrentThread() } }
            for thread in threads { pthread_join(thread, nil) }
        }
        done.store(true, ordering: .releasing)
        pthread_join(maker, nil)
        #expect(refused.load(ordering: .relaxed) == 0)
    }
}

/// Every open epoll set of this process, with the descriptors it watches (`/proc/self/fdinfo`).
private func currentEpollTargets() -> [Int32: Set<Int32>] {
    var targets: [Int32: Set<Int32>] = [:]
    for name in (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? [] {
        guard let fd = Int32(name),
            (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(name)")) == "anon_inode:[eventpoll]"
        else { continue }
        targets[fd] = Set(ThreadProbe.epollTargets(of: fd))
    }
    return targets
}
