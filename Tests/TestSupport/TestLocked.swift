import Foundation

/// A value behind an `NSLock`, for state the tests share between threads.
///
/// Tests lock with a pthread mutex (which is what `NSLock` is on Linux) because ThreadSanitizer
/// understands it. `Synchronization.Mutex` locks with futex calls that TSan cannot see, so
/// `make test-tsan` would report every access under it as a race.
///
/// `@unchecked Sendable`: `value` is only touched inside `lock`.
public final class TestLocked<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    public init(_ value: Value) { self.value = value }

    /// Runs `body` with the value, under the lock.
    public func withLock<R>(_ body: (inout Value) throws -> R) rethrows -> R {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
