#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A version-1 source for a Unix signal (SIGINT, SIGTERM, SIGHUP, …), delivered as a callback
/// on the loop's thread instead of in a signal handler.
///
/// The signal is caught from the moment the source is in one of its loop's modes (from any
/// thread) until its last source in that loop is removed or invalidated; deliveries wait while
/// none of its modes runs (R37), without waking the loop, and several deliveries before the
/// handler runs are folded into one call. Once the last source for a signal is gone, the
/// signal gets back the disposition the process gave it before the first one was added (its
/// own handler, `SIG_IGN`, or `SIG_DFL`): a server that ignores SIGPIPE and watches it for a
/// while still ignores it afterwards.
///
/// A signal can be watched by one run loop at a time; adding a source for it to a second loop
/// while the first still has one stops with a message. Once the first loop's sources are removed
/// or invalidated (from any thread), the signal can be watched by another loop at once.
///
/// ## Who owns a signal
///
/// A process signal has one owner. On Linux, libdispatch's signal sources — and so
/// swift-service-lifecycle's `ServiceGroup`, which traps its `gracefulShutdownSignals` and
/// `cancellationSignals` with them — install a process-wide handler, as signal sources do, and
/// neither calls the handler it replaced: the last one installed gets every delivery. So:
/// - in a program run by a `ServiceGroup`, the group owns SIGTERM and SIGINT: react to its
///   graceful shutdown (`gracefulShutdown()`, `withGracefulShutdownHandler`), which the
///   RunLoopKitServiceLifecycle integration does for worker threads, and use no source for them;
/// - adding a source for a signal a `DispatchSource` already traps stops with a message naming
///   `EvRunLoop.add(_:forMode:)`;
/// - the other order cannot be detected: a `ServiceGroup` (or any `DispatchSource`) that traps a
///   signal after a source was added takes it over, and the source receives nothing more; when
///   the signal's last source goes, the newer handler stays in place;
/// - adding a source for the signal an ``EvStallMonitor`` captures stacks with
///   (``EvStallMonitor/Configuration/backtraceSignal``) stops with a message: that signal's
///   handler stays for the life of the process.
///
/// `@unchecked Sendable` as its superclass is: every field is a constant of a `Sendable` type.
public final class EvSignalSource: EvVersion1Source, @unchecked Sendable {
    /// The signal number.
    public let signal: Int32

    /// A source for `signal`.
    ///
    /// - Parameters:
    ///   - signal: the signal number: 1...31 except SIGKILL and SIGSTOP and the signals a fault
    ///     raises (SIGILL, SIGFPE, SIGSEGV, SIGBUS: the faulting instruction would run again after
    ///     the handler, for ever), or a real-time signal from `SIGRTMIN` to `SIGRTMAX` (34...64
    ///     with glibc, which keeps 32 and 33 for itself).
    ///   - order: kept for CF parity; ready version-1 sources are handled first come, first served.
    ///   - handler: runs on the loop's thread after the signal arrived.
    /// - Throws: ``EvSourceError/invalidSignal(_:)`` for any other number.
    public init(signal: Int32, order: Int = 0, handler: @escaping @Sendable () -> Void) throws(EvSourceError) {
        guard Self.canWatch(signal) else { throw .invalidSignal(signal) }
        self.signal = signal
        super.init(core: EvSource1Core(kind: .signal(signal), order: order) { _, _ in
            handler()
            return false
        })
    }

    /// Whether a source can watch `signal`: a standard signal that can be caught and that no
    /// fault raises, or a real-time one the C library leaves to applications.
    static func canWatch(_ signal: Int32) -> Bool {
        if [SIGKILL, SIGSTOP, SIGILL, SIGFPE, SIGSEGV, SIGBUS].contains(signal) { return false }
        return (1..<32).contains(signal) || (__libc_current_sigrtmin()...__libc_current_sigrtmax()).contains(signal)
    }

    /// Whether the source can still fire.
    public var isValid: Bool { source1Core.isValid }

    /// Stops delivering for good and removes the source from every mode. Safe from any thread.
    public func invalidate() { source1Core.invalidate() }
}
