import CCFRunLoop
import Dispatch
import NIOCore
import NIOPosix

/// The peers a Swift user would pick instead of a run loop, measured beside the backends where
/// they have an equivalent (wake-up, perform, actor hop, timer lateness, instructions): SwiftNIO's
/// event loop and a libdispatch serial queue. They are not `Backend`s: they have no modes, no
/// version-0 sources and no run-loop timers.
enum Peers {
    /// The peers, in report order.
    static let all: [BackendID] = [.nio, .dispatch]

    /// Starts `peer`'s loop, whose "source" is a job that calls `onSignal`.
    static func startLoop(_ peer: BackendID, onSignal: @escaping @Sendable () -> Void) -> any RunningLoop {
        switch peer {
        case .nio: NIORunningLoop(onSignal: onSignal)
        case .dispatch: DispatchRunningLoop(onSignal: onSignal)
        default: preconditionFailure("\(peer.rawValue) is not a peer")
        }
    }

    /// An actor whose executor is `peer`'s loop, for the actor-hop round trip.
    static func hopTarget(_ peer: BackendID, on loop: any RunningLoop) -> any HopTarget {
        switch (peer, loop) {
        case (.nio, let loop as NIORunningLoop): EventLoopActor(loop.eventLoop)
        case (.dispatch, let loop as DispatchRunningLoop): QueueActor(DispatchQueueExecutor(loop.queue))
        default: preconditionFailure("\(peer.rawValue) has no hop target")
        }
    }
}

/// SwiftNIO: a `MultiThreadedEventLoopGroup` of one thread. Signal and post are
/// `EventLoop.execute` from another thread, which wakes the loop (its eventfd).
final class NIORunningLoop: RunningLoop {
    private let group: MultiThreadedEventLoopGroup
    let eventLoop: any EventLoop
    private let onSignal: @Sendable () -> Void

    init(onSignal: @escaping @Sendable () -> Void) {
        group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        eventLoop = group.next()
        self.onSignal = onSignal
        // The loop's thread goes where every loop thread goes (see `Pinning`).
        let cpu = Pinning.shared.loopCPU
        try! eventLoop.submit { if let cpu { _ = bench_pin_current_thread(cpu) } }.wait()
    }

    func signal() {
        eventLoop.execute(onSignal)
    }

    func post(_ item: @escaping @Sendable () -> Void, count: Int) {
        for _ in 0..<count { eventLoop.execute(item) }
    }

    func stop() {
        try! group.syncShutdownGracefully()
    }
}

/// libdispatch: a serial queue; signal and post are `async` from another thread. Its work runs
/// on libdispatch's worker threads, which the benchmark does not pin.
final class DispatchRunningLoop: RunningLoop {
    let queue = DispatchQueue(label: "runloop-bench.serial")
    private let onSignal: @Sendable () -> Void

    init(onSignal: @escaping @Sendable () -> Void) {
        self.onSignal = onSignal
    }

    func signal() {
        queue.async(execute: onSignal)
    }

    func post(_ item: @escaping @Sendable () -> Void, count: Int) {
        for _ in 0..<count { queue.async(execute: item) }
    }

    func stop() {
        queue.sync {}
    }
}

/// An actor on a SwiftNIO event loop's executor (`EventLoop.executor`).
actor EventLoopActor: HopTarget {
    nonisolated let eventLoop: any EventLoop

    init(_ eventLoop: any EventLoop) {
        self.eventLoop = eventLoop
    }

    nonisolated var unownedExecutor: UnownedSerialExecutor { eventLoop.executor.asUnownedSerialExecutor() }

    private var pings = 0

    /// Touches the actor's state, so the compiler cannot drop the hop.
    func ping() { pings &+= 1 }
}

/// The small serial executor over a `DispatchQueue` that Linux needs (its Dispatch has no
/// `DispatchSerialQueue` to put under an actor): each job is one `async`.
final class DispatchQueueExecutor: SerialExecutor {
    let queue: DispatchQueue

    init(_ queue: DispatchQueue) {
        self.queue = queue
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        queue.async { job.runSynchronously(on: self.asUnownedSerialExecutor()) }
    }
}

/// An actor on a `DispatchQueueExecutor`.
actor QueueActor: HopTarget {
    nonisolated let executor: DispatchQueueExecutor

    init(_ executor: DispatchQueueExecutor) {
        self.executor = executor
    }

    nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }

    private var pings = 0

    /// Touches the actor's state, so the compiler cannot drop the hop.
    func ping() { pings &+= 1 }
}
