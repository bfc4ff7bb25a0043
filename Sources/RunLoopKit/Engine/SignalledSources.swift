/// A loop's signalled version-0 sources that have not performed yet (R33, R35), in no
/// particular order: each source knows its place (``EvSource/signalledSlot``), so joining and
/// leaving are O(1) with no hashing; the last one fills a place that is left.
///
/// A plain buffer of retained references rather than an `Array`: no uniqueness check or
/// capacity check through a call on every append and removal, and a removal hands the list's
/// reference over instead of copying it (about 40 instructions fewer per wake-up cycle,
/// callgrind). `@unchecked Sendable`: used only under the owning loop's lock (hence the
/// unchecked exclusivity too).
final class SignalledSources: @unchecked Sendable {
    @exclusivity(unchecked) private var slots: UnsafeMutablePointer<Unmanaged<EvSource>>
    @exclusivity(unchecked) private var capacity = 4
    /// How many sources are listed.
    @exclusivity(unchecked) private(set) var count = 0

    init() {
        slots = .allocate(capacity: capacity)
    }

    deinit {
        for slot in 0..<count { slots[slot].release() }
        slots.deallocate()
    }

    var isEmpty: Bool { count == 0 }

    /// The source listed at `slot` (`0..<count`); the list keeps its reference.
    subscript(slot: Int) -> EvSource { slots[slot].takeUnretainedValue() }

    /// Lists `source` unless it is listed already.
    func insert(_ source: EvSource) {
        guard source.signalledSlot < 0 else { return }
        if count == capacity { grow() }
        (slots + count).initialize(to: .passRetained(source))
        source.signalledSlot = count
        count += 1
    }

    /// Takes `source` off the list and returns the list's reference to it; `nil` if it was not
    /// listed.
    @discardableResult
    func remove(_ source: EvSource) -> EvSource? {
        let slot = source.signalledSlot
        guard slot >= 0 else { return nil }
        source.signalledSlot = -1
        count -= 1
        let taken = slots[slot]
        if slot < count {
            let last = slots[count]
            slots[slot] = last
            last._withUnsafeGuaranteedRef { $0.signalledSlot = slot }
        }
        return taken.takeRetainedValue()
    }

    /// With exactly one source listed: takes it off and returns the list's reference to it if
    /// `accept` (called with the source borrowed, no retain) says so; `nil`, leaving it, if not.
    @inline(__always)
    func takeOnly(if accept: (EvSource) -> Bool) -> EvSource? {
        let only = slots[0]
        guard only._withUnsafeGuaranteedRef(accept) else { return nil }
        only._withUnsafeGuaranteedRef { $0.signalledSlot = -1 }
        count = 0
        return only.takeRetainedValue()
    }

    private func grow() {
        let larger = UnsafeMutablePointer<Unmanaged<EvSource>>.allocate(capacity: capacity * 2)
        larger.moveInitialize(from: slots, count: count)
        slots.deallocate()
        slots = larger
        capacity *= 2
    }
}
