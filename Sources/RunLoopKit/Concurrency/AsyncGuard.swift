/// Where async code would reach a run loop that nothing will ever run, and stops it there with a
/// message naming the fix, rather than let its timers and sources wait in silence.
///
/// A loop runs only on its own thread, and only while that thread runs it (R5). Tasks borrow
/// threads: Swift's cooperative pool, or the main thread for main-actor work. Inside a task, a
/// thread's loop is therefore usable only while it runs the task's job (an actor pinned to the
/// loop with ``EvRunLoopExecutor``, main-actor work under the main loop); any other loop made or
/// found there would never run. And an async main (or `dispatchMain()`) gives the main thread to
/// libdispatch for good, so nothing can run ``EvRunLoop/main`` afterwards.
enum AsyncGuard {
    /// Whether the caller runs inside a task (a thread-local read; no system call).
    static var isInTask: Bool { withUnsafeCurrentTask { $0 != nil } }

    /// Stops ``EvRunLoop/current`` (`call`) inside a task unless `loop`, the calling thread's
    /// loop (or the main loop on the main thread), is running the task's job.
    static func checkCurrent(_ loop: EvRunLoop?, isMainThread: Bool, _ call: StaticString) {
        guard isInTask, !(loop?.isRunning ?? false) else { return }
        if isMainThread { stopMainNotRunning(call) }
        if EvRunLoopExecutor.isOnStandInQueue {
            fatalError(
                """
                \(call): called from a job of an EvRunLoopExecutor whose loop's thread has exited \
                (R4): such jobs run on a dispatch queue that stands in for that thread so that they \
                finish, and it has no run loop. Work that needs the loop must end before its \
                thread does (EvWorkerThread.stop() returns once the loop is torn down)
                """)
        }
        fatalError(
            """
            \(call): called from a task on a thread whose run loop is not running (a thread of \
            Swift's cooperative pool, say), so a loop made or found here would never run and its \
            timers would never fire. From async code, use EvRunLoop.main (EvRunLoop.runMain(_:) runs \
            it; reach it from the main actor), the loop of an EvWorkerThread, or hand work to a \
            running loop with execute(inModes:_:) or submit(inModes:_:)
            """)
    }

    /// Stops ``EvRunLoop/main`` (`call`) where nothing can run the main loop any more: libdispatch
    /// has the main thread, or a task on the main thread asks while the main loop is not running
    /// (an async main before its first suspension).
    static func checkMain(_ main: EvRunLoop, _ call: StaticString) {
        if EvBackend.mainQueueLeftMainThread {
            fatalError(
                """
                \(call): libdispatch has taken the main thread for good (an async main, or \
                dispatchMain(), hands it over), so nothing can run the main loop and its timers would \
                never fire. \(startFromASynchronousMain)
                """)
        }
        if isInTask, ThreadRegistry.isMainThread, !main.isRunning { stopMainNotRunning(call) }
    }

    private static func stopMainNotRunning(_ call: StaticString) -> Never {
        fatalError(
            """
            \(call): called from a task on the main thread while the main loop is not running (an \
            async main, say, which gives the main thread to libdispatch at its first suspension), \
            so its timers would never fire. \(startFromASynchronousMain)
            """)
    }

    private static let startFromASynchronousMain =
        "Start the program from a synchronous main with EvRunLoop.runMain(_:), which runs the main loop while your async code runs; or use the loop of an EvWorkerThread"
}

extension EvRunLoop {
    /// Whether a run of this loop is in progress (on its thread, by definition).
    var isRunning: Bool { state.withLock { !$0.runs.isEmpty } }
}
