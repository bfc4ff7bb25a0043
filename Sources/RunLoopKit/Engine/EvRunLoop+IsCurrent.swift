extension EvRunLoop {
    /// Whether the calling thread is this loop's thread (R1, R2): true on the thread the loop
    /// belongs to, false on every other thread and once that thread has exited (R4).
    ///
    /// Allocation-free and safe from any thread: it reads the calling thread's loop slot and never
    /// creates a loop, where `EvRunLoop.current === loop` would make one — with its descriptors —
    /// on a thread that had none. The main loop is current on the main thread even before the
    /// main thread has asked for ``current``.
    public var isCurrent: Bool {
        ThreadRegistry.existingLoop() === self || (isMain && ThreadRegistry.isMainThread)
    }

    /// Stops the program with a message unless the calling thread is this loop's thread
    /// (``isCurrent``). Checked in every build configuration.
    ///
    /// - Parameters:
    ///   - file: the file named in the message; the caller's by default.
    ///   - line: the line named in the message; the caller's by default.
    public func preconditionIsCurrent(file: StaticString = #fileID, line: UInt = #line) {
        require(isCurrent, "EvRunLoop.preconditionIsCurrent(): called off the loop's thread\(Self.standInQueueNote)", file: file, line: line)
    }

    /// Stops with a message naming `call` unless the calling thread is this loop's thread.
    func preconditionIsCurrent(_ call: StaticString, _ what: StaticString) {
        if !isCurrent { fatalError("\(call): \(what) only on the loop's own thread, and this is another thread\(Self.standInQueueNote)") }
    }

    /// Why the caller is off the loop's thread when it is a job that an exited loop's executor
    /// handed to its stand-in queue (an actor pinned to a worker stopped before it); else empty.
    private static var standInQueueNote: String {
        guard EvRunLoopExecutor.isOnStandInQueue else { return "" }
        return """
            : a job of an EvRunLoopExecutor whose loop's thread has exited (R4), run on the dispatch \
            queue that stands in for that thread. Work that needs the loop must end before its \
            thread does: stop the worker after it (a ServiceGroup stops its services in reverse \
            order, so list the worker before the services whose actors it runs)
            """
    }
}
