import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

#if RUNLOOPKIT_PTHREAD_LOCKS
/// The lock RunLoopKit uses for all shared state, in sanitizer builds (`make test-tsan`): a
/// pthread mutex, which ThreadSanitizer understands. The `Synchronization.Mutex` of normal
/// builds locks with futex calls that TSan cannot see, so every access under it would be reported.
///
/// `@unchecked Sendable`: `value` is only reached through ``withLock(_:)``, under `mutex`.
struct Locked<Value: ~Copyable>: ~Copyable, @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private let value: UnsafeMutablePointer<Value>

    init(_ initialValue: consuming sending Value) {
        mutex = .allocate(capacity: 1)
        pthread_mutex_init(mutex, nil)
        value = .allocate(capacity: 1)
        value.initialize(to: initialValue)
    }

    deinit {
        value.deinitialize(count: 1)
        value.deallocate()
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    borrowing func withLock<Result: ~Copyable, E: Error>(
        _ body: (inout sending Value) throws(E) -> sending Result
    ) throws(E) -> sending Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        nonisolated(unsafe) let pointer = value
        return try body(&pointer.pointee)
    }

    /// Runs `body` under the lock if it is free now; `nil` without waiting if it is not
    /// (`Mutex.withLockIfAvailable`).
    borrowing func withLockIfAvailable<Result: ~Copyable, E: Error>(
        _ body: (inout sending Value) throws(E) -> sending Result
    ) throws(E) -> sending Result? {
        guard pthread_mutex_trylock(mutex) == 0 else { return nil }
        defer { pthread_mutex_unlock(mutex) }
        nonisolated(unsafe) let pointer = value
        return try body(&pointer.pointee)
    }
}
#else
/// The lock RunLoopKit uses for all shared state (see the `RUNLOOPKIT_PTHREAD_LOCKS` variant).
typealias Locked<Value: ~Copyable> = Mutex<Value>
#endif
