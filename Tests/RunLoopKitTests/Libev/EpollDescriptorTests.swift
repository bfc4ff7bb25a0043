import Foundation
@testable import RunLoopKit
import Testing
import TestSupport

/// libev does not tell a loop its epoll descriptor: the loop notes the lowest free number before
/// `ev_loop_new` and checks, in the kernel's fdinfo, which epoll instance watches its wake-up
/// eventfd. Another thread may take that number first.
@Suite struct EpollDescriptorTests {
    /// Loops made while other threads open and close pipes all the time (each pipe takes the
    /// lowest free numbers) still know libev's epoll descriptor, and it is the epoll instance
    /// that watches the loop's eventfd. One thread opens and closes a pipe at a time; the other
    /// opens a hundred before it closes them, as a thousand loops made at once do, so libev's
    /// number may land far from the one the loop expected.
    @Test(arguments: [1, 100])
    func aLoopKnowsLibevsEpollDescriptorWhileOtherThreadsOpenDescriptors(pipesAtOnce: Int) {
        let churning = Box(true)
        let churners = [1, pipesAtOnce].map { burst in
            let done = Latch()
            Thread {
                var fds = [Int32](repeating: 0, count: 2 * burst)
                while churning.get {
                    var opened = 0
                    while opened < burst, fds.withUnsafeMutableBufferPointer({ pipe($0.baseAddress! + 2 * opened) }) == 0 {
                        opened += 1
                    }
                    for fd in fds[0..<(2 * opened)] { close(fd) }
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
    /// Loops made by many threads at once (a group of loops starting together, each thread
    /// making its loop as it starts and keeping it) each know libev's epoll descriptor.
    @Test func loopsMadeAtOnceKnowLibevsEpollDescriptor() {
        let threads = 500
        let known = EventLog<Bool>()
        let release = Latch()
        let made = (0..<threads).map { _ in
            let done = Latch()
            Thread {
                let backend = EvRunLoop.current.waiter as! EvBackend
                known.append(backend.backendFD >= 0 && ThreadProbe.epollTargets(of: backend.backendFD).contains(backend.wake.descriptor))
                done.open()
                _ = release.wait()
                release.open()  // for the next thread: a latch lets one waiter through
            }.start()
            return done
        }
        for done in made { #expect(done.wait()) }
        release.open()
        #expect(known.all.count == threads && known.all.allSatisfy { $0 }, "\(known.all.filter { !$0 }.count) of \(threads) loops without their epoll descriptor")
    }

    /// The search through every descriptor lists a directory's numbered names, each read within
    /// its own record: a record is only as long as its name, and a read of a whole `dirent` from
    /// the last one of a full buffer went past it (a crash when a thousand loops were made at
    /// once; AddressSanitizer reports it here).
    @Test func aDirectoryOfThousandsOfNumberedNamesIsListedWhole() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("numbered-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: false)
        defer { try? FileManager.default.removeItem(at: directory) }
        for number in 0..<3000 {
            let file = open(directory.appendingPathComponent("\(number)").path, O_CREAT | O_WRONLY | O_CLOEXEC, 0o600)
            #expect(file >= 0)
            close(file)
        }
        let listed = EvBackend.numberedEntries(of: directory.path)
        #expect(listed.count == 3000 && Set(listed) == Set(0..<3000))
    }
}
