import CEpoll
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The wait's state word and the loop's eventfd: how other threads and signal handlers wake a
/// loop, with a system call only when the loop may be blocked in libev's poll.
///
/// The word holds the request bits and the wait's phase (see the documentation page "The
/// wait"): awake (neither phase bit), ``planned`` (a sleep is planned: a deadline moved from
/// another thread must reach it, R44) and ``sleeping`` with it (the loop's thread is about to
/// enter, or is in, `ev_run`). A requester sets its bit and learns in the same read-modify-write
/// whether the loop sleeps with no request taken yet; only then does it write the eventfd, which
/// libev watches. The loop announces ``sleeping`` and learns in the same operation whether
/// requests wait, in which case it does not enter libev. Read-modify-writes of one word are
/// totally ordered, so one of the two sees the other: no wake-up is lost. Later requesters see
/// a bit already set and write nothing. This is `ev_async_send`'s own scheme
/// (`pipe_write_wanted`), kept in one word with the phase.
///
/// Why not libev's `ev_async`: libev creates its eventfd lazily, inside `ev_async_start`, and
/// when that fails (no descriptor left) it falls back to `pipe`, retrying for ever through
/// `ev_syserr`, which aborts. Owning the eventfd lets the loop's creation throw instead, and lets
/// the loop refuse to watch it as a caller's descriptor. libev still watches it (an `ev_io`).
///
/// ``request(_:)`` is async-signal-safe (a lock-free atomic and `write`).
final class WakeSignal: Sendable {
    /// ``EvBackend/wakeUp()`` was called.
    static let wakeUp: UInt32 = 1 << 0
    /// A routed signal arrived (see ``SignalRouting``).
    static let signalArrived: UInt32 = 1 << 1
    /// The deadline moved from another thread and needs the loop's thread: the timerfd is not
    /// made yet, or could not be armed there (see ``EvBackend/bringDeadlineForward(to:)``).
    static let deadlineNeedsLoop: UInt32 = 1 << 2
    /// Phase: a sleep is planned (``EvBackend/planSleep(_:)``) and not over.
    static let planned: UInt32 = 1 << 30
    /// Phase: the loop's thread blocks, or is about to, in `ev_run`.
    static let sleeping: UInt32 = 1 << 31
    private static let phases = planned | sleeping

    /// The eventfd (non-blocking, close-on-exec).
    let descriptor: Int32
    private let word = Atomic<UInt32>(0)

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
        let before = word.bitwiseOr(bit, ordering: .acquiringAndReleasing).oldValue
        // Asleep with no request yet: this requester is the one that wakes it.
        if before & Self.sleeping != 0 && before & ~Self.phases == 0 { return kick() }
        return true
    }

    /// Writes the eventfd, retrying `EINTR`. Returns false on another error (`errno` says which).
    func kick() -> Bool {
        var one: UInt64 = 1
        // Unprotected: eight bytes written from an eight-byte buffer (no stack-protector check
        // on the path of every wake-up).
        while _withUnprotectedUnsafeMutablePointer(to: &one, { write(descriptor, $0, 8) }) != 8 {
            switch errno {
            case EINTR: continue
            case EAGAIN: return true  // the counter is full: readable already
            default: return false
            }
        }
        return true
    }

    /// Whether a sleep is planned (R44 callers, under the loop's lock). A stale `true` just
    /// after the sleep ended only costs a needless re-arm; `false` is never stale, since the
    /// plan is made under the same lock.
    var isPlanned: Bool { word.load(ordering: .relaxed) & Self.planned != 0 }

    /// Whether the loop's thread is in, or about to enter, `ev_run` (loop's thread: a run nested
    /// in a callback that libev runs inside the wait ends the enclosing sleep's phase).
    var isSleeping: Bool { word.load(ordering: .relaxed) & Self.sleeping != 0 }

    /// Awake → planned (loop's thread, loop's lock held).
    func plan() {
        word.bitwiseOr(Self.planned, ordering: .relaxed)
    }

    /// Planned → asleep (loop's thread): returns whether requests wait, in which case the loop
    /// must not block (it takes them with ``wokeUp()``).
    func beginSleep() -> Bool {
        word.bitwiseOr(Self.sleeping, ordering: .acquiringAndReleasing).oldValue & ~Self.phases != 0
    }

    /// Asleep → planned (loop's thread): takes the request bits; the plan stands until
    /// ``endPlan()``, so a deadline moved meanwhile still reaches the wait. Acquiring: what
    /// requesters posted before their bits is visible.
    func wokeUp() -> UInt32 {
        word.bitwiseAnd(Self.planned, ordering: .acquiringAndReleasing).oldValue & ~Self.phases
    }

    /// Planned → awake (loop's thread), as the sleep returns.
    func endPlan() {
        word.bitwiseAnd(~Self.planned, ordering: .relaxed)
    }

    /// Takes and clears the request bits while awake (loop's thread). A relaxed look first: a
    /// bit it misses was set after the look and is taken at the next one, before any sleep
    /// (``beginSleep()`` sees it).
    func takeRequests() -> UInt32 {
        word.load(ordering: .relaxed) & ~Self.phases == 0 ? 0 : word.bitwiseAnd(Self.phases, ordering: .acquiringAndReleasing).oldValue & ~Self.phases
    }

    /// Empties the eventfd `descriptor` after it woke the loop (loop's thread). Errors leave it
    /// readable, so the loop looks again; they are never fatal.
    static func drain(_ descriptor: Int32) {
        var count: UInt64 = 0
        // Unprotected: eight bytes read into an eight-byte buffer.
        while _withUnprotectedUnsafeMutablePointer(to: &count, { read(descriptor, $0, 8) }) < 0 && errno == EINTR {}
    }

    /// Closes the eventfd (the loop's teardown, once nothing can request any more).
    func closeDescriptor() { close(descriptor) }
}
