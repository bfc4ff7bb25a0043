import Synchronization

/// The part of an item's state that says where it is scheduled. Shared by timers, sources and
/// observers so that one helper can lock an item together with its loop.
protocol ItemMembership {
    var loop: EvRunLoop? { get set }
    var modes: ModeList { get set }
}

/// Locks an item's run loop (if it is bound to one) and then the item itself — always in that
/// order, the one lock order of RunLoopKit — and runs `bound` or `unbound`.
///
/// The item's loop is read first without the loop lock, so it may change before both locks are
/// held; then the attempt is simply repeated.
func withItemAndLoopLocked<S: ItemMembership & Sendable, R: Sendable>(
    _ item: borrowing Locked<S>,
    bound: @Sendable (EvRunLoop, inout LoopState, inout S) -> R,
    unbound: @Sendable (inout S) -> R
) -> R {
    while true {
        if let loop = item.withLock({ $0.loop }) {
            let result: R? = loop.state.withLock { loopState in
                item.withLock { itemState in
                    itemState.loop === loop ? bound(loop, &loopState, &itemState) : nil
                }
            }
            if let result { return result }
        } else {
            let result: R? = item.withLock { itemState in
                itemState.loop == nil ? unbound(&itemState) : nil
            }
            if let result { return result }
        }
    }
}
