import Foundation
@testable import RunLoopKit
import Synchronization
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A thread that can be joined. ``join(timeout:)`` returns once the thread has fully exited,
/// that is after its thread-local destructors ran, and with them its run loop's teardown (R4).
/// Foundation's `Thread` is detached, so it cannot tell when that has happened.
final class JoinableTestThread: Sendable {
    private final class Start {
        let body: @Sendable () -> Void
        init(_ body: @escaping @Sendable () -> Void) { self.body = body }
    }

    private let handle: pthread_t
    private let joined = Atomic<Bool>(false)

    init(_ body: @escaping @Sendable () -> Void) {
        let start = Unmanaged.passRetained(Start(body)).toOpaque()
        var handle = pthread_t()
        let status = pthread_create(&handle, nil, { start in
            Unmanaged<Start>.fromOpaque(start!).takeRetainedValue().body()
            return nil
        }, start)
        precondition(status == 0, "pthread_create failed (\(status))")
        self.handle = handle
    }

    /// Waits until the thread has exited; false if `seconds` passed first (a safety net only).
    @discardableResult
    func join(timeout seconds: Int = 30) -> Bool {
        precondition(!joined.exchange(true, ordering: .relaxed), "JoinableTestThread joined twice")
        var deadline = timespec()
        clock_gettime(CLOCK_REALTIME, &deadline)
        deadline.tv_sec += seconds
        return Self.timedJoin(handle, nil, &deadline) == 0
    }

    /// glibc's `pthread_timedjoin_np`, which Swift's Glibc module does not import (it needs
    /// `_GNU_SOURCE`).
    private static let timedJoin: @convention(c) (pthread_t, UnsafeMutablePointer<UnsafeMutableRawPointer?>?, UnsafePointer<timespec>) -> Int32 = {
        guard let symbol = dlsym(dlopen(nil, RTLD_NOW), "pthread_timedjoin_np") else {
            fatalError("pthread_timedjoin_np not found")
        }
        return unsafeBitCast(symbol, to: (@convention(c) (pthread_t, UnsafeMutablePointer<UnsafeMutableRawPointer?>?, UnsafePointer<timespec>) -> Int32).self)
    }()
}

/// The open descriptors of this process, each with enough identity to tell a new descriptor from
/// an old one that reuses its number (an eventfd's `eventfd-id`), and the descriptors each epoll
/// instance watches (from `/proc/self/fdinfo`).
///
/// Plain counts are not enough even in an exit test's own process: libdispatch creates its
/// timerfds lazily and other descriptors come and go at start-up. ``opened(since:)`` therefore
/// leaves out what an epoll instance that already existed (libdispatch's) watches.
struct DescriptorSnapshot {
    /// Descriptor → what it is: its `/proc/self/fd` link, plus the id of an eventfd.
    let kinds: [Int32: String]
    /// Epoll descriptor → the descriptors registered in it.
    let epollTargets: [Int32: Set<Int32>]

    static func take() -> DescriptorSnapshot {
        var kinds: [Int32: String] = [:]
        var epollTargets: [Int32: Set<Int32>] = [:]
        let names = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        for name in names {
            // The directory's own descriptor is already closed: its link cannot be read.
            guard let fd = Int32(name),
                let link = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(name)")
            else { continue }
            let info = procFileText("/proc/self/fdinfo/\(name)") ?? ""
            let fields = info.split(separator: "\n").map { $0.split(whereSeparator: \.isWhitespace) }
            var kind = link
            if link == "anon_inode:[eventfd]", let id = fields.first(where: { $0.first == "eventfd-id:" })?.dropFirst().first {
                kind += " id \(id)"
            }
            if link == "anon_inode:[eventpoll]" {
                epollTargets[fd] = Set(fields.filter { $0.first == "tfd:" }.compactMap { $0.dropFirst().first.flatMap { Int32($0) } })
            }
            kinds[fd] = kind
        }
        return DescriptorSnapshot(kinds: kinds, epollTargets: epollTargets)
    }

    /// Descriptors open now and not in `earlier`, except those watched by an epoll instance that
    /// was already open in `earlier` (libdispatch's).
    /// A file unlinked while open keeps its descriptor, and its link gains " (deleted)": the same
    /// descriptor, not a new one. (Another test's files, inherited by this child process without
    /// close-on-exec and deleted by the parent meanwhile, looked opened.)
    func opened(since earlier: DescriptorSnapshot) -> [Int32: String] {
        let explained = epollTargets.filter { earlier.kinds[$0.key] == kinds[$0.key] }.values.reduce(into: Set<Int32>()) { $0.formUnion($1) }
        return kinds.filter { fd, kind in !Self.sameOpenFile(earlier.kinds[fd], kind) && !explained.contains(fd) }
    }

    private static func sameOpenFile(_ earlier: String?, _ now: String) -> Bool {
        guard let earlier else { return false }
        let deleted = " (deleted)"
        let strip = { (kind: String) in kind.hasSuffix(deleted) ? String(kind.dropLast(deleted.count)) : kind }
        return strip(earlier) == strip(now)
    }

