/// The modes an item is in: a short list that keeps the usual one or two modes inline, without a
/// heap allocation, because it is read and changed on every add, remove and cancel of an item.
///
/// A long list (an item in thousands of modes) also keeps a set of its modes, so that `contains`,
/// and with it adding, removing and invalidating such an item, costs O(1) per mode instead of
/// O(modes): invalidating a timer in 100,000 modes was quadratic.
struct ModeList: Sequence, Sendable, ExpressibleByArrayLiteral {
    private var first: EvRunLoop.Mode?
    private var second: EvRunLoop.Mode?
    private var more: [EvRunLoop.Mode] = []
    /// Every mode of `more`, once `more` is longer than ``indexThreshold`` (empty before).
    private var index: Set<EvRunLoop.Mode> = []
    private static let indexThreshold = 16

    init() {}

    init(arrayLiteral modes: EvRunLoop.Mode...) {
        for mode in modes { append(mode) }
    }

    init<S: Sequence>(_ modes: S) where S.Element == EvRunLoop.Mode {
        for mode in modes { append(mode) }
    }

    var isEmpty: Bool { first == nil }

    func contains(_ mode: EvRunLoop.Mode) -> Bool {
        if first == mode || second == mode { return true }
        if more.isEmpty { return false }
        return more.count > Self.indexThreshold ? index.contains(mode) : more.contains(mode)
    }

    /// Appends `mode` (the caller keeps the list free of duplicates).
    mutating func append(_ mode: EvRunLoop.Mode) {
        if first == nil { first = mode } else if second == nil { second = mode } else { appendToMore(mode) }
    }

    private mutating func appendToMore(_ mode: EvRunLoop.Mode) {
        more.append(mode)
        if more.count > Self.indexThreshold {
            if index.isEmpty { index = Set(more) } else { index.insert(mode) }
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
            case 0: return list.first
            case 1: return list.second
            default: return position - 2 < list.more.count ? list.more[position - 2] : nil
            }
        }
    }
}
