/// What ties an ``EvLibevSource`` to its run loop: the loop it was first added to, for good (the
/// libraries attached to that loop's libev loop cannot move), and the detach handlers.
///
/// Bound under the loop's lock at the first add, from any thread; the handlers are registered
/// and run on the loop's thread only. Lock order: the loop's lock, the source's, then this one.
final class LibevBinding: Sendable {
    private struct State: Sendable {
        var loop: EvRunLoop?
        /// Invalidated, or its loop's thread exited: it has no libev loop any more.
        var isOver = false
    }

    private let state = Locked(State())
    /// Registered and taken on the loop's thread only, so the closures need not be `Sendable`.
    private nonisolated(unsafe) var handlers: [(OpaquePointer) -> Void] = []

    /// The loop it belongs to; `nil` before its first add and once it is over.
    var loop: EvRunLoop? { state.withLock { $0.loop } }

    /// Whether it was invalidated or its loop's thread exited.
    var isOver: Bool { state.withLock { $0.isOver } }

    /// Binds it to `loop` at an add (loop's lock held); stops with a message if it belongs to
    /// another loop.
    func bind(to loop: EvRunLoop) {
        state.withLock { state in
            guard !state.isOver else { return }
            require(
                state.loop == nil || state.loop === loop,
                "EvRunLoop.add(_:forMode:): this EvLibevSource belongs to another run loop, the first it was added to (the libraries attached to its libev loop cannot move)")
            state.loop = loop
        }
    }

    /// Registers a detach handler (loop's thread).
    func addHandler(_ handler: @escaping (OpaquePointer) -> Void) {
        handlers.append(handler)
    }

    /// Ends the binding and returns the detach handlers to run, in the order they were
    /// registered (loop's thread); none the second time.
    func end() -> [(OpaquePointer) -> Void] {
        let wasBound = state.withLock { state in
            defer { state.isOver = true; state.loop = nil }
            return !state.isOver
        }
        guard wasBound else { return [] }
        defer { handlers = [] }
        return handlers
    }
}
