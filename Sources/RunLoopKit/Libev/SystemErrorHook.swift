import CLibev
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// libev's system-error hook (`ev_set_syserr_cb`), installed before the first loop is made.
///
/// Without it libev's `ev_syserr` prints and aborts. The one failure RunLoopKit's use of libev
/// can reach is a failed `epoll_wait` in `ev_run` (libev retries `EINTR` itself): the hook
/// records it and returns, libev returns from that poll, and ``EvBackend/wait(poll:)`` retries,
/// stopping with a message naming `EvRunLoop.run` only if it keeps failing. Any other libev
/// system error (its signal/async pipe, which RunLoopKit never asks for) stops the process with
/// a message that says which libev call failed inside RunLoopKit's loop, never with libev's
/// bare `abort`.
enum SystemErrorHook {
    private static let installed: Void = {
        ev_set_syserr_cb { message in SystemErrorHook.report(message) }
    }()
    private static let failures = Atomic<Int>(0)
    private static let last = Locked<String>("")

    /// Installs the hook (once per process).
    static func install() { _ = installed }

    /// How many `epoll_wait` failures libev reported so far in the process.
    static var count: Int { failures.load(ordering: .acquiring) }

    /// The last one, with its `errno`.
    static var lastMessage: String { last.withLock { $0 } }

    private static func report(_ message: UnsafePointer<CChar>?) {
        let error = errno
        let text = message.map { String(cString: $0) } ?? "(libev) system error"
        guard text.contains("epoll_wait") else {
            fatalError("EvRunLoop: libev failed inside the run loop's ev_run: \(text): \(describe(errno: error))")
        }
        last.withLock { $0 = "\(text): \(describe(errno: error))" }
        failures.add(1, ordering: .releasing)
        errno = error
    }
}
