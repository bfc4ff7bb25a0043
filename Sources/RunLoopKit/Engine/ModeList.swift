/// The modes an item is in: a short list that keeps the usual one or two modes inline, without a
/// heap allocation, because it is read and changed on every add, remove and cancel of an item.
struct ModeList: Sequence, Sendable, ExpressibleByArrayLiteral {
    private var first: EvRunLoop.Mode?
    private var second: EvRunLoop.Mode?
    private var more: [EvRunLoop.Mode] = []

    init() {}

    init(arrayLiteral modes: EvRunLoop.Mode...) {
        for mode in modes { append(mode) }
    }

    init<S: Sequence>(_ modes: S) where S.Element == EvRunLoop.Mode {
        for mode in modes { append(mode) }
    }

    var isEmpty: Bool { first == nil }

    func contains(_ mode: EvRunLoop.Mode) -> Bool {
        first == mode || second == mode || (!more.isEmpty && more.contains(mode))
    }

    /// Appends `mode` (the caller keeps the list free of duplicates).
    mutating func append(_ mode: EvRunLoop.Mode) {
        if first == nil { first = mode } else if second == nil { second = mode } else { more.append(mode) }
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
            case 0: return list.first
            case 1: return list.second
            default: return position - 2 < list.more.count ? list.more[position - 2] : nil
            }
        }
    }
}
