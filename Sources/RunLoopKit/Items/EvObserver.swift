import Synchronization

/// A run-loop observer (CF: `CFRunLoopObserver`): a callback for the phases of a run.
///
/// It is called with the activity for each phase in its mask, in the modes it was added to
/// (R48), in ascending `order`, equal orders in the order they were added (R49). A
/// non-repeating observer is invalidated after its first call (R50); an observer is never
/// re-entered, so it does not see the phases of a nested run started from its own callout
/// (R51). It belongs to one run loop at a time (R53).
public final class EvObserver: Sendable {
    /// The activities this observer is called for.
    public let activities: EvRunLoop.Activity
    /// Whether it keeps observing after its first call (R50).
    public let repeats: Bool
    /// Lower orders are called first (R49).
    public let order: Int
    let handler: @Sendable (EvObserver, EvRunLoop.Activity) -> Void
    let state = Locked(ObserverState())

    /// An observer of `activities`.
    ///
    /// - Parameters:
    ///   - activities: the phases to be called for (R48).
    ///   - repeats: `false` makes it stop after its first call (R50).
    ///   - order: lower first (R49).
    ///   - handler: runs on the loop's thread with the observer and the current activity.
    public init(
        activities: EvRunLoop.Activity, repeats: Bool = true, order: Int = 0,
        handler: @escaping @Sendable (EvObserver, EvRunLoop.Activity) -> Void
    ) {
        self.activities = activities
        self.repeats = repeats
        self.order = order
        self.handler = handler
    }

    /// False once invalidated, explicitly or after the first call of a non-repeating observer.
    public var isValid: Bool { state.withLock { $0.isValid } }

    /// Removes the observer from every mode; it is never called again (R52). Safe from any thread.
    public func invalidate() {
        withItemAndLoopLocked(
            state,
            bound: { loop, loopState, observer in
                loop.detachEverywhere(self, &loopState, &observer)
                observer.isValid = false
            },
            unbound: { $0.isValid = false })
    }
}

/// An observer's mutable part, guarded by ``EvObserver/state``.
struct ObserverState: ItemMembership, Sendable {
    var isValid = true
    /// True while its handler runs (R51).
    var isFiring = false
    var loop: EvRunLoop?
    var modes = ModeList()
}
