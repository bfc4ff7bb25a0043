import Foundation
@testable import RunLoopKit
import TestSupport

/// The main loop servicing the main queue sleeps inside libev's backend poll, as every loop
/// does: another thread waits (10 s at most) for the kernel to show the main thread asleep in
/// `epoll_wait` on libev's epoll descriptor, then stops it.
func mainLoopSleepsInLibev(_ main: EvRunLoop) {
    let tid = ThreadProbe.currentThreadID()
    Thread {
        let deadline = ContinuousClock.now + .seconds(10)
        var found = false
        while !found && ContinuousClock.now < deadline {
            found = main.isWaiting && ThreadProbe.epollWaitDescriptor(of: tid).map(main.libevPollDescriptors.contains) == true
            if !found { sched_yield() }
        }
        print("asleep in libev's poll: \(found)")
        main.stop()
    }.start()
    main.add(EvTimer(after: .seconds(3600)) { _ in }, forMode: .default)
    print("result: \(main.run(mode: .default, timeout: .seconds(30)))")
}
