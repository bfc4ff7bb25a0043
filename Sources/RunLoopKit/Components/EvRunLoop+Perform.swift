import Dispatch
import Synchronization

/// Why a perform request could not be carried out.
public enum EvPerformError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The loop's thread has exited, so the block can never run (R4). Thrown when the loop was
    /// already dead when the request was made, and to a waiting caller when the loop died with
    /// the request still pending (CF drops such blocks silently).
    case loopExited

    /// A message naming the call that failed and why.
    public var description: String {
        switch self {
        case .loopExited: "EvRunLoop perform: the run loop's thread has exited; the block can never run"
        }
    }
}

extension EvRunLoop {
    /// Runs `block` on this loop's thread in one of `modes`, like Foundation's
    /// `perform(_:on:with:waitUntilDone:modes:)`.
    ///
    /// The block is scheduled as a perform-block (R54, R55) and the loop is woken, so unlike
    /// ``perform(inModes:_:)`` a sleeping loop need not be woken by the caller. It runs only while
    /// the loop runs one of `modes` (``Mode/common`` = whichever common mode runs, R15): a block
    /// scheduled for `.default` waits out a tracking mode and runs when `.default` comes back
    /// (lazy image decoding that waits for scrolling to end).
    ///
    /// - Thread: any. With `waitUntilDone` on the loop's own thread the block runs at once,
    ///   before this call returns, whatever mode is running (as Foundation does). With
    ///   `waitUntilDone` from another thread the caller blocks until the block has run on the
    ///   loop's thread; it waits as long as the loop does not run one of `modes`.
    /// - Throws: ``EvPerformError/loopExited`` if the loop's thread has exited (decided
    ///   atomically with the loop's teardown: a block is never accepted by a loop that can no
    ///   longer run it) — or, when waiting, exits before the block ran. Without waiting, a block
    ///   accepted while the thread was alive is dropped if the thread exits before one of
    ///   `modes` runs again (R4, as CF drops it); wait, or use ``performAndWait(inModes:_:)``,
    ///   to learn that.
    /// - Precondition: `modes` is not empty.
    public func perform(
        inModes modes: [Mode] = [.common], waitUntilDone: Bool, _ block: @escaping @Sendable () -> Void
    ) throws(EvPerformError) {
        require(!modes.isEmpty, "EvRunLoop.perform(inModes:waitUntilDone:_:): modes must not be empty")
        if waitUntilDone {
            do {
                try performAndWait(inModes: modes, block)
            } catch let error as EvPerformError {
                throw error
            } catch {
                fatalError("EvRunLoop.perform(inModes:waitUntilDone:_:): unexpected error \(error)")
            }
            return
        }
        guard enqueueAndWake(.block(block), inModes: modes) else { throw .loopExited }
    }

    /// Runs `work` on this loop's thread in one of `modes` and returns at once (fire-and-forget):
    /// the cross-thread call, SwiftNIO's `execute`. The work is scheduled as a perform-block
    /// (R54, R55) and the loop is woken for it, unlike ``perform(inModes:_:)``, which keeps
    /// CF's semantics and does not wake it (R56, C101).
    ///
    /// - Parameters:
    ///   - modes: the modes the work may run in (``Mode/common`` = whichever common mode runs, R15).
    ///   - work: runs once, on the loop's thread.
    /// - Thread: any. On the loop's own thread the work runs in a later blocks step, not at once.
    /// - Throws: ``EvPerformError/loopExited`` if the loop's thread has exited (decided atomically
    ///   with the loop's teardown, as for ``perform(inModes:waitUntilDone:_:)``). Work that is
    ///   still pending when the thread exits is dropped with the loop; use ``submit(inModes:_:)``
    ///   to learn whether it ran.
    /// - Precondition: `modes` is not empty.
    public func execute(inModes modes: [Mode] = [.common], _ work: @escaping @Sendable () -> Void) throws(EvPerformError) {
        require(!modes.isEmpty, "EvRunLoop.execute(inModes:_:): modes must not be empty")
        guard enqueueAndWake(.block(work), inModes: modes) else { throw .loopExited }
    }

    /// Runs `body` on this loop's thread in one of `modes` and returns its value, or rethrows
    /// its error, once it has run (perform with waitUntilDone, carrying a result).
    ///
    /// - Thread: any. On the loop's own thread `body` runs at once, whatever mode is running.
    ///   From another thread the caller blocks until the loop, running one of `modes`, has
    ///   called `body`; the loop is woken for it.
    /// - Throws: ``EvPerformError/loopExited`` if the loop's thread has exited or exits before
    ///   `body` ran; otherwise whatever `body` throws.
    /// - Precondition: `modes` is not empty.
    @discardableResult
    public func performAndWait<T: Sendable>(
        inModes modes: [Mode] = [.common], _ body: @escaping @Sendable () throws -> T
    ) throws -> T {
        require(!modes.isEmpty, "EvRunLoop.performAndWait(inModes:_:): modes must not be empty")
        if ThreadRegistry.isOwnedByCallingThread(self) { return try body() }
        let completion = PerformCompletion<T>()
        guard enqueueAndWake(.block(completion.block(body)), inModes: modes) else { throw EvPerformError.loopExited }
        return try completion.wait().get()
    }

