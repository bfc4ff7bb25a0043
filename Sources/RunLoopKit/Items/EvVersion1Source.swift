import Synchronization

/// A version-1 source: one the kernel wakes the loop for by itself (CF's source1; a file
/// descriptor, a Unix signal or a message port on Linux). Add it with
/// ``EvRunLoop/add(_:forMode:)-(EvVersion1Source,_)``.
///
/// Rules: it is watched only while one of its modes runs, and readiness that arrives meanwhile
/// waits (R37); at most one version-1 source is handled per iteration and it counts as a handled
/// source for `returnAfterSourceHandled` (R38); like any source it keeps its modes from being
/// empty (R16). The version-1 sources are RunLoopKit's own: ``EvFileDescriptorSource``,
/// ``EvMessagePort``, ``EvSignalSource`` and ``EvLibevSource`` (which hosts libev libraries'
/// watchers) are its subclasses. It cannot be subclassed outside the library, since the engine
/// part behind each one is internal.
///
/// `@unchecked Sendable`: its one field is a constant of a `Sendable` type.
public class EvVersion1Source: @unchecked Sendable {
    /// The engine part of this source.
    let source1Core: EvSource1Core

    init(core: EvSource1Core) { source1Core = core }
}

/// The engine part shared by every version-1 source.
final class EvSource1Core: Sendable {
    enum Kind: Sendable {
        /// `file`: the file the descriptor named when the source was made (see ``FileIdentity``).
        case fileDescriptor(Int32, events: Int32, file: FileIdentity)
        case signal(Int32)
        case port
        /// An ``EvLibevSource``: the libev libraries' watchers, all in the loop's library loop.
        case libev(LibevBinding)
    }

    let kind: Kind
    let order: Int
    /// Handles one readiness on the loop's thread; returns whether the source is still ready
    /// (a port with more messages queued).
    let perform: @Sendable (_ core: EvSource1Core, _ events: Int32) -> Bool
    /// Whether work is already waiting when the source joins a loop (a port's queued messages).
    let hasPendingWork: @Sendable () -> Bool
    let state = Locked(Source1State())

    init(
        kind: Kind, order: Int, perform: @escaping @Sendable (EvSource1Core, Int32) -> Bool,
        hasPendingWork: @escaping @Sendable () -> Bool = { false }
    ) {
        self.kind = kind
        self.order = order
        self.perform = perform
        self.hasPendingWork = hasPendingWork
    }

    var isValid: Bool { state.withLock { $0.isValid } }

    /// Whether the source is watched only while one of its modes runs, by a watcher of its own
    /// (R37); signal sources are watched for as long as they are in the loop, ports need none.
    var isWatchedPerMode: Bool {
        switch kind {
        case .fileDescriptor, .libev: true
        case .signal, .port: false
        }
    }

    /// Removes the source from every mode of its loop and disables it for good.
    func invalidate() {
        withItemAndLoopLocked(
            state,
            bound: { loop, loopState, source in
                loop.detachEverywhere(self, &loopState, &source)
                source.isValid = false
            },
            unbound: { $0.isValid = false })
    }
}

/// A version-1 source's mutable part, guarded by ``EvSource1Core/state``.
struct Source1State: ItemMembership, Sendable {
    var isValid = true
    var loop: EvRunLoop?
    var modes = ModeList()
    /// Readiness not handled yet (libev's event bits; ports use ``EvBackend/readable``).
    var pendingEvents: Int32 = 0
    /// When it became ready, so ready sources are handled first come, first served.
    var readySequence: UInt64 = 0
    /// A descriptor's: ``LoopRecorder/userCodeStamp`` when it became ready. Another at its
    /// handoff means code ran since that may have closed its number (see
    /// ``LoopWaiter/readinessTaken(_:verify:)``).
    var readyStamp: UInt64 = 0
    /// The token of the watcher whose report made the pending readiness, 0 for none: its
    /// handoff finds the watcher with no lookup. A watcher is removed only after its source left
    /// the loop, which drops the readiness, so the token is the loop's while it is pending.
    var readyToken = 0
    /// Its readiness is held by the iteration whose wait found it, for that iteration's R20.11
    /// (C70): no run nested meanwhile handles it.
    var isHeld = false

    /// Takes the pending readiness, for its handler: the events, when they became ready and
    /// the watcher that reported them.
    mutating func takeReadiness() -> (events: Int32, stamp: UInt64, token: Int) {
        defer { pendingEvents = 0 }
        return (pendingEvents, readyStamp, readyToken)
    }
}

/// Failures of version-1 sources.
public enum EvSourceError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The file descriptor is negative or not open.
    case badFileDescriptor(Int32)
    /// The signal number is out of range, reserved by the C library (32 and 33 with glibc), a
    /// signal that cannot be caught (SIGKILL, SIGSTOP), or one a fault raises (SIGILL, SIGFPE,
    /// SIGSEGV, SIGBUS), which a handler that returns would raise again for ever.
    case invalidSignal(Int32)
    /// The descriptor is one of a run loop's own (its epoll set, its wake-up eventfd or its
    /// timerfd): watching it would break that loop.
    case internalDescriptor(Int32)
    /// The port was invalidated; the message was not queued.
    case portInvalidated
    /// The port holds `capacity` messages not yet handled (its loop is behind, or none of its
    /// modes runs); the message was not queued.
    case portFull(capacity: Int)

    /// A sentence that names the call and what was wrong.
    public var description: String {
        switch self {
        case .badFileDescriptor(let fd): "EvFileDescriptorSource: file descriptor \(fd) is not open"
        case .invalidSignal(let signal):
            "EvSignalSource: signal \(signal) cannot be watched (valid: 1...31 except SIGKILL, SIGSTOP and the fault signals SIGILL, SIGFPE, SIGSEGV and SIGBUS, and SIGRTMIN...SIGRTMAX)"
        case .internalDescriptor(let fd):
            "EvFileDescriptorSource: file descriptor \(fd) belongs to a run loop (its epoll set, eventfd or timerfd) and cannot be watched"
        case .portInvalidated: "EvMessagePort.send: the port was invalidated"
        case .portFull(let capacity): "EvMessagePort.send: the port is full (\(capacity) messages wait to be handled)"
        }
    }
}
