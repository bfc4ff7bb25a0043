import Synchronization

/// A loop's one-place inbox for a signalled version-0 source: ``EvSource/signal()`` leaves the
/// source here without the loop's lock, and the loop's pass takes it without the loop's lock
/// either, when no other source is listed (the usual wake-up: one source signalled at a time).
/// A signal that finds the place taken lists its source on ``LoopState/signalled``, under the
/// loop's lock.
///
/// The place holds a retained reference. A source here is checked under its own lock when it is
/// taken (still signalled, valid, bound to this loop, in the running mode), so a source that
/// changed meanwhile is never performed by mistake; a source that leaves the loop is taken out
/// (``remove(_:)``), so the place never keeps it alive.
struct SignalInbox: ~Copyable {
    private let place = Atomic<UInt>(0)

    deinit {
        _ = take()
    }

    /// Whether a source waits here. Acquiring: pairs with ``post(_:)``.
    var isEmpty: Bool { place.load(ordering: .acquiring) == 0 }

    /// Leaves `source` here if the place is free; false, having done nothing, if it is not.
    func post(_ source: EvSource) -> Bool {
        guard place.load(ordering: .relaxed) == 0 else { return false }
        let reference = Unmanaged.passRetained(source)
        if place.compareExchange(expected: 0, desired: Self.bits(reference), ordering: .releasing).exchanged { return true }
        reference.release()
        return false
    }

    /// The source left here, with its reference; `nil` if none.
    func take() -> EvSource? {
        guard place.load(ordering: .relaxed) != 0 else { return nil }
        let bits = place.exchange(0, ordering: .acquiring)
        guard let pointer = UnsafeRawPointer(bitPattern: bits) else { return nil }
        return Unmanaged<EvSource>.fromOpaque(pointer).takeRetainedValue()
    }

    /// Takes `source` out if it is the one here (it is leaving the loop).
    func remove(_ source: EvSource) {
        let reference = Unmanaged.passUnretained(source)
        if place.compareExchange(expected: Self.bits(reference), desired: 0, ordering: .acquiring).exchanged {
            reference.release()
        }
    }

    private static func bits(_ reference: Unmanaged<EvSource>) -> UInt {
        UInt(bitPattern: reference.toOpaque())
    }
}
