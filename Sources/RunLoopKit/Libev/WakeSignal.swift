import CEpoll
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// How other threads and signal handlers wake a loop: request bits in one atomic word, plus a
/// way to end the loop's block, used only when the loop may be asleep.
///
/// The loop blocks in one of two places (see ``EvBackend/wait(poll:)``). With nothing for epoll
/// to report — no caller's descriptor, no main queue, no deadline within a millisecond — it
/// blocks on the word itself (`futex_wait`), and a requester ends that with `futex_wake`: a
/// wake-up then costs the two system calls of a futex and none of epoll's or libev's work.
/// Otherwise it blocks in libev's `epoll_wait`, and a requester writes the eventfd that libev
/// watches.
///
/// Why not libev's `ev_async`: libev creates its eventfd lazily, inside `ev_async_start`, and
/// when that fails (no descriptor left) it falls back to `pipe`, retrying for ever through
/// `ev_syserr`, which aborts. Owning the eventfd lets the loop's creation throw instead, and lets
/// the loop refuse to watch it as a caller's descriptor.
///
/// Like `ev_async_send`, a request from a thread that finds the loop awake costs no system call.
/// The request bits and the loop's "asleep" bits share one atomic word, so each side needs a
/// single read-modify-write and no fence: the loop sets ``sleeping`` and learns in the same
/// operation whether requests wait (``beginSleep(onWord:)``); a requester sets its bit and learns
/// in the same operation whether the loop sleeps, and where (``request(_:)``). Read-modify-writes
/// of one word are totally ordered whatever their memory order, so one of the two comes second
/// and sees the other: either the loop does not block, or the requester wakes it. Only the first
/// requester after the loop took the bits wakes it; later ones see bits set, and so either that
/// requester woke the loop or the loop saw the bits before sleeping. A loop blocking on the word
/// blocks only while the word still reads "asleep, no request" (the futex compares it), so a
/// request made between its announcement and its block ends the block at once. The orderings are
/// acquire/release only to carry the requester's earlier writes (the work it posted) to the loop
/// that takes the bits. ``request(_:)`` is async-signal-safe (a lock-free atomic and `write` or
/// `futex`).
final class WakeSignal: Sendable {
    /// ``EvBackend/wakeUp()`` was called.
    static let wakeUp: UInt32 = 1 << 0
    /// A routed signal arrived (see ``SignalRouting``).
    static let signalArrived: UInt32 = 1 << 1
    /// The timerfd could not be armed (see ``EvBackend/setDeadline(_:)``).
    static let deadlineChanged: UInt32 = 1 << 2
    /// A deadline was set from another thread while the loop blocked on the word (see
    /// ``deadlineSet()``): the loop comes back and plans its sleep for the new deadline.
    static let deadlineMoved: UInt32 = 1 << 3
    /// Not a request: the loop's thread is about to block or blocked.
    static let sleeping: UInt32 = 1 << 31
    /// Not a request: with ``sleeping``, the loop blocks on the word rather than in `epoll_wait`.
    static let onWord: UInt32 = 1 << 30
    /// Both "asleep" bits.
    private static let asleep = sleeping | onWord

    /// The eventfd (non-blocking, close-on-exec).
    let descriptor: Int32
    /// The request bits, ``sleeping`` and ``onWord``: allocated, because the futex needs its
    /// address. Written only atomically; freed by `deinit`, when nobody can request any more.
    private nonisolated(unsafe) let word: UnsafeMutablePointer<Atomic<UInt32>>

    /// A new eventfd; `nil` with `errno` set when it cannot be created.
    init?() {
        descriptor = retryingEINTR { eventfd(0, Int32(EFD_NONBLOCK | EFD_CLOEXEC)) }
        if descriptor < 0 { return nil }
        word = .allocate(capacity: 1)
        word.initialize(to: Atomic(0))
    }

    deinit { word.deallocate() }

    /// Sets `bit` and makes sure a sleeping loop wakes. Returns false when the eventfd could not
    /// be written (a hard error, not `EINTR`); the bit stays set, and the caller may ``kick()``
    /// again.
    @discardableResult
    func request(_ bit: UInt32) -> Bool {
        // Releasing: the loop that takes the bit (acquiring) sees what was posted before it.
        let before = word.pointee.bitwiseOr(bit, ordering: .acquiringAndReleasing).oldValue
        if before == Self.sleeping { return kick() }
        if before == Self.asleep { wakeWord() }
        return true  // awake, or an earlier requester woke it
    }

    /// Another thread set a deadline (after storing it): a loop that blocks on the word, planned
    /// for the deadline before, must come back and plan again. The fence pairs with the one in
    /// ``EvBackend/wait(poll:)``, between the loop's announcement and its look at the deadline:
    /// either this look sees the loop on the word, or the loop's look sees the deadline.
    func deadlineSet() {
        atomicMemoryFence(ordering: .sequentiallyConsistent)
        if word.pointee.load(ordering: .relaxed) == Self.asleep { request(Self.deadlineMoved) }
    }

    /// Ends a block on the word (``sleepOnWord()``).
    private func wakeWord() {
        _ = cepoll_futex_wake(UnsafeMutableRawPointer(word).assumingMemoryBound(to: UInt32.self))
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

    /// The loop's thread, before it blocks: announces ``sleeping`` (and ``onWord`` if it will
    /// block in ``sleepOnWord()``) and returns whether requests wait (then it must not block; it
    /// takes them with ``endSleep()`` as after a sleep).
    func beginSleep(onWord: Bool) -> Bool {
        word.pointee.bitwiseOr(onWord ? Self.asleep : Self.sleeping, ordering: .acquiringAndReleasing).oldValue != 0
    }

    /// The loop's thread, after ``beginSleep(onWord:)`` with `onWord` returned false: blocks
    /// until a request (at once if one came meanwhile), a signal interrupts it, or `deadline`
    /// (nanoseconds of `CLOCK_MONOTONIC`; `nil`: none) passes.
    func sleepOnWord(until deadline: Int64?) {
        let address = UnsafeMutableRawPointer(word).assumingMemoryBound(to: UInt32.self)
        guard let deadline else {
            _ = cepoll_futex_wait(address, Self.asleep, nil)
            return
        }
        var limit = timespec(tv_sec: Int(deadline / 1_000_000_000), tv_nsec: Int(deadline % 1_000_000_000))
        _ = cepoll_futex_wait(address, Self.asleep, &limit)
    }

    /// The loop's thread, awake again (or it never blocked): clears ``sleeping`` and takes the
    /// request bits. Acquiring: what requesters posted before their bits is visible.
    func endSleep() -> UInt32 {
        word.pointee.exchange(0, ordering: .acquiringAndReleasing) & ~Self.asleep
    }

    /// Takes and clears the request bits while awake (loop's thread). A relaxed look first: a
    /// bit it misses was set after the look and is taken at the next one, before any sleep
    /// (``beginSleep(onWord:)`` sees it).
    func takeRequests() -> UInt32 {
        word.pointee.load(ordering: .relaxed) == 0 ? 0 : word.pointee.exchange(0, ordering: .acquiringAndReleasing) & ~Self.asleep
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
