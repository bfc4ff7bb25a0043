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
/// Like `ev_async_send`, a request from a thread that finds the loop awake costs no system call.
/// The request bits and the loop's "asleep" bit share one atomic word, so each side needs a
/// single read-modify-write and no fence: the loop sets ``sleeping`` and learns in the same
/// operation whether requests wait (``beginSleep()``); a requester sets its bit and learns in
/// the same operation whether the loop sleeps (``request(_:)``). Read-modify-writes of one word
/// are totally ordered whatever their memory order, so one of the two comes second and sees the
/// other: either the loop does not block, or the requester writes the eventfd. Only the first
/// requester after the loop took the bits writes; later ones see bits set, and so either that
/// writer woke the loop or the loop saw the bits before sleeping. The orderings are
/// acquire/release only to carry the requester's earlier writes (the work it posted) to the loop
/// that takes the bits. ``request(_:)`` is async-signal-safe (a lock-free atomic and `write`).
final class WakeSignal: Sendable {
    /// ``EvBackend/wakeUp()`` was called.
    static let wakeUp: UInt32 = 1 << 0
    /// A routed signal arrived (see ``SignalRouting``).
    static let signalArrived: UInt32 = 1 << 1
    /// The timerfd could not be armed (see ``EvBackend/setDeadline(_:)``).
    static let deadlineChanged: UInt32 = 1 << 2
    /// Not a request: the loop's thread is about to block or blocked in `ev_run`.
    static let sleeping: UInt32 = 1 << 31

    /// The eventfd (non-blocking, close-on-exec).
    let descriptor: Int32
    /// The request bits and ``sleeping``.
    private let state = Atomic<UInt32>(0)

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
        // Releasing: the loop that takes the bit (acquiring) sees what was posted before it.
        let before = state.bitwiseOr(bit, ordering: .acquiringAndReleasing).oldValue
        guard before == Self.sleeping else { return true }  // awake, or an earlier requester wrote
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

    /// The loop's thread, before it blocks: announces ``sleeping`` and returns whether requests
    /// wait (then it must not block; it takes them with ``endSleep()`` as after a sleep).
    func beginSleep() -> Bool {
        state.bitwiseOr(Self.sleeping, ordering: .acquiringAndReleasing).oldValue != 0
    }

    /// The loop's thread, awake again (or it never blocked): clears ``sleeping`` and takes the
    /// request bits. Acquiring: what requesters posted before their bits is visible.
    func endSleep() -> UInt32 {
        state.exchange(0, ordering: .acquiringAndReleasing) & ~Self.sleeping
    }

    /// Takes and clears the request bits while awake (loop's thread). A relaxed look first: a
    /// bit it misses was set after the look and is taken at the next one, before any sleep
    /// (``beginSleep()`` sees it).
    func takeRequests() -> UInt32 {
        state.load(ordering: .relaxed) == 0 ? 0 : state.exchange(0, ordering: .acquiringAndReleasing) & ~Self.sleeping
    }

    /// Empties the eventfd `descriptor` after it woke the loop (loop's thread). Errors leave it
    /// readable, so the loop looks again; they are never fatal.
    static func drain(_ descriptor: Int32) {
        var count: UInt64 = 0
        while read(descriptor, &count, 8) < 0 && errno == EINTR {}
    }

    /// Closes the eventfd (the loop's teardown, once nothing can request any more).
    func closeDescriptor() { close(descriptor) }
}