    /// The descriptors open in this snapshot that a run loop owns, found positively: those
    /// `EvFileDescriptorSource` refuses as a loop's own, less the process's file register (not a
    /// loop's). Comparing numbers and kinds with an earlier snapshot is not enough: a descriptor
    /// closed after it, whose number (and, for an eventfd, whose id) the loop's new descriptor
    /// took, looks already open. Asked without making sources, which would enter every
    /// descriptor in the register.
    var runLoopOwned: [Int32: String] {
        let register = FileRegister.descriptor
        return kinds.filter { fd, _ in fd != register && EvBackend.isInternalDescriptor(fd) }
    }

    /// Whether `owned` is exactly one run loop's descriptors (with a timerfd or not), and its
    /// epoll instance (from the kernel's view, `/proc/self/fdinfo`) watches the others.
    func isOneLoopWatchingItsOwn(_ owned: [Int32: String], timerfd: Bool) -> Bool {
        guard isExactlyOneRunLoopsDescriptors(owned, timerfd: timerfd), let epoll = owned.first(where: { $0.value == "anon_inode:[eventpoll]" })?.key else { return false }
        return epollTargets[epoll] == Set(owned.keys).subtracting([epoll])
    }

    /// Makes libdispatch create its event loop and its timer descriptors now, before a snapshot,
    /// instead of in the middle of a measurement.
    static func settleLibdispatch() {
        let fired = Latch()
        let wallFired = Latch()
        DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(1)) { fired.open() }
        DispatchQueue.global().asyncAfter(wallDeadline: .now() + .milliseconds(1)) { wallFired.open() }
        fired.wait()
        wallFired.wait()
    }
}

/// What `opened` holds when it is exactly one run loop's descriptors: an epoll instance watching
/// an eventfd and, once the loop has slept with a deadline (`timerfd`), a timerfd; nothing else.
func isExactlyOneRunLoopsDescriptors(_ opened: [Int32: String], timerfd: Bool) -> Bool {
    let epolls = opened.filter { $0.value == "anon_inode:[eventpoll]" }
    guard opened.count == (timerfd ? 3 : 2), epolls.count == 1 else { return false }
    let others = opened.filter { $0.value != "anon_inode:[eventpoll]" }
    return others.values.filter { $0.hasPrefix("anon_inode:[eventfd]") }.count == 1
        && others.values.filter { $0 == "anon_inode:[timerfd]" }.count == (timerfd ? 1 : 0)
}


/// The keep-alive thread (常驻线程): a worker whose loop a source keeps alive, that
/// runs tasks posted from other threads, in order, until it is asked to stop; then `run()`
/// returns (R31) and the thread exits, tearing its loop down (R4).
private final class KeepAliveThread: Sendable {
    enum Transport: Sendable, CaseIterable {
        /// Tasks go into a locked queue; the source is signalled and the loop woken (R22).
        case sourceAndQueue
        /// Tasks are perform-blocks for the default mode, plus a wake-up (R54, R56).
        case performBlocks
    }

    let transport: Transport
    /// Keeps the default mode from being empty (R16); with `.sourceAndQueue` it drains the queue.
    let port: EvSource
    /// Every cancel callout of `port`: whether it came from the worker's loop, and the mode.
    let portCancels = EventLog<(sameLoop: Bool, mode: EvRunLoop.Mode)>()
    /// Set when `run()` returned on the worker.
    let runReturned = Box(false)
    private let queue = Box<[@Sendable () -> Void]>([])
    private let loopBox = Box<EvRunLoop?>(nil)
    private let thread: Box<JoinableTestThread?> = Box(nil)

    init(_ transport: Transport) {
        self.transport = transport
        let queue = self.queue
        let loopBox = self.loopBox
        let portCancels = self.portCancels
        port = EvSource(cancel: { loop, mode in
            portCancels.append((loop === loopBox.get, mode))
        }, perform: {
            let tasks = queue.update { tasks in
                defer { tasks.removeAll() }
                return tasks
            }
            for task in tasks { task() }
        })
    }

    /// Starts the worker and returns its loop once the port is in it.
    @discardableResult
    func start() -> EvRunLoop {
        let ready = Latch()
        let (port, loopBox, runReturned) = (self.port, self.loopBox, self.runReturned)
        thread.set(JoinableTestThread {
            let loop = EvRunLoop.current
            loopBox.set(loop)
            loop.add(port, forMode: .default)
            ready.open()
            loop.run()
            runReturned.set(true)
        })
        precondition(ready.wait(), "keep-alive thread did not start")
        return loopBox.get!
    }

    var loop: EvRunLoop { loopBox.get! }

    /// Posts `task` to run on the worker. Safe from any thread (R6).
    func post(_ task: @escaping @Sendable () -> Void) {
        switch transport {
        case .sourceAndQueue:
            queue.update { $0.append(task) }
            port.signal()
        case .performBlocks:
            loop.perform(inModes: [.default], task)
        }
        loop.wakeUp()  // neither a signal nor a block wakes the loop by itself (R22)
    }

    /// Asks the worker to stop: a task that stops the loop from inside (R29), so the request is
    /// not lost if `run()` is between two runs when it arrives (R28).
    func requestStop() {
        post { EvRunLoop.current.stop() }
    }

