extension EvRunLoop {
    /// Runs an asynchronous program on top of the main run loop: starts `body` as a task, runs
    /// ``main`` on the process's main thread until `body` finishes, and returns its value or
    /// throws its error.
    ///
    /// A program whose entry point is `async` (`@main` with `static func main() async`, or
    /// top-level code with `await`) hands its main thread to libdispatch, so nothing would ever
    /// run ``main``: its timers never fire. Call this from a synchronous entry point instead —
    /// top-level code in `main.swift`, or `@main` with a synchronous `static func main()` — and
    /// write the program as `body`:
    ///
    /// ```swift
    /// let exitCode = try EvRunLoop.runMain {
    ///     try await ServiceGroup(configuration: configuration).run()
    ///     return 0
    /// }
    /// ```
    ///
    /// While `body` runs, the main loop runs its default mode, so everything added to ``main``
    /// in the default or common modes fires on the main thread; `DispatchQueue.main` work and
    /// `@MainActor` code run under the loop too (R17, R60), so `body` may hop to the main actor.
    /// `body` itself starts on the global concurrent executor, like any unstructured task, so
    /// ``current`` there stops with a message (its thread runs no loop): reach the main loop as
    /// ``main``, and other loops through an ``EvWorkerThread``.
    ///
    /// An ``EvWorkerThread`` or ``EvLoopGroup`` dropped in `body`, or in any task (a main-actor
    /// one included), does not wait for its threads there; `runMain` returns only once every one
    /// of them has run its queued work and its loops are torn down, so the program loses none of
    /// that work, and work that needs the main loop meanwhile gets it.
    ///
    /// ``stop()`` on ``main`` ends only the run in progress: `runMain` runs the loop again until
    /// `body` has finished. When `body` finishes while a callout of ``main`` runs a nested run,
    /// that nested run carries on; `runMain` returns once the loop is back in its own run.
    ///
    /// - Parameter body: the program; its error type is kept (typed throws).
    /// - Returns: what `body` returned.
    /// - Throws: what `body` threw, with its type.
    /// - Precondition: called on the process's main thread (the main loop can only run on its own
    ///   thread, R5), from synchronous code: not from a task, an async `main` or `@MainActor`
    ///   async code, where the loop would run inside a main-actor job, nor from main-queue work
    ///   the main loop is draining (a `DispatchQueue.main` block), which it cannot drain again.
    public static func runMain<T: Sendable, E: Error>(
        _ body: @escaping @Sendable () async throws(E) -> T
    ) throws(E) -> T {
        require(ThreadRegistry.isMainThread, "EvRunLoop.runMain(_:): call it from the process's main thread, in a synchronous main (R5)")
        // From async code (an async main, a main-actor task) the loop would run inside a job of the
        // main actor, and drain other main-actor jobs in the middle of it.
        require(
            !withUnsafeCurrentTask { $0 != nil },
            "EvRunLoop.runMain(_:): call it from synchronous code (main.swift's top level, a synchronous static main()), not from a task or an async main")
        let loop = main
        loop.preconditionOwnThread("EvRunLoop.runMain(_:)")
        // Inside main-queue work the loop cannot drain the queue it is draining: the body's hops
        // to the main actor would never run, and the loop, its default mode empty, would spin.
        require(
            !loop.state.withLock { $0.isServicingMainQueue },
            "EvRunLoop.runMain(_:): called from main-queue work (a DispatchQueue.main block or @MainActor code) that the main loop is draining, which it cannot drain again from inside; call it from the program's synchronous entry point")
        let finished = MainProgram<T, E>(depth: loop.state.withLock { $0.runs.count })
        // Ends runMain's own run, never a run nested in one of its callouts: checked each time an
        // iteration of the default mode begins, after body finished and woke the loop, and before
        // each sleep, since a run nested before the wait may have taken that wake-up.
        let finisher = EvObserver(activities: [.beforeTimers, .beforeWaiting], order: .min) { _, _ in
            guard finished.outcome != nil, loop.state.withLock({ $0.runs.count }) == finished.depth + 1 else { return }
            loop.stop()
        }
        loop.add(finisher, forMode: .default)
        WorkerCore.runMainInProgress.store(true, ordering: .relaxed)
        defer {
            WorkerCore.runMainInProgress.store(false, ordering: .relaxed)
            finisher.invalidate()
        }
        Task {
            let outcome: Result<T, E>
            do throws(E) {
                outcome = .success(try await body())
            } catch {
                outcome = .failure(error)
            }
            // Workers dropped in a task do not wait there; their queued work, which may need the
            // main loop (still running here), ends before the program does.
            await WorkerCore.untilUnwaitedWorkersEnd()
            finished.finish(outcome)
            loop.wakeUp()
        }
        while true {
            if let outcome = finished.outcome { return try outcome.get() }
            loop.run(mode: .default)
        }
    }
}

/// What ``EvRunLoop/runMain(_:)`` shares with its task: `body`'s outcome, once it finished.
private final class MainProgram<T: Sendable, E: Error>: Sendable {
    /// How many runs of the main loop were in progress when `runMain` began (0 from `main`).
    let depth: Int
    private let result = Locked<Result<T, E>?>(nil)

    init(depth: Int) { self.depth = depth }

    var outcome: Result<T, E>? { result.withLock { $0 } }

    func finish(_ outcome: Result<T, E>) { result.withLock { $0 = outcome } }
}
