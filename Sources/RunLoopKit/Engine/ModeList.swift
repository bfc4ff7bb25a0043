/// The modes an item is in: a short list that keeps the usual one or two modes inline, without a
/// heap allocation, because it is read and changed on every add, remove and cancel of an item.
///
/// Modes past the second live in a copy-on-write ``Tail`` that also keeps a set of them, so that
/// `contains`, and with it adding an item to, removing it from or invalidating it in thousands of
/// modes, costs O(1) per mode instead of O(modes): invalidating a timer in 100,000 modes was
/// quadratic. A list of one or two modes holds no tail, as it held an empty array before.
struct ModeList: Sequence, Sendable, ExpressibleByArrayLiteral {
    private var first: EvRunLoop.Mode?
    private var second: EvRunLoop.Mode?
    private var tail: Tail?

    /// The modes past the second, in order, and the same modes as a set.
    ///
    /// `@unchecked Sendable`: a tail is changed only while its ``ModeList`` holds the one
    /// reference to it (copy on write), so a tail another list can see is never changed.
    private final class Tail: @unchecked Sendable {
        var modes: [EvRunLoop.Mode]
        var index: Set<EvRunLoop.Mode>

        init(modes: [EvRunLoop.Mode], index: Set<EvRunLoop.Mode>) {
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

    var isEmpty: Bool { first == nil }

    func contains(_ mode: EvRunLoop.Mode) -> Bool {
        first == mode || second == mode || (tail?.index.contains(mode) ?? false)
    }

    /// Appends `mode` (the caller keeps the list free of duplicates).
    mutating func append(_ mode: EvRunLoop.Mode) {
        if first == nil {
            first = mode
        } else if second == nil {
            second = mode
        } else if isKnownUniquelyReferenced(&tail) {  // false while there is no tail
            tail!.modes.append(mode)
            tail!.index.insert(mode)
        } else {
            tail = Tail(modes: (tail?.modes ?? []) + [mode], index: (tail?.index ?? []).union([mode]))
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
            default:
                guard let tail = list.tail, position - 2 < tail.modes.count else { return nil }
                return tail.modes[position - 2]
            }
        }
    }
}
