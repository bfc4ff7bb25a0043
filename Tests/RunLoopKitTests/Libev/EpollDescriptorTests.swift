import Foundation
@testable import RunLoopKit
import Testing
import TestSupport

/// libev does not tell a loop its epoll descriptor: the loop notes the lowest free number before
/// `ev_loop_new` and checks, in the kernel's fdinfo, which epoll instance watches its wake-up
/// eventfd. Another thread may take that number first.
@Suite struct EpollDescriptorTests {
    /// Loops made while two other threads open and close pipes all the time (each pipe takes the
    /// lowest free numbers) still know libev's epoll descriptor, and it is the epoll instance
    /// that watches the loop's eventfd.
    @Test func aLoopKnowsLibevsEpollDescriptorWhileOtherThreadsOpenDescriptors() {
        let churning = Box(true)
        let churners = (0..<2).map { _ in
            let done = Latch()
            Thread {
                var fds: [Int32] = [0, 0]
                while churning.get {
                    guard pipe(&fds) == 0 else { continue }
                    close(fds[0])
                    close(fds[1])
                }
                done.open()
            }.start()
            return done
        }
        let unknown = EventLog<String>()
        for _ in 0..<200 {
            let made = Latch()
            Thread {
                let loop = EvRunLoop.current
                let backend = loop.waiter as! EvBackend
                if backend.backendFD < 0 || !ThreadProbe.epollTargets(of: backend.backendFD).contains(backend.wake.descriptor) {
                    unknown.append("\(backend.backendFD)")
                }
                made.open()
            }.start()
            #expect(made.wait())
        }
        churning.set(false)
        for done in churners { #expect(done.wait()) }
        #expect(unknown.all.isEmpty, "libev's epoll descriptor unknown or wrong for \(unknown.all.count) of 200 loops")
    }
}
