import Synchronization

/// A message port between threads: any thread sends values to it; the loop's thread receives
/// them, in order, in the modes the port is in (CF's Mach-port source1, without a descriptor:
/// sending queues the message and wakes the loop).
///
/// Messages sent while none of the port's modes runs — or before the port was added to a loop —
/// wait, and none is lost or duplicated: each is handled exactly once, one per iteration (R38).
/// A port keeps its modes from being empty even with nothing queued, so a port is the classic
/// way to keep a thread's loop alive.
public final class EvMessagePort<Message: Sendable>: EvVersion1Source {
    /// The engine part of this source (see ``EvVersion1Source``).
    public let source1Core: EvSource1Core
    private let queue: PortQueue<Message>

    /// A port whose `handler` runs on the loop's thread for each message, in the order sent.
    public init(order: Int = 0, handler: @escaping @Sendable (Message) -> Void) {
        let queue = PortQueue<Message>()
        self.queue = queue
        source1Core = EvSource1Core(
            kind: .port, order: order,
            perform: { _, _ in
                guard let (message, more) = queue.takeFirst() else { return false }
                handler(message)
                return more
            },
            orphaned: { queue.close(.loopExited) },
            hasPendingWork: { queue.count > 0 })
    }

    /// Queues `message` for the loop's thread and wakes the loop. Safe from any thread.
    ///
    /// - Throws: ``EvSourceError/portInvalidated`` after ``invalidate()``, or
    ///   ``EvSourceError/loopExited`` once the thread of the port's loop has exited; the message
    ///   is then not queued.
    public func send(_ message: Message) throws(EvSourceError) {
        try queue.append(message)
        let loop = source1Core.state.withLock { $0.loop }
        loop?.markReady(source1Core, events: EvBackend.readable)
    }

    /// Messages queued and not yet handled.
    public var pendingCount: Int { queue.count }

    /// Whether the port still accepts messages.
    public var isValid: Bool { source1Core.isValid }

    /// Removes the port from every mode and refuses further messages; queued ones are dropped.
    public func invalidate() {
        queue.close(.portInvalidated)
        source1Core.invalidate()
    }
}

/// The messages of one port, guarded by a lock of their own.
final class PortQueue<Message: Sendable>: Sendable {
    private struct Contents {
        var messages: [Message] = []
        var head = 0
        var closed: EvSourceError?
    }

    private let contents = Locked(Contents())

    var count: Int { contents.withLock { $0.messages.count - $0.head } }

    func append(_ message: Message) throws(EvSourceError) {
        let closed: EvSourceError? = contents.withLock { contents in
            if let closed = contents.closed { return closed }
            contents.messages.append(message)
            return nil
        }
        if let closed { throw closed }
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

    func close(_ reason: EvSourceError) {
        contents.withLock { contents in
            if contents.closed == nil { contents.closed = reason }
            contents.messages = []
            contents.head = 0
        }
    }
}
