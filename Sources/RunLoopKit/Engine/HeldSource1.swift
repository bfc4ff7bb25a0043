/// A ready version-1 source's readiness, taken for one iteration's R20.11. A tuple, so that its
/// taker binds its parts without copying the reference.
typealias TakenSource1 = (core: EvSource1Core, events: Int32, token: Int, stamp: UInt64)

/// The source an iteration holds from its wait to its R20.11 (C70), kept in its run's frame. The
/// reference is retained by hand, so that a frame stays a plain value that the run stack copies
/// without reference counting.
struct HeldSource1 {
    private let core: Unmanaged<EvSource1Core>

    init(_ core: EvSource1Core) {
        self.core = .passRetained(core)
    }

    /// The source, with the reference; call once.
    func take() -> EvSource1Core {
        core.takeRetainedValue()
    }
}
