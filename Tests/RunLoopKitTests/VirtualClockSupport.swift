import Foundation
@testable import RunLoopKit
import TestSupport

/// Runs `body` on a new thread whose loop waits with a ``VirtualWaiter``: time moves only as the
/// loop sleeps to a deadline (`policy` ``VirtualWaiter/AdvancePolicy/toEachDeadline``) or as the
/// test moves it (``VirtualWaiter/AdvancePolicy/manual``), never by sleeping. Returns the body's
/// value once the thread has exited.
func onVirtualLoopThread<T: Sendable>(
    policy: VirtualWaiter.AdvancePolicy = .toEachDeadline,
    _ body: @escaping @Sendable (EvRunLoop, VirtualWaiter) -> T
) -> T {
    let clock = VirtualWaiter(policy: policy)
    let result = Box<T?>(nil)
    let thread = spawnThread {
        let loop = EvRunLoop(isMain: false, waiter: clock)
        ThreadRegistry.adopt(loop)
        result.set(body(loop, clock))
    }
    pthread_join(thread, nil)
    return result.get!
}

/// Starts a thread whose loop waits with `clock` and runs `body`; returns the loop once it
/// exists. `finished` opens when the body has returned.
func startVirtualLoopThread(
    _ clock: VirtualWaiter, _ body: @escaping @Sendable (EvRunLoop) -> Void
) -> (loop: EvRunLoop, finished: Latch) {
    let loop = Box<EvRunLoop?>(nil)
    let ready = Latch()
    let finished = Latch()
    Thread {
        let made = EvRunLoop(isMain: false, waiter: clock)
        ThreadRegistry.adopt(made)
        loop.set(made)
        ready.open()
        body(made)
        finished.open()
    }.start()
    precondition(ready.wait(), "virtual loop thread did not start")
    return (loop.get!, finished)
}