    /// Whether the loop's thread has exited (R4).
    var threadHasExited: Bool { state.withLock { $0.isDead } }
}

/// The result of one waited-for perform, handed from the loop's thread to the waiting caller.
///
/// The block handed to the loop owns a ``DropSentinel``: if the loop drops the block without
/// running it (its thread exits, R4), the sentinel's deinit completes the request with
/// ``EvPerformError/loopExited`` so the caller never waits forever.
final class PerformCompletion<T: Sendable>: Sendable {
    private let result = Locked<Result<T, any Error>?>(nil)
    private let done = DispatchSemaphore(value: 0)

    /// The block to schedule: runs `body` and records its outcome.
    func block(_ body: @escaping @Sendable () throws -> T) -> @Sendable () -> Void {
        let sentinel = DropSentinel<T> { [self] in finish($0) }
        return {
            sentinel.finish(Result { try body() })
        }
    }

    /// Records the first outcome and wakes the caller; later ones are ignored.
    func finish(_ outcome: Result<T, any Error>) {
        let isFirst = result.withLock { result -> Bool in
            guard result == nil else { return false }
            result = outcome
            return true
        }
        if isFirst { done.signal() }
    }

    /// Blocks until an outcome was recorded.
    func wait() -> Result<T, any Error> {
        done.wait()
        return result.withLock { $0! }
    }
}

/// The result of one submitted closure, handed from the loop's thread to the awaiting task.
///
/// Like ``PerformCompletion``, its block owns a ``DropSentinel``, so a block the loop drops with
/// its thread (R4) resumes the task with ``EvPerformError/loopExited``. The task's cancellation
/// withdraws the closure until the block starts it: the task is resumed with `CancellationError`
/// at once and the block, if it runs later, does nothing. The continuation is resumed exactly
/// once, never leaked.
final class AsyncCompletion<T: Sendable>: Sendable {
    private struct State {
        /// The awaiting task, until it is resumed; `nil` too before ``install(_:)``.
        var continuation: CheckedContinuation<T, any Error>?
        var isCancelled = false
        var hasStarted = false
    }

    private let state = Locked(State())

    init() {}

    /// Keeps the awaiting task's continuation. Returns false, having resumed it with
    /// `CancellationError`, when the task was cancelled first: nothing is to be queued.
    func install(_ continuation: CheckedContinuation<T, any Error>) -> Bool {
        let isCancelled = state.withLock { state in
            if !state.isCancelled { state.continuation = continuation }
            return state.isCancelled
        }
        if isCancelled { continuation.resume(throwing: CancellationError()) }
        return !isCancelled
    }

    /// The task was cancelled: resumes it with `CancellationError` unless the closure has started.
    func cancel() {
        let taken = state.withLock { state -> CheckedContinuation<T, any Error>? in
            guard !state.hasStarted else { return nil }
            state.isCancelled = true
            defer { state.continuation = nil }
            return state.continuation
        }
        taken?.resume(throwing: CancellationError())
    }

    /// The block to schedule: runs `body`, unless the task was cancelled before, and resumes the
    /// task with its outcome.
    func block(_ body: @escaping @Sendable () throws -> T) -> @Sendable () -> Void {
        let sentinel = DropSentinel<T> { [self] in finish($0) }
        return { [self] in
            guard start() else { return }
            sentinel.finish(Result { try body() })
        }
    }

    /// Claims the closure for the block; false once the task was cancelled (and resumed).
    private func start() -> Bool {
        state.withLock { state in
            guard !state.isCancelled else { return false }
            state.hasStarted = true
            return true
        }
    }

    /// Resumes the task with the first outcome; later ones are ignored.
    func finish(_ outcome: Result<T, any Error>) {
        let taken = state.withLock { state in
            defer { state.continuation = nil }
            return state.continuation
        }
        taken?.resume(with: outcome)
    }
}

/// Completes its request with ``EvPerformError/loopExited`` when released before the request ran.
final class DropSentinel<T: Sendable>: Sendable {
    let finish: @Sendable (Result<T, any Error>) -> Void
    init(_ finish: @escaping @Sendable (Result<T, any Error>) -> Void) { self.finish = finish }
    deinit { finish(.failure(EvPerformError.loopExited)) }
}
