import CEpoll
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// How other threads and signal handlers wake a loop: request bits plus an eventfd that the
/// loop's libev watches, written only when the loop may be asleep.
///
/// Why not libev's `ev_async`: libev creates its eventfd lazily, inside `ev_async_start`, and
/// when that fails (no descriptor left) it falls back to `pipe`, retrying for ever through
/// `ev_syserr`, which aborts. Owning the eventfd lets the loop's creation throw instead, and lets
/// the loop refuse to watch it as a caller's descriptor.
///
/// Like `ev_async_send`, a request from a thread that finds the loop awake costs no system call:
/// the loop announces ``sleeping`` before it looks at the requests, and a requester looks at
/// ``sleeping`` after setting its bit (both sequentially consistent), so at least one of them sees
/// the other. The first requester after the loop took the bits writes; later ones see bits set.
/// ``request(_:)`` is async-signal-safe.
final class WakeSignal: Sendable {
    /// ``EvBackend/wakeUp()`` was called.
    static let wakeUp: UInt32 = 1 << 0
    /// A routed signal arrived (see ``SignalRouting``).
    static let signalArrived: UInt32 = 1 << 1
    /// The timerfd could not be armed from another thread (see ``EvBackend/setDeadline(_:)``).
    static let deadlineChanged: UInt32 = 1 << 2

    /// The eventfd (non-blocking, close-on-exec).
    let descriptor: Int32
    private let requests = Atomic<UInt32>(0)
    private let sleepingFlag = Atomic<Bool>(false)

    /// A new eventfd; `nil` with `errno` set when it cannot be created.
    init?() {
        descriptor = retryingEINTR { eventfd(0, Int32(EFD_NONBLOCK | EFD_CLOEXEC)) }
        if descriptor < 0 { return nil }
    }

    /// Sets `bit` and makes sure a sleeping loop wakes. Returns false when the eventfd could not
    /// be written (a hard error, not `EINTR`); the bit stays set, and the caller may ``kick()``
    /// again.
    @discardableResult
    func request(_ bit: UInt32) -> Bool {
        let before = requests.bitwiseOr(bit, ordering: .sequentiallyConsistent).oldValue
        guard before == 0, sleepingFlag.load(ordering: .sequentiallyConsistent) else { return true }
        return kick()
    }

    /// Writes the eventfd, retrying `EINTR`. Returns false on another error (`errno` says which).
    func kick() -> Bool {
        var one: UInt64 = 1
        while write(descriptor, &one, 8) != 8 {
            switch errno {
            case EINTR: continue
            case EAGAIN: return true  // the counter is full: readable already
            default: return false
            }
        }
        return true
    }

    /// The loop's thread: about to sleep (`true`) or awake again (`false`).
    func setSleeping(_ sleeping: Bool) { sleepingFlag.store(sleeping, ordering: .sequentiallyConsistent) }

    /// Whether the loop's thread said it is about to sleep or asleep.
    var isSleeping: Bool { sleepingFlag.load(ordering: .sequentiallyConsistent) }

    /// Whether some request is waiting (so the loop must not block).
    var hasRequests: Bool { requests.load(ordering: .sequentiallyConsistent) != 0 }

    /// Takes and clears the request bits (loop's thread).
    func takeRequests() -> UInt32 {
        requests.load(ordering: .relaxed) == 0 ? 0 : requests.exchange(0, ordering: .sequentiallyConsistent)
    }

    /// Empties the eventfd after it woke the loop (loop's thread). Errors leave it readable, so
    /// the loop looks again; they are never fatal.
    func drain() {
        var count: UInt64 = 0
        while read(descriptor, &count, 8) < 0 && errno == EINTR {}
    }

    /// Closes the eventfd (the loop's teardown, once nothing can request any more).
    func closeDescriptor() { close(descriptor) }
}
