import Foundation
@testable import RunLoopKit
import TestSupport

/// The main loop servicing the main queue sleeps inside libev's backend poll, as every loop
/// does: another thread waits (10 s at most) for the kernel to show the main thread asleep in
/// `epoll_wait` on libev's epoll set of the loop, then stops it.
func mainLoopSleepsInLibev(_ main: EvRunLoop) {
    let tid = ThreadProbe.currentThreadID()
    // Only libev's epoll set of the loop watches its wake-up eventfd.
    let wake = (main.waiter as! EvBackend).wake.descriptor
    Thread {
        let deadline = ContinuousClock.now + .seconds(10)
        var found = false
        while !found && ContinuousClock.now < deadline {
            found = main.isWaiting && ThreadProbe.epollWaitDescriptor(of: tid).map { ThreadProbe.epoll($0, watches: wake) } == true
            if !found { sched_yield() }
        }
        print("asleep in libev's poll: \(found)")
        main.stop()
    }.start()
    main.add(EvTimer(after: .seconds(3600)) { _ in }, forMode: .default)
    print("result: \(main.run(mode: .default, timeout: .seconds(30)))")
}
