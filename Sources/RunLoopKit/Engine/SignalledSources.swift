/// A loop's signalled version-0 sources that have not performed yet (R33, R35), in no
/// particular order: each source knows its place (``EvSource/signalledSlot``), so joining and
/// leaving are O(1) with no hashing; the last one fills a place that is left. A source listed
/// while it also waited in the loop's ``SignalInbox`` may have performed from there: a later
/// perform step that looks at the list takes it off.
///
/// A plain buffer of retained references rather than an `Array`, because it is on every wake-up
/// cycle's path: no uniqueness or capacity check through a call on every append and removal, and
/// a removal hands the list's reference over instead of copying it. `@unchecked Sendable`: used
/// only under the owning loop's lock (hence the unchecked exclusivity too).
final class SignalledSources: @unchecked Sendable {
    /// No buffer (capacity 0) until a source is first listed: a loop whose sources are never
    /// signalled pays for none. Read through ``buffer`` once one is listed.
    @exclusivity(unchecked) private var slots: UnsafeMutablePointer<Unmanaged<EvSource>>?
    @exclusivity(unchecked) private var capacity = 0
    /// How many sources are listed.
    @exclusivity(unchecked) private(set) var count = 0

    deinit {
        guard let slots else { return }
        for slot in 0..<count { slots[slot].release() }
        slots.deallocate()
    }

    var isEmpty: Bool { count == 0 }

    /// The buffer, for a caller that knows a source is (or is being) listed, so that it exists:
    /// unchecked in optimised builds, so the lazy buffer adds no check to the list's paths.
    @inline(__always)
    private var buffer: UnsafeMutablePointer<Unmanaged<EvSource>> { slots.unsafelyUnwrapped }

    /// The source listed at `slot` (`0..<count`); the list keeps its reference.
    subscript(slot: Int) -> EvSource { buffer[slot].takeUnretainedValue() }

    /// Lists `source` unless it is listed already.
    func insert(_ source: EvSource) {
        guard source.signalledSlot < 0 else { return }
        if count == capacity { grow() }
        (buffer + count).initialize(to: .passRetained(source))
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
        let taken = buffer[slot]
        if slot < count {
            let last = buffer[count]
            buffer[slot] = last
            last._withUnsafeGuaranteedRef { $0.signalledSlot = slot }
        }
        return taken.takeRetainedValue()
    }

    /// What to do with a listed source.
    enum Decision {
        /// Take it off the list, to perform it.
        case take
        /// Leave it listed.
        case keep
        /// Take it off the list and let it go.
        case drop
    }

    /// With exactly one source listed: takes it off and returns the list's reference to it if
    /// `decide` (called with the source borrowed, no retain) says ``Decision/take``; `nil`
    /// otherwise, having left it or let it go as `decide` said.
    @inline(__always)
    func takeOnly(_ decide: (EvSource) -> Decision) -> EvSource? {
        let only = buffer[0]
        let decision = only._withUnsafeGuaranteedRef(decide)
        guard decision != .keep else { return nil }
        only._withUnsafeGuaranteedRef { $0.signalledSlot = -1 }
        count = 0
        guard decision == .take else {
            only.release()
            return nil
        }
        return only.takeRetainedValue()
    }

    /// Doubles the buffer, or makes it (four places) for the first source listed.
    private func grow() {
        let larger = UnsafeMutablePointer<Unmanaged<EvSource>>.allocate(capacity: max(4, capacity * 2))
        if let slots {
            larger.moveInitialize(from: slots, count: count)
            slots.deallocate()
        }
        slots = larger
        capacity = max(4, capacity * 2)
    }
}
