/// R38: the version-1 sources of one mode that became ready, in the order they did, so the
/// version-1 step finds the one ready longest without looking at the others.
///
/// An entry is the source and the ``Source1State/readySequence`` it had when it became ready.
/// Entries are never taken out in place: one whose source was handled since (in another of its
/// modes, say) or became ready again under a newer sequence is stale, and is dropped when it
/// reaches the front or when stale entries pile up
/// (``append(_:sequence:readyCount:isLive:)``); a source that leaves the mode leaves its queue
/// (``remove(_:)``). Sequences only grow, so entries stay in order by them; a source that joins
/// the mode while ready goes in at its own sequence's place. Under the loop's lock.
struct ReadyQueue {
    /// A struct, not a tuple: emptying the array then destroys its entries with no generic
    /// value-witness calls.
    private struct Entry {
        let sequence: UInt64
        let core: EvSource1Core
    }

    private var entries: [Entry] = []
    /// Entries before `head` are gone; the array is shifted down when they are half of it.
    private var head = 0

    /// Adds a source that became ready under `sequence`. `readyCount` (how many of the loop's
    /// sources are ready) bounds the live entries: past twice that, stale ones are dropped, so
    /// a mode that does not run holds no more than its ready sources' worth.
    mutating func append(_ core: EvSource1Core, sequence: UInt64, readyCount: Int, isLive: (EvSource1Core, UInt64) -> Bool) {
        if let last = entries.last, last.sequence > sequence {
            let place = entries[head...].partitioningIndex { $0.sequence > sequence }
            entries.insert(Entry(sequence: sequence, core: core), at: place)
        } else {
            entries.append(Entry(sequence: sequence, core: core))
        }
        if entries.count - head > 2 * readyCount + 16 { dropStale(isLive) }
    }

    /// The live entry ready longest, with the stale entries before it dropped.
    mutating func first(isLive: (EvSource1Core, UInt64) -> Bool) -> (sequence: UInt64, core: EvSource1Core)? {
        hasLive(isLive: isLive) ? front : nil
    }

    /// Whether a live entry is queued, with the stale entries before it dropped. The source is
    /// lent to `isLive` unretained: its entry keeps it, and `isLive` does not change the queue.
    mutating func hasLive(isLive: (EvSource1Core, UInt64) -> Bool) -> Bool {
        while head < entries.count {
            let sequence = entries[head].sequence
            if Unmanaged.passUnretained(entries[head].core)._withUnsafeGuaranteedRef({ isLive($0, sequence) }) { return true }
            removeFirst()
        }
        return false
    }

    /// The front entry, live or stale.
    var front: (sequence: UInt64, core: EvSource1Core)? {
        head < entries.count ? (entries[head].sequence, entries[head].core) : nil
    }

    /// Drops the front entry (the one ``first(isLive:)`` returned, now handled, or a stale one).
    mutating func removeFirst() {
        head += 1
        if head == entries.count {
            entries.removeAll(keepingCapacity: true)
            head = 0
        } else if head >= 64 && head * 2 >= entries.count {
            entries.removeFirst(head)
            head = 0
        }
    }

    /// Drops `core`'s entries: it left the mode, and the loop keeps no reference to a source
    /// it no longer holds (its handler's captures go with it).
    mutating func remove(_ core: EvSource1Core) {
        guard entries[head...].contains(where: { $0.core === core }) else { return }
        entries = entries[head...].filter { $0.core !== core }
        head = 0
    }

    private mutating func dropStale(_ isLive: (EvSource1Core, UInt64) -> Bool) {
        entries = entries[head...].filter { isLive($0.core, $0.sequence) }
        head = 0
    }
}