    /// Waits until the worker thread has exited.
    func join() -> Bool { thread.get!.join() }
}

@Suite struct KeepAliveThreadScenarioTests {
    @Test(arguments: KeepAliveThread.Transport.allCases)
    fileprivate func keepAliveThreadRunsPostedTasksInOrderThenStopsAndExits(_ transport: KeepAliveThread.Transport) {
        let worker = KeepAliveThread(transport)
        let loop = worker.start()
        let ran = EventLog<Int>()
        let onWorker = EventLog<Bool>()
        let taskCount = 500
        let poster = JoinableTestThread {
            for index in 0..<taskCount {
                worker.post {
                    onWorker.append(EvRunLoop.current === loop)
                    ran.append(index)
                }
            }
            worker.requestStop()
        }
        #expect(poster.join())
        #expect(worker.join(), "the keep-alive thread did not exit after the stop request")

        #expect(ran.all == Array(0..<taskCount))
        #expect(onWorker.all.allSatisfy { $0 })
        #expect(worker.runReturned.get)
        // R4: the port left the dead loop's default mode through its cancel callout, once.
        #expect(worker.portCancels.count == 1)
        #expect(worker.portCancels.all.first?.sameLoop == true)
        #expect(worker.portCancels.all.first?.mode == .default)
        #expect(!loop.contains(worker.port, forMode: .default))
        #expect(loop.allModes == [.default])
        #expect(loop.currentMode == nil)
        // The port is free again: another loop can take it and perform it.
        let performedElsewhere = onLoopThread { other -> Bool in
            other.add(worker.port, forMode: .default)
            worker.port.signal()
            return other.run(mode: .default, timeout: .zero, returnAfterSourceHandled: true) == .handledSource
        }
        #expect(performedElsewhere)
    }

    /// The worker's loop runs with no deadline and no timer: it holds two descriptors (the
    /// timerfd is made at the first sleep with a deadline), three once a timer made it sleep
    /// with one; all closed when the thread exits.
    @Test func keepAliveThreadsLoopHoldsItsDescriptorsAndClosesThemWhenItExits() async {
        // Descriptors are process-wide and the other tests run in parallel, so this one counts in
        // a process of its own.
        await #expect(processExitsWith: .success) {
            DescriptorSnapshot.settleLibdispatch()
            let before = DescriptorSnapshot.take()
            for transport in KeepAliveThread.Transport.allCases {
                let worker = KeepAliveThread(transport)
                worker.start()
                let done = Latch()
                for _ in 0..<10 { worker.post {} }
                worker.post { done.open() }
                #expect(done.wait())
                // A task posted while the loop sleeps runs after a pass through libev, which
                // registers the loop's eventfd in its epoll instance.
                #expect(spinUntil { worker.loop.isWaiting })
                let woke = Latch()
                worker.post { woke.open() }
                #expect(woke.wait())
                let idle = DescriptorSnapshot.take()
                let ownedIdle = idle.runLoopOwned
                #expect(idle.isOneLoopWatchingItsOwn(ownedIdle, timerfd: false), "a live loop that never slept with a deadline holds 2 descriptors, its epoll instance watching its eventfd (\(transport)): \(ownedIdle), \(idle.epollTargets)")
                // A timer makes the loop sleep with a deadline: its timerfd joins.
                let timerFired = Latch()
                worker.post { EvRunLoop.current.add(EvTimer(after: .milliseconds(5)) { _ in timerFired.open() }, forMode: .default) }
                #expect(timerFired.wait())
                let alive = DescriptorSnapshot.take()
                let owned = alive.runLoopOwned
                #expect(alive.isOneLoopWatchingItsOwn(owned, timerfd: true), "a live loop that slept with a deadline holds 3 descriptors, its epoll instance watching its eventfd and timerfd (\(transport)): \(owned), \(alive.epollTargets)")
                // Nothing else is new (a reused number may hide one of the loop's, never add one).
                let opened = alive.opened(since: before)
                #expect(Set(opened.keys).isSubset(of: owned.keys), "descriptors other than the loop's opened (\(transport)): \(opened), loop's: \(owned)")
                worker.requestStop()
                #expect(worker.join())
                let after = DescriptorSnapshot.take()
                #expect(after.runLoopOwned.isEmpty, "the exited thread's loop still owns descriptors (\(transport)): \(after.runLoopOwned)")
                let stillOpen = owned.filter { after.kinds[$0.key] == $0.value }
                #expect(stillOpen.isEmpty, "the exited thread's loop left descriptors open (\(transport)): \(stillOpen)")
                let left = after.opened(since: before)
                #expect(left.isEmpty, "descriptors left open after the thread exited (\(transport)): \(left)")
            }
            // Starting and ending keep-alive threads again and again leaks nothing (R4).
            for _ in 0..<50 {
                let worker = KeepAliveThread(.performBlocks)
                worker.start()
                worker.requestStop()
                #expect(worker.join())
            }
            let left = DescriptorSnapshot.take().opened(since: before)
            #expect(left.isEmpty, "50 keep-alive threads left descriptors open: \(left)")
        }
    }
}
