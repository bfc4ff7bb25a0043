import Dispatch
import Foundation
import RunLoopKit
import Testing
import TestSupport

/// A thread-safe log of what happened, in order.
final class EventLog<Event: Sendable>: Sendable {
    private let events = TestLocked<[Event]>([])
    init() {}
    func append(_ event: Event) { events.withLock { $0.append(event) } }
    var all: [Event] { events.withLock { $0 } }
    var count: Int { events.withLock { $0.count } }
}

/// A one-shot signal between threads, with a safety-net timeout.
final class Latch: Sendable {
    private let semaphore = DispatchSemaphore(value: 0)
    init() {}
    func open() { semaphore.signal() }
    /// Waits until ``open()``; returns false if `timeout` passed first (a safety net only).
    @discardableResult
    func wait(timeout seconds: Double = 30) -> Bool {
        semaphore.wait(timeout: .now() + seconds) == .success
    }
}

/// A value set once from another thread.
final class Box<Value: Sendable>: Sendable {
    private let value: TestLocked<Value>
    init(_ value: Value) { self.value = TestLocked(value) }
    var get: Value { value.withLock { $0 } }
    func set(_ newValue: Value) { value.withLock { $0 = newValue } }
    func update<R: Sendable>(_ body: @Sendable (inout Value) -> R) -> R { value.withLock { body(&$0) } }
}

/// Runs `body` on a new thread with that thread's own run loop, joins the thread, and returns
/// `body`'s result. Every scenario gets a fresh thread, so no loop state leaks between tests; the
/// thread has exited (and its loop has been torn down, R4) when this returns. The timeout is a
/// safety net: a scenario that hangs stops the test process with a message instead of hanging CI.
func onLoopThread<T: Sendable>(
    timeout seconds: Double = 60, sourceLocation: SourceLocation = #_sourceLocation,
    _ body: @escaping @Sendable (EvRunLoop) -> T
) -> T {
    let result = Box<T?>(nil)
    let done = Latch()
    let thread = spawnThread {
        result.set(body(EvRunLoop.current))
        done.open()
    }
    guard done.wait(timeout: seconds) else {
        fatalError("loop thread did not finish within \(seconds) s (\(sourceLocation))")
    }
    pthread_join(thread, nil)
    return result.get!
}

/// Starts a thread that runs `body` with its loop and returns the loop once it exists; `finished`
/// opens when the thread has exited its body.
func startLoopThread(_ body: @escaping @Sendable (EvRunLoop) -> Void) -> (loop: EvRunLoop, finished: Latch) {
    let loop = Box<EvRunLoop?>(nil)
    let ready = Latch()
    let finished = Latch()
    let thread = Thread {
        loop.set(EvRunLoop.current)
        ready.open()
        body(EvRunLoop.current)
        finished.open()
    }
    thread.start()
    precondition(ready.wait(), "loop thread did not start")
    return (loop.get!, finished)
}

/// An observer that logs every activity it sees, with the mode running at the time.
func activityRecorder(_ log: EventLog<EvRunLoop.Activity>, activities: EvRunLoop.Activity = .allActivities) -> EvObserver {
    EvObserver(activities: activities) { _, activity in log.append(activity) }
}

/// A timer that never fires during a test; it only keeps a mode from being empty.
func keepAliveTimer() -> EvTimer {
    EvTimer(after: .seconds(3600)) { _ in }
}

/// Number of open file descriptors of this process.
func openFileDescriptorCount() -> Int {
    (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count) ?? -1
}

/// The processor time the calling thread has used: a loop that sleeps uses next to none, one
/// that spins inside its wait (where no observer sees it) all of its sleep.
func threadCPUTime() -> Duration {
    var spec = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &spec)
    return .seconds(spec.tv_sec) + .nanoseconds(spec.tv_nsec)
}

/// An observer that logs the name of every phase in `activities` into a log shared with callouts.
func phaseLogger(_ log: EventLog<String>, _ activities: EvRunLoop.Activity = .allActivities) -> EvObserver {
    EvObserver(activities: activities) { _, activity in log.append("\(activity)") }
}

/// A one-shot observer of `activity` that runs `body` the first time it is seen.
func once(_ activity: EvRunLoop.Activity, order: Int = 1, _ body: @escaping @Sendable () -> Void) -> EvObserver {
    EvObserver(activities: activity, repeats: false, order: order) { _, _ in body() }
}

/// Spins until `condition` holds; false if `seconds` passed first (a safety net only).
/// ``spinUntil(timeout:_:)`` for async tests: yields between looks, so that the cooperative
/// pool's thread stays free for the tasks the condition waits on.
func yieldUntil(timeout seconds: Double = 30, _ condition: () -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + .seconds(seconds)
    while !condition() {
        if ContinuousClock.now > deadline { return false }
        await Task.yield()
    }
    return true
}

func spinUntil(timeout seconds: Double = 30, _ condition: () -> Bool) -> Bool {
    let deadline = ContinuousClock.now + .seconds(seconds)
    while !condition() {
        if ContinuousClock.now > deadline { return false }
        sched_yield()
    }
    return true
}
