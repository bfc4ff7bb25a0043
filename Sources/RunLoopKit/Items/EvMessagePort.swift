import Synchronization

/// A message port between threads: any thread sends values to it; the loop's thread receives
/// them, in order, in the modes the port is in (CF's Mach-port source1, without a descriptor:
/// sending queues the message and wakes the loop when the mode it runs holds the port).
///
/// Messages sent while none of the port's modes runs — or before the port was added to a loop —
/// wait, without waking the loop, and none is lost or duplicated: each is handled exactly once,
/// one per iteration (R38).
/// A port keeps its modes from being empty even with nothing queued, so a port is the classic
/// way to keep a thread's loop alive.
///
/// A message the port accepted stays in it until it is handled or the port is invalidated. When
/// the thread of the port's loop exits, the port leaves that loop (R4) but stays valid with its
/// queue: messages waiting then, and those sent afterwards, are handled in the next loop the port
/// is added to.
///
/// Back-pressure: the queue holds at most `capacity` messages. A sender that outruns the loop
/// (which handles one message per iteration) gets ``EvSourceError/portFull(capacity:)`` instead
/// of growing the queue without bound; the message is then not queued, and the sender decides
/// whether to retry once the loop caught up, slow down, or drop it.
///
/// `@unchecked Sendable` as its superclass is: every field is a constant of a `Sendable` type.
public final class EvMessagePort<Message: Sendable>: EvVersion1Source, @unchecked Sendable {
    /// How many messages a port holds by default before ``send(_:)`` throws
    /// ``EvSourceError/portFull(capacity:)``.
    public static var defaultCapacity: Int { 65_536 }

    private let queue: PortQueue<Message>

    /// A port whose `handler` runs on the loop's thread for each message, in the order sent.
    ///
    /// - Parameters:
    ///   - capacity: the most messages queued and not yet handled; ``defaultCapacity`` unless given.
    ///   - order: the port's order among version-1 sources (kept for CF parity; ready sources are
    ///     handled first come, first served).
    ///   - handler: called on the loop's thread with each message.
    /// - Precondition: `capacity` is greater than zero.
    public init(capacity: Int = defaultCapacity, order: Int = 0, handler: @escaping @Sendable (Message) -> Void) {
        require(capacity > 0, "EvMessagePort.init(capacity:order:handler:): capacity must be greater than zero (got \(capacity))")
        let queue = PortQueue<Message>(capacity: capacity)
        self.queue = queue
        super.init(core: EvSource1Core(
            kind: .port, order: order,
            perform: { core, _ in
                guard let (message, more) = queue.takeFirst() else { return false }
                // More wait: the port is ready again before its handler runs, so a run nested in
                // the handler takes them, as CF's port stays in its port set.
                if more, let loop = core.state.withLock({ $0.loop }) { loop.markReady(core, events: ReadinessBits.readable) }
                handler(message)
                return false
            },
            hasPendingWork: { queue.count > 0 }))
    }

    /// Queues `message` for the loop's thread and wakes the loop. Safe from any thread; a port
    /// not in a loop (yet, or any more since its loop's thread exited) keeps it for its next loop.
    ///
    /// - Throws: ``EvSourceError/portInvalidated`` after ``invalidate()``, or
    ///   ``EvSourceError/portFull(capacity:)`` while `capacity` messages wait; the message is
    ///   then not queued.
    public func send(_ message: Message) throws(EvSourceError) {
        try queue.append(message)
        let loop = source1Core.state.withLock { $0.loop }
        loop?.markReady(source1Core, events: ReadinessBits.readable)
    }

    /// Messages queued and not yet handled.
    public var pendingCount: Int { queue.count }

    /// The most messages the port holds before ``send(_:)`` throws ``EvSourceError/portFull(capacity:)``.
    public var capacity: Int { queue.capacity }

    /// Whether the port still accepts messages: true until ``invalidate()``.
    public var isValid: Bool { source1Core.isValid }

    /// Removes the port from every mode and refuses further messages; queued ones are dropped.
    public func invalidate() {
        queue.close()
        source1Core.invalidate()
    }
}

/// The messages of one port, guarded by a lock of their own.
final class PortQueue<Message: Sendable>: Sendable {
    private struct Contents {
        var messages: [Message] = []
        var head = 0
        var isClosed = false
    }

    let capacity: Int
    private let contents = Locked(Contents())

    init(capacity: Int) { self.capacity = capacity }

    var count: Int { contents.withLock { $0.messages.count - $0.head } }

    func append(_ message: Message) throws(EvSourceError) {
        let refusal: EvSourceError? = contents.withLock { contents in
            if contents.isClosed { return .portInvalidated }
            if contents.messages.count - contents.head >= capacity { return .portFull(capacity: capacity) }
            contents.messages.append(message)
            return nil
        }
        if let refusal { throw refusal }
    }

    /// The oldest message and whether more remain.
    func takeFirst() -> (Message, Bool)? {
        contents.withLock { contents in
            guard contents.head < contents.messages.count else { return nil }
            let message = contents.messages[contents.head]
            contents.head += 1
            if contents.head == contents.messages.count {
                contents.messages.removeAll(keepingCapacity: true)
                contents.head = 0
                return (message, false)
            }
            if contents.head > 1024, contents.head * 2 > contents.messages.count {
                contents.messages.removeFirst(contents.head)
                contents.head = 0
            }
            return (message, true)
        }
    }

    /// Refuses further messages and drops the queued ones (invalidation).
    func close() {
        let dropped = contents.withLock { contents in
            contents.isClosed = true
            defer { contents.messages = []; contents.head = 0 }
            return contents.messages
        }
        withExtendedLifetime(dropped) {}  // released with no lock held
    }
}
