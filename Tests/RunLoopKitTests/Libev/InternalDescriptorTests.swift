import Foundation
import CEpoll
import RunLoopKit
import Synchronization
import Testing
import TestSupport

/// A run loop's own descriptors cannot be watched as a caller's (issue 10, point 5).
@Suite struct InternalDescriptorTests {
    /// Each descriptor a new loop opens — libev's epoll set, the wake-up eventfd, the timerfd,
    /// and the epoll set for callers' descriptors — is refused with a clear error. Before, they
    /// were accepted, and watching the loop's epoll set aborted inside libev (`ELOOP`
    /// assertion). In a child process, so that no other test opens descriptors meanwhile.
    @Test func aLoopsOwnDescriptorsAreRefused() async {
        await #expect(processExitsWith: .success) {
            // libdispatch makes its own descriptors lazily; make them now, before counting.
            DescriptorSnapshot.settleLibdispatch()
            let before = Set((try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? [])
            let outcomes = onLoopThread { loop -> [String] in
                // A first descriptor source makes the loop's second epoll set (for callers' fds).
                var pipeFDs: [Int32] = [0, 0]
                guard pipe(&pipeFDs) == 0 else { exit(10) }
                guard let first = try? EvFileDescriptorSource(fileDescriptor: pipeFDs[1], events: .writable, handler: { _ in }) else { exit(11) }
                loop.add(first, forMode: .default)
                _ = loop.run(mode: .default, timeout: .zero, returnAfterSourceHandled: true)
                let now = Set((try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? [])
                // New epoll sets, and what they watch (a number closed and reused meanwhile is not new).
                var opened = Set(now.subtracting(before).compactMap { Int32($0) })
                for fd in opened {
                    let info = (try? String(contentsOfFile: "/proc/self/fdinfo/\(fd)", encoding: .utf8)) ?? ""
                    for line in info.split(separator: "\n") where line.hasPrefix("tfd:") {
                        if let target = line.split(whereSeparator: \.isWhitespace).dropFirst().first.flatMap({ Int32($0) }) { opened.insert(target) }
                    }
                }
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
