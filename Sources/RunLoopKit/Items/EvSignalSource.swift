#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A version-1 source for a Unix signal (SIGINT, SIGTERM, SIGHUP, …), delivered as a callback
/// on the loop's thread instead of in a signal handler.
///
/// libev catches the signal from the moment the source is in one of its loop's modes (added on
/// the loop's own thread; added from another thread, from the loop's next iteration) until it is
/// removed; deliveries wait while none of its modes runs (R37) and several deliveries before the
/// handler runs are folded into one call. A signal can be watched by one run loop at a time
/// (libev's rule); adding sources for the same signal to a second loop stops with a message.
public final class EvSignalSource: EvVersion1Source {
    /// The signal number.
    public let signal: Int32
    /// The engine part of this source (see ``EvVersion1Source``).
    public let source1Core: EvSource1Core

    /// A source for `signal`.
    ///
    /// - Parameters:
    ///   - signal: the signal number, such as `SIGHUP`; not `SIGKILL` or `SIGSTOP`.
    ///   - order: kept for CF parity; ready version-1 sources are handled first come, first served.
    ///   - handler: runs on the loop's thread after the signal arrived.
    /// - Throws: ``EvSourceError/invalidSignal(_:)`` for numbers outside 1...64, SIGKILL and SIGSTOP.
    public init(signal: Int32, order: Int = 0, handler: @escaping @Sendable () -> Void) throws(EvSourceError) {
        guard (1...64).contains(signal), signal != SIGKILL, signal != SIGSTOP else { throw .invalidSignal(signal) }
        self.signal = signal
        source1Core = EvSource1Core(kind: .signal(signal), order: order) { _, _ in
            handler()
            return false
        }
    }

    /// Whether the source can still fire.
    public var isValid: Bool { source1Core.isValid }

    /// Stops delivering for good and removes the source from every mode. Safe from any thread.
    public func invalidate() { source1Core.invalidate() }
}
