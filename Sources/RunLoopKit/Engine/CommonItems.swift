/// A loop's common items of one kind (R12): found by identity in O(1), and listed in the order
/// they were added, so that a mode made common later takes them in that order whatever the
/// process's hash seed (the order of their schedule callouts, and of equal timer dates, R49).
struct CommonItems<Item: AnyObject> {
    private var entries: [ObjectIdentifier: (order: UInt64, item: Item)] = [:]
    private var added: UInt64 = 0

    var isEmpty: Bool { entries.isEmpty }

    /// The item with identity `id`; setting one that is there already keeps its place.
    subscript(id: ObjectIdentifier) -> Item? {
        get { entries[id]?.item }
        set {
            guard let newValue else {
                entries.removeValue(forKey: id)
                return
            }
            guard entries[id] == nil else { return }
            added &+= 1
            entries[id] = (added, newValue)
        }
    }

    @discardableResult
    mutating func removeValue(forKey id: ObjectIdentifier) -> Item? {
        entries.removeValue(forKey: id)?.item
    }

    /// Every item, in the order it was added (a sort: made only when a mode becomes common and at
    /// the teardown).
    var values: [Item] {
        entries.values.sorted { $0.order < $1.order }.map(\.item)
    }
}
