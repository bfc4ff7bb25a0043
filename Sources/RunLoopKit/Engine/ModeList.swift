/// The modes an item is in: a short list that keeps the usual one or two modes inline, without a
/// heap allocation, because it is read and changed on every add, remove and cancel of an item.
///
/// Modes past the second live in a copy-on-write ``Tail`` that also keeps an index of them, so
/// that `contains`, and with it adding an item to, removing it from or invalidating it in
/// thousands of modes, costs O(1) per mode instead of O(modes), so that invalidating a timer in
/// many modes is not quadratic. A list of one or two modes holds no tail.
///
/// The inline two are kept as mode numbers (``EvRunLoop/Mode/id``), with ``none`` for an empty
/// place: a mode number is never negative, and a plain number is smaller than an optional mode,
/// which every source, timer and observer would carry twice.
struct ModeList: Sequence, Sendable, ExpressibleByArrayLiteral {
    private var first = ModeList.none
    private var second = ModeList.none
    private var tail: Tail?

    /// The number of an empty place.
    private static let none = -1

    /// The modes past the second, in order, and the same modes as an index.
    ///
    /// `@unchecked Sendable`: a tail is changed only while its ``ModeList`` holds the one
    /// reference to it (copy on write), so a tail another list can see is never changed. For the
    /// same reason the run time's exclusivity check on its fields would guard nothing.
    private final class Tail: @unchecked Sendable {
        @exclusivity(unchecked) var modes: [EvRunLoop.Mode]
        @exclusivity(unchecked) var index: ModeIndex

        init(modes: [EvRunLoop.Mode], index: ModeIndex) {
            self.modes = modes
            self.index = index
        }
    }

    init() {}

    init(arrayLiteral modes: EvRunLoop.Mode...) {
        for mode in modes { append(mode) }
    }

    init<S: Sequence>(_ modes: S) where S.Element == EvRunLoop.Mode {
        for mode in modes { append(mode) }
    }

    var isEmpty: Bool { first == Self.none }

    /// Whether `mode` is the list's one mode.
    func isOnly(_ mode: EvRunLoop.Mode) -> Bool { first == mode.id && second == Self.none }

    func contains(_ mode: EvRunLoop.Mode) -> Bool {
        first == mode.id || second == mode.id || (tail?.index.contains(mode) ?? false)
    }

    /// Appends `mode` (the caller keeps the list free of duplicates).
    mutating func append(_ mode: EvRunLoop.Mode) {
        if first == Self.none {
            first = mode.id
        } else if second == Self.none {
            second = mode.id
        } else if isKnownUniquelyReferenced(&tail) {  // false while there is no tail
            tail!.modes.append(mode)
            tail!.index.insert(mode)
        } else {
            var index = tail?.index ?? ModeIndex()
            index.insert(mode)
            tail = Tail(modes: (tail?.modes ?? []) + [mode], index: index)
        }
    }

    /// The modes of this list that satisfy `isIncluded`, in order.
    func selecting(_ isIncluded: (EvRunLoop.Mode) -> Bool) -> ModeList {
        var selected = ModeList()
        for mode in self where isIncluded(mode) { selected.append(mode) }
        return selected
    }

    /// Removes every mode that is in `modes`.
    mutating func remove(_ modes: ModeList) {
        self = selecting { !modes.contains($0) }
    }

    func makeIterator() -> Iterator { Iterator(list: self) }

    struct Iterator: IteratorProtocol {
        let list: ModeList
        var position = 0

        mutating func next() -> EvRunLoop.Mode? {
            defer { position += 1 }
            switch position {
            case 0: return list.first == ModeList.none ? nil : EvRunLoop.Mode(id: list.first)
            case 1: return list.second == ModeList.none ? nil : EvRunLoop.Mode(id: list.second)
            default:
                guard let tail = list.tail, position - 2 < tail.modes.count else { return nil }
                return tail.modes[position - 2]
            }
        }
    }
}

/// A set of modes for a long ``ModeList``: open addressing on the mode's number, which is already
/// unique, so a lookup costs a multiply and a probe or two, not a SipHash `Hasher` run per mode
/// on every add and invalidate. Modes are only ever inserted: a list that loses modes is rebuilt.
struct ModeIndex: Sendable {
    /// A mode's number plus one; zero marks an empty slot. The count is a power of two.
    private var slots: [Int] = []
    private var count = 0

    func contains(_ mode: EvRunLoop.Mode) -> Bool {
        guard !slots.isEmpty else { return false }
        let mask = slots.count - 1
        let wanted = mode.id &+ 1
        var slot = Self.home(of: mode.id, mask: mask)
        while true {
            let found = slots[slot]
            if found == wanted { return true }
            if found == 0 { return false }
            slot = (slot &+ 1) & mask
        }
    }

    /// Adds `mode` if it is not in the index.
    mutating func insert(_ mode: EvRunLoop.Mode) { insert(id: mode.id) }

    private mutating func insert(id: Int) {
        if (count + 1) * 4 > slots.count * 3 { grow() }
        let mask = slots.count - 1
        let wanted = id &+ 1
        var slot = Self.home(of: id, mask: mask)
        while true {
            let found = slots[slot]
            if found == wanted { return }
            if found == 0 { break }
            slot = (slot &+ 1) & mask
        }
        slots[slot] = wanted
        count += 1
    }

    /// Doubles the table (eight slots at first) and puts every mode back.
    private mutating func grow() {
        let old = slots
        slots = Array(repeating: 0, count: max(8, old.count * 2))
        count = 0
        for stored in old where stored != 0 { insert(id: stored - 1) }
    }

    /// Where `id` starts probing: Fibonacci hashing, so that consecutive numbers spread out.
    private static func home(of id: Int, mask: Int) -> Int {
        let mixed = UInt(bitPattern: id) &* 0x9E37_79B9_7F4A_7C15
        return Int(bitPattern: mixed ^ (mixed >> 32)) & mask
    }
}
