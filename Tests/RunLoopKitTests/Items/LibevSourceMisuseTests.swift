import CLibev
import Foundation
import RunLoopKit
import Testing
import TestSupport

/// What stays forbidden with an ``EvLibevSource``: each case stops the process with a message
/// naming what was done (an exit test per case; bodies capture nothing).
@Suite struct LibevSourceMisuseTests {
    private func message(_ result: ExitTest.Result?) -> String {
        String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
    }

    @Test func theEventLoopBeforeTheSourceIsAddedStops() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            onLoopThread { _ in EvLibevSource().withEventLoop { _ in } }
        }
        #expect(message(result).contains("EvLibevSource.withEventLoop(_:): the source is in no run loop yet"))
    }

    @Test func theEventLoopFromAnotherThreadStops() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let source = EvLibevSource()
            let other = startLoopThread { _ in Latch().wait() }
            other.loop.add(source, forMode: .default)
            source.withEventLoop { _ in }
        }
        #expect(message(result).contains("EvLibevSource.withEventLoop(_:): an EvLibevSource's libev loop can be used only on the loop's own thread"))
    }

    @Test func theEventLoopAfterInvalidationStops() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            onLoopThread { loop in
                let source = EvLibevSource()
                loop.add(source, forMode: .default)
                source.invalidate()
                source.withEventLoop { _ in }
            }
        }
        #expect(message(result).contains("EvLibevSource.withEventLoop(_:): the source was invalidated"))
    }

    @Test func invalidatingFromAnotherThreadStops() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let source = EvLibevSource()
            let other = startLoopThread { _ in Latch().wait() }
            other.loop.add(source, forMode: .default)
            source.invalidate()
        }
        #expect(message(result).contains("EvLibevSource.invalidate()"))
    }

    @Test func addingTheSourceToASecondLoopStops() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let source = EvLibevSource()
            let first = startLoopThread { _ in Latch().wait() }
            first.loop.add(source, forMode: .default)
            first.loop.remove(source, forMode: .default)
            onLoopThread { loop in loop.add(source, forMode: .default) }
        }
        #expect(message(result).contains("this EvLibevSource belongs to another run loop"))
    }

    @Test func evRunOnTheLibevLoopStops() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            onLoopThread { loop in
                let source = EvLibevSource()
                loop.add(source, forMode: .default)
                source.withEventLoop { _ = ev_run($0, Int32(EVRUN_NOWAIT)) }
            }
        }
        #expect(message(result).contains("ev_run was called on its libev loop"))
    }

    @Test func destroyingTheLibevLoopStops() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            onLoopThread { loop in
                let source = EvLibevSource()
                loop.add(source, forMode: .default)
                source.withEventLoop { ev_loop_destroy($0) }
            }
        }
        #expect(message(result).contains("ev_loop_destroy was called on its libev loop"))
    }

    @Test func replacingTheUserdataStops() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            onLoopThread { loop in
                let source = EvLibevSource()
                loop.add(source, forMode: .default)
                source.withEventLoop { ev_set_userdata($0, nil) }
            }
        }
        #expect(message(result).contains("EvLibevSource.withEventLoop(_:): ev_set_userdata was called"))
    }

    @Test func replacingTheInvokePendingCallbackStops() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            onLoopThread { loop in
                let source = EvLibevSource()
                loop.add(source, forMode: .default)
                source.withEventLoop { ev_set_invoke_pending_cb($0) { ev_invoke_pending($0) } }
                loop.run(mode: .default, timeout: .seconds(30))  // stops at its first sleep
            }
        }
        #expect(message(result).contains("the invoke-pending callback of its libev loop was replaced"))
    }

    @Test func replacingTheReleaseCallbackStops() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            onLoopThread { loop in
                let source = EvLibevSource()
                loop.add(source, forMode: .default)
                source.withEventLoop { ev_set_loop_release_cb($0, { _ in }, { _ in }) }
                // Seen when a sleep in the libraries' loop returns: a timer ends each sleep.
                loop.add(EvTimer(interval: .milliseconds(20), repeats: true) { _ in }, forMode: .default)
                loop.run(mode: .default, timeout: .seconds(30))
            }
        }
        #expect(message(result).contains("the release callback of its libev loop was replaced"))
    }

    @Test func watchingASignalWithEvSignalStops() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            onLoopThread { loop in
                let source = EvLibevSource()
                loop.add(source, forMode: .default)
                let watcher = UnsafeMutablePointer<ev_signal>.allocate(capacity: 1)
                clibev_signal_init(watcher, { _, _, _ in }, SIGUSR2)
                source.withEventLoop { ev_signal_start($0, watcher) }
                loop.run(mode: .default, timeout: .seconds(30))  // stops at its first sleep
            }
        }
        #expect(message(result).contains("a libev library watches a signal with ev_signal"))
    }

    /// libev's own assertion: child watchers only on the default loop, which a run loop's is not.
    @Test func watchingAChildWithEvChildStops() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            onLoopThread { loop in
                let source = EvLibevSource()
                loop.add(source, forMode: .default)
                let watcher = UnsafeMutablePointer<ev_child>.allocate(capacity: 1)
                clibev_child_init(watcher, { _, _, _ in }, 0, 0)
                source.withEventLoop { ev_child_start($0, watcher) }
            }
        }
        #expect(message(result).contains("child watchers are only supported in the default loop"))
    }

    /// One of the run loop's own descriptors, its wake-up eventfd (found as the first number an
    /// EvFileDescriptorSource refuses as internal that is an eventfd), watched by a library:
    /// stopped at the next poll. Not the libraries' own epoll set, which may have the lowest
    /// number when a lower one was freed meanwhile: the kernel refuses to watch it inside
    /// itself, and libev's assertion stops the process before any poll.
    @Test func watchingTheLoopsOwnDescriptorStops() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            onLoopThread { loop in
                let source = EvLibevSource()
                loop.add(source, forMode: .default)
                loop.run(mode: .default, timeout: .milliseconds(1))
                let own = (0..<Int32(1024)).first { fd in
                    var link = [CChar](repeating: 0, count: 64)
                    let length = readlink("/proc/self/fd/\(fd)", &link, link.count)
                    guard length > 0,
                        String(decoding: link[0..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self) == "anon_inode:[eventfd]"
                    else { return false }
                    do {
                        _ = try EvFileDescriptorSource(fileDescriptor: fd, events: .readable) { _ in }
                        return false
                    } catch {
                        return (error as? EvSourceError) == .internalDescriptor(fd)
                    }
                }!
                let watcher = UnsafeMutablePointer<ev_io>.allocate(capacity: 1)
                clibev_io_init(watcher, { _, _, _ in }, own, Int32(EV_READ))
                source.withEventLoop { ev_io_start($0, watcher) }
                loop.run(mode: .default, timeout: .seconds(30))  // stops at its first sleep
            }
        }
        #expect(message(result).contains("a libev library watches descriptor"))
    }

    /// Not misuse: a library stopped its `ev_io` and closed the descriptor, whose file stays open
    /// elsewhere (a duplicate, a child), so the kernel keeps its entry in the libraries' epoll
    /// set (libev removes none when a watcher stops). The number is then reused for one of a run
    /// loop's own descriptors (another thread's new loop). The audit after the next library code
    /// must not take the old entry for a library watching that descriptor: the loop goes on.
    @Test func aClosedLibraryDescriptorWhoseNumberARunLoopReusesIsNotTakenForMisuse() async {
        let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            onLoopThread { loop in
                let source = EvLibevSource()
                loop.add(source, forMode: .default)
                let watcher = UnsafeMutablePointer<ev_io>.allocate(capacity: 1)
                // A new loop's descriptors take the lowest free numbers; another thread may take
                // the one just closed first: then again, with a new pipe.
                var arranged = false
                for _ in 0..<20 where !arranged {
                    var ends: [Int32] = [0, 0]
                    precondition(pipe(&ends) == 0)
                    let keeper = dup(ends[0])
                    clibev_io_init(watcher, { _, _, _ in }, ends[0], Int32(EV_READ))
                    source.withEventLoop { ev_io_start($0, watcher) }
                    loop.run(mode: .default, timeout: .milliseconds(1))  // libev's epoll_ctl adds it
                    source.withEventLoop { ev_io_stop($0, watcher) }
                    close(ends[0])  // the entry stays in the kernel: `keeper` holds the pipe open
                    let made = Latch(), done = Latch()
                    let other = Thread {
                        _ = EvRunLoop.current
                        made.open()
                        done.wait()
                    }
                    other.start()
                    made.wait()
                    let reused = (try? EvFileDescriptorSource(fileDescriptor: ends[0], events: .readable) { _ in }) == nil
                    if reused {
                        source.withEventLoop { _ in }  // library code ran: the next poll audits
                        loop.run(mode: .default, timeout: .milliseconds(1))
                    }
                    done.open()
                    close(keeper)
                    close(ends[1])
                    arranged = reused
                }
                source.invalidate()
                watcher.deallocate()
                precondition(arranged, "another loop never took the number just closed")
            }
        }
        #expect(message(result) == "")
    }
}
