import CEpoll

/// One watched descriptor of a ``DescriptorSet``: its watchers, the file they were made for and
/// the state of its one-shot kernel entry.
struct DescriptorEntry {
    /// The watchers of this descriptor: token and the readiness each wants.
    var watchers: [(token: Int, events: Int32)] {
        didSet { wanted = Self.wanted(by: watchers, parked: parked) }
    }
    /// What the watchers that are not parked want together: the kernel is asked for no more,
    /// so a parked watcher's readiness does not wake a mode that watches the same descriptor.
    private var wanted: Int32
    var generation: UInt32
    /// The file the watchers were made for.
    var file: FileIdentity
    /// `EPERM` from epoll: not in the kernel set, ready at once.
    var alwaysReady = false
    /// Bit `i`: the readiness of `watchers[i]` was handed on and not yet taken for its handler
    /// (see ``DescriptorSet/taken(token:fd:verify:)``), so a report for it meanwhile tells the loop
    /// nothing new. Only the first 32 watchers have a bit; the others are always told.
    var pending: UInt32 = 0
    /// Bit `i`: `watchers[i]` is parked (see ``DescriptorSet/park(token:fd:)``). Only the first
    /// 32 watchers can be; the others are removed instead.
    var parked: UInt32 = 0 {
        didSet { wanted = Self.wanted(by: watchers, parked: parked) }
    }
    /// Re-armed since its last report, so the kernel reports it again. A report that leaves
    /// every watcher it is for pending is not re-armed: the entry rests, and the kernel,
    /// which would report it at every look until a handler takes it, looks no more.
    var armed = true
    /// Unarmed for parked watchers alone, or for a handler an outer run's iteration holds
    /// (``DescriptorSet/hold(fd:)``): it stays so until one of them is watched again, or
    /// the handler takes its readiness.
    var restsParked = false
    /// Re-arms checked against the file because the number is in ``DescriptorSet/mayLinger``.
    var lingerChecks: UInt32 = 0

    /// The bits of the `watchers` `readiness` is for (see ``pending``); all ones when one of
    /// them has no bit, and such a report never rests. Given the watchers alone, so that a
    /// report reads them in place instead of copying the entry.
    static func bits(of watchers: [(token: Int, events: Int32)], readyFor readiness: Int32) -> UInt32 {
        // The usual entry: one watcher.
        if watchers.count == 1 { return watchers[0].events & readiness != 0 ? 1 : 0 }
        var mask: UInt32 = 0
        for (index, watcher) in watchers.enumerated() where watcher.events & readiness != 0 {
            guard index < 32 else { return .max }
            mask |= 1 << UInt32(index)
        }
        return mask
    }

    /// Clears the pending and parked bits of the watcher at `index`, which leaves: the bits
    /// above it move down with their watchers.
    mutating func forgetWatcher(at index: Int) {
        guard index < 32 else { return }
        func removingBit(_ bits: UInt32) -> UInt32 {
            let below = bits & ((1 << UInt32(index)) &- 1)
            return below | (index < 31 ? (bits >> (UInt32(index) + 1)) << UInt32(index) : 0)
        }
        pending = removingBit(pending)
        parked = removingBit(parked)
    }

    func isParked(_ index: Int) -> Bool { Self.isParked(index, in: parked) }

    /// The ``pending`` bits of `count` watchers, at most 32: all of them.
    static func everyWatcher(_ count: Int) -> UInt32 {
        count < 32 ? (1 << UInt32(count)) &- 1 : .max
    }

    private static func isParked(_ index: Int, in parked: UInt32) -> Bool { index < 32 && parked & (1 << UInt32(index)) != 0 }

    /// How many watchers are not parked.
    var liveCount: Int { watchers.count - parked.nonzeroBitCount }

    init(watchers: [(token: Int, events: Int32)], generation: UInt32, file: FileIdentity) {
        self.watchers = watchers
        self.generation = generation
        self.file = file
        wanted = Self.wanted(by: watchers, parked: 0)
    }

    private static func wanted(by watchers: [(token: Int, events: Int32)], parked: UInt32) -> Int32 {
        var wanted: Int32 = 0
        for (index, watcher) in watchers.enumerated() where !isParked(index, in: parked) {
            wanted |= watcher.events
        }
        return wanted
    }

    var kernelMask: UInt32 {
        var mask = EPOLLONESHOT.rawValue
        if wanted & EvBackend.readable != 0 { mask |= EPOLLIN.rawValue }
        if wanted & EvBackend.writable != 0 { mask |= EPOLLOUT.rawValue }
        return mask
    }
}

/// The entries, indexed by descriptor number, in memory of the set's own: read and changed
/// in place, with no copy-on-write check (an array's costs one per change, and a read of an
/// entry through a function copies it, retaining its watchers). A slot is bounds-checked.
struct DescriptorEntryTable {
    private var base: UnsafeMutablePointer<DescriptorEntry?>?
    private(set) var count = 0

    subscript(index: Int) -> DescriptorEntry? {
        unsafeAddress {
            precondition(index >= 0 && index < count, "DescriptorSet: no slot \(index)")
            return UnsafePointer(base.unsafelyUnwrapped + index)
        }
        nonmutating unsafeMutableAddress {
            precondition(index >= 0 && index < count, "DescriptorSet: no slot \(index)")
            return base.unsafelyUnwrapped + index
        }
    }

    var indices: Range<Int> { 0..<count }

    /// Makes room for slot `index`, empty, and then some: numbers are reused lowest first.
    mutating func grow(toHold index: Int) {
        let newCount = max(index + 1, 2 * count, 16)
        let grown = UnsafeMutablePointer<DescriptorEntry?>.allocate(capacity: newCount)
        if let base {
            grown.moveInitialize(from: base, count: count)
            base.deallocate()
        }
        (grown + count).initialize(repeating: nil, count: newCount - count)
        base = grown
        count = newCount
    }

    func deallocate() {
        guard let base else { return }
        base.deinitialize(count: count)
        base.deallocate()
    }
}
