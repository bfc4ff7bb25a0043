import Dispatch
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A joinable pthread for the components (worker threads, the stall monitor's watchdog).
///
/// Ending such a thread from another thread joins it (``join()`` returns once the thread has
/// fully exited, its run loop torn down by the thread-exit destructor, R4). Ending it from its
/// own thread, or without waiting, cannot join there; the thread is then marked to be joined
/// from a dispatch queue when its body returns, so it never lingers as an unjoined zombie, and
/// a later ``join()`` still waits until it is gone. Foundation's `Thread` is not used: it cannot
/// be joined, and a leak check needs "stopped" to mean "gone".
final class EvThreadHandle: Sendable {
    private enum Phase {
        /// The body runs (or has returned) and nobody has claimed the join yet.
        case running
        /// Nobody waits for it: it is joined from a dispatch queue when its body returns.
        case joinAtExit
        /// Some thread is in `pthread_join`; `waiters` more wait for it.
        case joining
        case joined
    }

    private struct State {
        var phase = Phase.running
        var thread: pthread_t?
        var waiters = 0
        /// The body returned while nobody had asked for a join yet.
        var bodyReturned = false
        /// Run once the thread is joined (see ``whenJoined(_:)``).
        var onJoined: [@Sendable () -> Void] = []
    }

    private let state = Locked(State())
    private let joinedSignal = DispatchSemaphore(value: 0)

    private init() {}

    /// Starts a thread running `body`.
    ///
    /// - Parameters:
    ///   - name: the thread's name as `ps`/`top` show it (cut to 15 bytes at a character boundary).
    ///   - stackSize: the stack size in bytes; `nil` for the system default.
    /// - Throws: the `errno` of `pthread_create` (`EAGAIN` when the process is out of threads).
    static func spawn(name: String?, stackSize: Int?, _ body: @escaping @Sendable () -> Void) throws(SpawnFailure) -> EvThreadHandle {
        let handle = EvThreadHandle()
        let start = Unmanaged.passRetained(ThreadStart(handle: handle, name: name, body: body)).toOpaque()
        var attributes = pthread_attr_t()
        pthread_attr_init(&attributes)
        defer { pthread_attr_destroy(&attributes) }
        if let stackSize { pthread_attr_setstacksize(&attributes, max(stackSize, Int(PTHREAD_STACK_MIN))) }
        var thread = pthread_t()
        let status = pthread_create(&thread, &attributes, { argument in
            let start = Unmanaged<ThreadStart>.fromOpaque(argument!).takeRetainedValue()
            start.handle.state.withLock { $0.thread = pthread_self() }
            if let name = start.name {
                var bytes = EvThreadHandle.kernelName(name).utf8.map { CChar(bitPattern: $0) }
                bytes.append(0)
                _ = GNUExtensions.setThreadName?(pthread_self(), bytes)
            }
            start.body()
            // Before the thread is handed to its joiner: the loop must be gone when a join
            // returns (R4), and the joiner may be the dispatch queue, waited for by nobody.
            ThreadRegistry.tearDownCurrentLoop()
            start.handle.bodyReturned()
            return nil
        }, start)
        guard status == 0 else {
            Unmanaged<ThreadStart>.fromOpaque(start).release()
            throw SpawnFailure(errno: status)
        }
        handle.state.withLock { $0.thread = thread }
        return handle
    }

    /// `name`, then `suffix`, as a thread keeps them: 15 bytes at most, `name` cut at a character
    /// boundary so that no broken UTF-8 sequence reaches `ps`, debuggers or stall reports.
    static func kernelName(_ name: String, suffix: String = "") -> String {
        var prefix = Substring(name)
        while prefix.utf8.count + suffix.utf8.count > 15, !prefix.isEmpty { prefix.removeLast() }
        return prefix + suffix
    }

    /// Whether the calling thread is this thread.
    var isCurrent: Bool {
        guard let thread = state.withLock({ $0.thread }) else { return false }
        return pthread_equal(thread, pthread_self()) != 0
    }

    /// The thread's pthread id.
    var thread: pthread_t? { state.withLock { $0.thread } }

    /// From another thread: waits until the thread has exited (joining it, or waiting for whoever
    /// joins it). From the thread itself: returns at once and marks the thread to be joined when
    /// its body returns.
    func join() {
        enum Action { case join(pthread_t), wait, none }
        let action = state.withLock { state -> Action in
            guard let thread = state.thread else { return .none }
            if pthread_equal(thread, pthread_self()) != 0 {
                if state.phase == .running { state.phase = .joinAtExit }
                return .none
            }
            switch state.phase {
            case .running, .joinAtExit:
                state.phase = .joining
                return .join(thread)
            case .joining:
                state.waiters += 1
                return .wait
            case .joined:
                return .none
            }
        }
        switch action {
        case .join(let thread): joinNow(thread)
        case .wait: joinedSignal.wait()
        case .none: break
        }
    }

    /// Marks the thread to be joined when its body returns unless someone joins it first; for
    /// an owner that will not wait.
    func joinWhenDone() {
        let finished = state.withLock { state -> pthread_t? in
            guard state.phase == .running else { return nil }
            guard state.bodyReturned, let thread = state.thread else {
                state.phase = .joinAtExit
                return nil
            }
            state.phase = .joining  // past its body already: joined now, as it would have been at its end
            return thread
        }
        if let finished { DispatchQueue.global().async { self.joinNow(finished) } }
    }

    /// Runs `action` once the thread has been joined (at once if it has), on the joining thread:
    /// for an owner that did not wait but must know when the thread is gone, its thread-local
    /// teardown included.
    func whenJoined(_ action: @escaping @Sendable () -> Void) {
        let joined = state.withLock { state -> Bool in
            if state.phase != .joined { state.onJoined.append(action) }
            return state.phase == .joined
        }
        if joined { action() }
    }

    /// Joins `thread` (this handle's), then lets whoever waits for the join go.
    private func joinNow(_ thread: pthread_t) {
        pthread_join(thread, nil)
        let (waiters, actions) = state.withLock { state -> (Int, [@Sendable () -> Void]) in
            state.phase = .joined
            defer {
                state.waiters = 0
                state.onJoined = []
            }
            return (state.waiters, state.onJoined)
        }
        for _ in 0..<waiters { joinedSignal.signal() }
        for action in actions { action() }
    }

    /// The last thing the thread's body does: a thread nobody joins is joined from a dispatch
    /// queue, which waits the moment its exit takes (thread-local destructors run after this).
    private func bodyReturned() {
        let thread = state.withLock { state -> pthread_t? in
            guard state.phase == .joinAtExit, let thread = state.thread else {
                state.bodyReturned = true
                return nil
            }
            state.phase = .joining
            return thread
        }
        guard let thread else { return }
        DispatchQueue.global().async { self.joinNow(thread) }
    }

    /// `pthread_create` failed.
    struct SpawnFailure: Error {
        let errno: Int32
    }
}

/// What a new thread needs, handed over through `pthread_create`'s argument.
private final class ThreadStart: Sendable {
    let handle: EvThreadHandle
    let name: String?
    let body: @Sendable () -> Void

    init(handle: EvThreadHandle, name: String?, body: @escaping @Sendable () -> Void) {
        self.handle = handle
        self.name = name
        self.body = body
    }
}
