/// What waits on a loop rather than runs in it: tasks in ``EvRunLoop/waitUntilStopped()`` and
/// the hooks of its thread's exit (``EvRunLoop/addExitHook(_:)``). Made when the first of them
/// registers: most loops have neither, and their lists stay out of every loop object.
///
/// `@unchecked Sendable`: read and written only under the owning loop's lock, like the
/// ``LoopState`` that holds it.
final class LoopWaiters: @unchecked Sendable {
    /// Tasks waiting in ``EvRunLoop/waitUntilStopped()``, by wait: a cancelled one leaves.
    var stopWaiters: [UInt64: CheckedContinuation<Void, Never>] = [:]
    /// What to do when the owning thread exits (see ``EvRunLoop/addExitHook(_:)``).
    var exitHooks = EvRunLoop.ExitHooks()
}
