// Faults while a loop is made, and on its own descriptors.
import Dispatch
import FaultInjection
import Foundation
import RunLoopKit
import Synchronization

/// loop's first sleep with a deadline, not here: see the `timerfd-create` scenarios.)
func creationFaults() {
    let cases: [(spec: String, expected: String)] = [
        ("eventfd:1:EMFILE", "\(EvRunLoopError.outOfFileDescriptors)"),
        ("eventfd:1:ENOMEM", "unavailable"),
        ("eventfd:1:EINTR:3", "ok"),
        ("epoll_ctl:1:ENOMEM:0", "unavailable"),
        ("epoll_ctl:1:ENOSPC:0", "unavailable"),
        ("epoll_ctl:3:EINTR:4", "ok"),  // calls 1 and 2: the check of the eventfd; 3: libev's
        ("epoll_ctl:1:ENOMEM:2", "ok"),
    ]
    for (spec, expected) in cases {
        let outcome = onNewThread { () -> String in
            arm(spec + "@thread")
            defer { runloopkit_faults_disarm() }
            do {
                let loop = try EvRunLoop.forCurrentThread()
                runloopkit_faults_disarm()
                // The loop works: a timer fires on time.
                let fired = Mutex(false)
                loop.add(EvTimer(after: .milliseconds(20)) { _ in fired.withLock { $0 = true } }, forMode: .default)
                run(loop, for: 5) { fired.withLock { $0 } }
                return fired.withLock { $0 } ? "ok" : "timer never fired"
            } catch let error as EvRunLoopError {
                if case .backendUnavailable(let detail) = error { return "unavailable: \(detail)" }
                return "\(error)"
            } catch {
                return "\(error)"
            }
        }
        guard outcome.hasPrefix(expected) else { fail("\(spec): expected \(expected), got \(outcome)") }
        print("\(spec): \(outcome)")
    }
}

/// `epoll_ctl` refuses one of the loop's own descriptors with `EBADF` (libev asserts on that):
/// at creation (`creation`: the eventfd) the loop's creation throws naming the call; later (the
/// timerfd, registered when the first sleep with a deadline is planned) the process stops with
/// RunLoopKit's message naming its call, never libev's assertion.
func ownDescriptorRefused(atCreation: Bool) {
    let outcome = onNewThread { () -> String in
        if atCreation {
            arm("epoll_ctl:1:EBADF:0@thread")
            defer { runloopkit_faults_disarm() }
            do {
                _ = try EvRunLoop.forCurrentThread()
                return "created"
            } catch {
                return "\(error)"
            }
        }
        let loop = EvRunLoop.current
        loop.add(EvTimer(after: .milliseconds(5)) { _ in }, forMode: .default)
        arm("epoll_ctl:1:EBADF:0@thread")
        loop.run(mode: .default, timeout: .seconds(5))
        return "ran"
    }
    guard atCreation, outcome.contains("epoll_ctl refused the loop's own descriptor") else { fail("EBADF: \(outcome)") }
    print("EBADF at creation: \(outcome)")
}
