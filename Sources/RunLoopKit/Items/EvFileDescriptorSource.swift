#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A version-1 source for readiness of a caller's file descriptor (CF's source1 on an fd).
///
/// The descriptor is watched only while one of the source's modes runs (R37); the handler runs
/// on the loop's thread with what fired. The source does not own the descriptor: close it after
/// removing or invalidating the source. Closing it while watched, from any thread, is
/// survivable: when the loop next starts watching it, or when the file it named becomes ready,
/// the handler is called once with ``Readiness/error`` and the source invalidates itself, so
/// the loop never spins on a dead descriptor.
///
/// The source remembers which file its descriptor named when it was made (the kernel tells it,
/// through an epoll set of the process that is never waited on). If the number is closed and
/// reused for another file (the next connection's socket, another eventfd), the old source never
/// reports readiness of the new file: it gets ``Readiness/error`` alone, once, and invalidates
/// itself, while a new source on the reused number watches the new file. That holds for
/// readiness of the old file that waited its turn (R38) while a callout, or code between two
/// runs, closed and reused the number: it is checked at the handoff, and ``Readiness/error``
/// comes alone. On ``Readiness/error`` a handler must leave the number alone: it may name
/// another file already. A number that names the same open file
/// again (a `dup` of it put back) is watched as that file; for a regular file, so is the same
/// path opened again. A regular file, which epoll cannot watch, is always ready, until it is
/// closed. A run loop's own descriptors cannot be watched: the initialiser refuses them, and a
/// number that became one after the source was made is reported with ``Readiness/error`` when
/// watched.
///
/// A socket's peer going is not ``Readiness/error``, which means the descriptor itself can no
/// longer be watched; as with `poll`, end of file (the peer closed or half-closed) makes the
/// socket readable, and a reset or a failed connect (a hang-up or socket error) readable and
/// writable: the read, write or `SO_ERROR` that follows says which. The socket then stays ready
/// at every iteration until its source leaves its modes or the descriptor is closed, so a
/// handler that meets end of file or an error removes or invalidates its source.
///
/// `@unchecked Sendable` as its superclass is: every field is a constant of a `Sendable` type.
public final class EvFileDescriptorSource: EvVersion1Source, @unchecked Sendable {
    /// What a descriptor is ready for.
    public struct Readiness: OptionSet, Sendable, Hashable {
        public let rawValue: Int32
        /// Readiness from libev's event bits.
        public init(rawValue: Int32) { self.rawValue = rawValue }
        /// The descriptor was readable when the loop looked. Code that ran since (another
        /// source's handler on the same descriptor, or another loop watching a shared listening
        /// socket) may have read what was there, and a read of a blocking descriptor would then
        /// block the loop: read non-blocking descriptors.
        public static let readable = Readiness(rawValue: EvBackend.readable)
        /// The descriptor was writable when the loop looked; as for ``readable``, code that ran
        /// since may have filled it: write non-blocking descriptors.
        public static let writable = Readiness(rawValue: EvBackend.writable)
        /// The descriptor failed (closed while watched, say); the source is then invalidated.
        /// Never together with ``readable`` or ``writable``, and never for a socket's peer that
        /// went (end of file, a reset): that is ``readable`` or ``writable``, as `poll` says.
        public static let error = Readiness(rawValue: EvBackend.failed)
    }

    /// The watched descriptor.
    public let fileDescriptor: Int32
    /// The readiness watched for.
    public let events: Readiness

    /// A source for `fileDescriptor` becoming ready for `events`.
    ///
    /// - Parameters:
    ///   - fileDescriptor: the caller's descriptor, open; the caller keeps owning it (the source
    ///     never closes it). It may be closed while watched: the handler sees `.error` when the
    ///     loop next starts watching it or the file it named becomes ready. The source is for the
    ///     file it names now, even once the number names another.
    ///   - events: ``Readiness/readable``, ``Readiness/writable`` or both.
    ///   - order: kept for CF parity; ready version-1 sources are handled first come, first served.
    ///   - handler: runs on the loop's thread with the readiness that fired.
    /// - Throws: ``EvSourceError/badFileDescriptor(_:)`` if the descriptor is negative or not open;
    ///   ``EvSourceError/internalDescriptor(_:)`` if it is one of a run loop's own descriptors.
    /// - Precondition: `events` holds ``Readiness/readable`` and/or ``Readiness/writable``.
    public init(
        fileDescriptor: Int32, events: Readiness, order: Int = 0,
        handler: @escaping @Sendable (Readiness) -> Void
    ) throws(EvSourceError) {
        require(
            !events.intersection([.readable, .writable]).isEmpty,
            "EvFileDescriptorSource.init: events must contain .readable and/or .writable")
        guard fileDescriptor >= 0 else { throw .badFileDescriptor(fileDescriptor) }
        // Refused before its file is entered in the register (FileIdentity), which a loop's own
        // epoll set must not join.
        guard !EvBackend.isInternalDescriptor(fileDescriptor) else { throw .internalDescriptor(fileDescriptor) }
        guard let file = FileIdentity(of: fileDescriptor) else { throw .badFileDescriptor(fileDescriptor) }
        self.fileDescriptor = fileDescriptor
        self.events = events.intersection([.readable, .writable])
        let kind = EvSource1Core.Kind.fileDescriptor(fileDescriptor, events: self.events.rawValue, file: file)
        super.init(core: EvSource1Core(kind: kind, order: order) { core, events in
            // Readiness noted before the failure was the old file's: the number may name another now.
            let readiness = events & EvBackend.failed != 0 ? Readiness.error : Readiness(rawValue: events)
            handler(readiness)
            if readiness.contains(.error) { core.invalidate() }
            return false
        })
    }

    /// Whether the source can still fire.
    public var isValid: Bool { source1Core.isValid }

    /// Stops watching at once and for good; removes the source from every mode. Safe from any thread.
    public func invalidate() { source1Core.invalidate() }
}
