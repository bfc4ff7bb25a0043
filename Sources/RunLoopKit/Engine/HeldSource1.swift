/// A ready version-1 source's readiness, taken for one iteration's R20.11. A tuple, so that its
/// taker binds its parts without copying the reference.
typealias TakenSource1 = (core: EvSource1Core, events: Int32, token: Int, stamp: UInt64)

/// Readiness an iteration took as its wait returned, kept in its run's frame until its R20.11
/// (C70). The source's reference is retained by hand, so that a frame stays a plain value that
/// the run stack copies without reference counting.
struct HeldSource1 {
    private let core: Unmanaged<EvSource1Core>
    private let events: Int32
    private let token: Int
    private let stamp: UInt64

    init(_ taken: TakenSource1) {
        core = .passRetained(taken.core)
        events = taken.events
        token = taken.token
        stamp = taken.stamp
    }

    /// The readiness, with the reference; call once.
    func take() -> TakenSource1 {
        (core.takeRetainedValue(), events, token, stamp)
    }
}
