import Synchronization

/// A version-0 run-loop source (CF: `CFRunLoopSource` with a version-0 context).
///
/// A source does nothing until it is signalled with ``signal()``; then, the next time one of
/// its modes runs, the loop calls `perform` on its thread (R33, R35). Signalling does not wake a
/// sleeping loop — call ``EvRunLoop/wakeUp()`` too (R22). A source belongs to one run loop at a
/// time (it may be in several of that loop's modes); adding it to a second loop stops with a
/// message, where CF would accept it.
///
/// Rules: signalled sources of a mode run in ascending `order`, equal orders by the time they
/// were signalled (R33); signalling is idempotent until the source performs (R35); `schedule`
/// runs once per mode the source joins and `cancel` once per mode it leaves, including through
/// ``invalidate()`` and the loop's teardown (R36, R4).
public final class EvSource: Sendable {
    /// Where this source runs among the signalled sources of a mode: lower first (R33).
    public let order: Int
    let performHandler: @Sendable () -> Void
    let scheduleHandler: (@Sendable (EvRunLoop, EvRunLoop.Mode) -> Void)?
    let cancelHandler: (@Sendable (EvRunLoop, EvRunLoop.Mode) -> Void)?
    let state = Locked(SourceState())
    /// This source's index in its loop's ``LoopState/signalled`` list, or -1 when it is not on it.
    /// Read and written only under that loop's lock (so it needs no lock of its own).
    nonisolated(unsafe) var signalledSlot = -1

    private static let signalSequence = Atomic<UInt64>(0)

    /// A version-0 source.
    ///
    /// - Parameters:
    ///   - order: lower orders perform first (R33).
    ///   - schedule: called on the adding thread each time the source joins a mode.
    ///   - cancel: called each time the source leaves a mode (removal, invalidation, teardown).
    ///   - perform: called on the loop's thread when the source, signalled, is handled.
    public init(
        order: Int = 0,
        schedule: (@Sendable (EvRunLoop, EvRunLoop.Mode) -> Void)? = nil,
        cancel: (@Sendable (EvRunLoop, EvRunLoop.Mode) -> Void)? = nil,
        perform: @escaping @Sendable () -> Void
    ) {
        self.order = order
        self.performHandler = perform
        self.scheduleHandler = schedule
        self.cancelHandler = cancel
    }

    /// Marks the source as ready to perform. Safe from any thread; does not wake the loop (R22).
    /// Does nothing on an invalidated source (R36).
    public func signal() {
        // The source's lock is taken once. Inside it the source goes to its loop's inbox, with
        // no lock, or, if another source is there, on the loop's list under the loop's lock,
        // which it may only try, since the lock order is the loop's first. If the loop holds its
        // lock (it is awake, in a step), the source lets go of its own and queues itself the long
        // way round (enqueueSignalled).
        let contended: EvRunLoop? = state.withLock { source in
            guard source.isValid, !source.isSignalled else { return nil }
            source.isSignalled = true
            // Relaxed: the sequence only has to order signals, and one atomic's modification
            // order already agrees with every happens-before between them (R33, C58). Wrapping:
            // one locked add, no overflow check (2^64 signals do not happen).
            source.signalSequence = Self.signalSequence.wrappingAdd(1, ordering: .relaxed).newValue
            if source.loop?.signalInbox.post(self) ?? true { return nil }
            return source.loop?.tryEnqueueSignalled(self) == false ? source.loop : nil
        }
        contended?.enqueueSignalled(self)
    }

    /// Whether the source is signalled and has not performed since.
    public var isSignalled: Bool { state.withLock { $0.isSignalled } }

    /// False once ``invalidate()`` was called.
    public var isValid: Bool { state.withLock { $0.isValid } }

    /// Removes the source from every mode (calling `cancel` for each) and disables it for good:
    /// it never performs again and signalling it does nothing (R36). Safe from any thread.
    public func invalidate() {
        let left: (EvRunLoop, ModeList)? = withItemAndLoopLocked(
            state,
            bound: { loop, loopState, source in
                let modes = source.modes
                loop.detachEverywhere(self, &loopState, &source)
                source.isValid = false
                source.isSignalled = false
                return (loop, modes)
            },
            unbound: { source in
                source.isValid = false
                source.isSignalled = false
                return nil
            })
        if let (loop, modes) = left {
            for mode in modes { Callout.sourceCancel(self, loop, mode) }
        }
    }
}

/// A source's mutable part, guarded by ``EvSource/state``.
struct SourceState: ItemMembership, Sendable {
    var isValid = true
    var isSignalled = false
    /// When it was signalled, to order equal `order`s (R33).
    var signalSequence: UInt64 = 0
    var loop: EvRunLoop?
    var modes = ModeList()
}
