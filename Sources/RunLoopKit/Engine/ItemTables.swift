/// A loop's tables of common items (R12) and of version-1 sources (R37, R38), in an object of
/// their own made when the first entry is added: many loops have neither, and then carry one
/// pointer instead of seven fields.
///
/// ``LoopState`` reads and changes them through properties of the same names, as it did when
/// they were its own fields: reading with no tables gives an empty one; changing one makes the
/// tables first. A caller that only removes checks `isEmpty` first, so a removal from a loop
/// that has none makes nothing.
///
/// `@unchecked Sendable`: read and written only under the owning loop's lock, like the
/// ``LoopState`` that holds it (a loop's state is never copied, so the tables are never shared).
final class ItemTables: @unchecked Sendable {
    /// R12: items added to `.common`, in the order they were added.
    var commonTimers = CommonItems<EvTimer>()
    var commonSources = CommonItems<EvSource>()
    var commonObservers: [(id: ObjectIdentifier, observer: EvObserver)] = []
    /// Version-1 sources: all bound ones and those added to `.common` (R37).
    @exclusivity(unchecked) var source1s: [ObjectIdentifier: EvSource1Core] = [:]
    var commonSource1s = CommonItems<EvSource1Core>()
    /// The bound signal sources among ``source1s``: each watched in every mode (R37).
    var signalSource1s: [ObjectIdentifier: EvSource1Core] = [:]
    /// How many bound version-1 sources are ready and not yet handled (each mode lists its own
    /// in ``ModeState/readySources``, R38). Read on every pass of a loop with version-1 sources:
    /// the run time's exclusivity check would only repeat what the loop's lock guarantees (as
    /// for ``ModeState``'s fields).
    @exclusivity(unchecked) var readySource1Count = 0
    @exclusivity(unchecked) var readySequence: UInt64 = 0
    /// ``EvLibevSource``s bound here, in modes or not, until invalidated or the teardown.
    @exclusivity(unchecked) var libevSources: [ObjectIdentifier: EvSource1Core] = [:]
    /// When the libev libraries' events became ready (a ``readySequence`` value, R38), 0 when
    /// they are not: one ready version-1 source for all the loop's ``EvLibevSource``s.
    @exclusivity(unchecked) var libevReadySequence: UInt64 = 0
}

extension LoopState {
    /// ``tables``, made now if there were none.
    private mutating func madeTables() -> ItemTables {
        if let tables { return tables }
        let made = ItemTables()
        tables = made
        return made
    }

    var commonTimers: CommonItems<EvTimer> {
        get { tables?.commonTimers ?? CommonItems() }
        _modify { yield &madeTables().commonTimers }
    }

    var commonSources: CommonItems<EvSource> {
        get { tables?.commonSources ?? CommonItems() }
        _modify { yield &madeTables().commonSources }
    }

    var commonObservers: [(id: ObjectIdentifier, observer: EvObserver)] {
        get { tables?.commonObservers ?? [] }
        _modify { yield &madeTables().commonObservers }
    }

    var source1s: [ObjectIdentifier: EvSource1Core] {
        get { tables?.source1s ?? [:] }
        _modify { yield &madeTables().source1s }
    }

    var commonSource1s: CommonItems<EvSource1Core> {
        get { tables?.commonSource1s ?? CommonItems() }
        _modify { yield &madeTables().commonSource1s }
    }

    var signalSource1s: [ObjectIdentifier: EvSource1Core] {
        get { tables?.signalSource1s ?? [:] }
        _modify { yield &madeTables().signalSource1s }
    }

    var readySource1Count: Int {
        get { tables?.readySource1Count ?? 0 }
        _modify { yield &madeTables().readySource1Count }
    }

    var readySequence: UInt64 {
        get { tables?.readySequence ?? 0 }
        _modify { yield &madeTables().readySequence }
    }

    var libevSources: [ObjectIdentifier: EvSource1Core] {
        get { tables?.libevSources ?? [:] }
        _modify { yield &madeTables().libevSources }
    }

    var libevReadySequence: UInt64 {
        get { tables?.libevReadySequence ?? 0 }
        _modify { yield &madeTables().libevReadySequence }
    }
}

extension LoopState {
    /// Runs `body` with ``tables``, made now if there were none, borrowed: each property above
    /// retains and releases them, on every ready version-1 source's way. Tables, once made,
    /// live as long as the state.
    @inline(__always)
    mutating func withTables<Result>(_ body: (ItemTables) -> Result) -> Result {
        if tables == nil { tables = ItemTables() }
        return Unmanaged.passUnretained(tables.unsafelyUnwrapped)._withUnsafeGuaranteedRef(body)
    }

    /// Whether `timer` was added to `.common` (R12). Asked on every timer's removal, so it reads
    /// the tables in place: no empty table is made for a loop that has none.
    @inline(__always)
    func isCommonTimer(_ timer: EvTimer) -> Bool {
        guard let tables, !tables.commonTimers.isEmpty else { return false }
        return tables.commonTimers[ObjectIdentifier(timer)] != nil
    }

    /// Takes `timer` out of the common items if it is there (R14), as ``isCommonTimer(_:)`` reads.
    @inline(__always)
    func forgetCommonTimer(_ timer: EvTimer) {
        guard let tables, !tables.commonTimers.isEmpty else { return }
        tables.commonTimers.removeValue(forKey: ObjectIdentifier(timer))
    }
}
