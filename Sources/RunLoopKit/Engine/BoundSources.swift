/// The version-0 sources bound to a loop, in any of its modes (for teardown's cancel callouts,
/// R4): the first one inline, any others in a dictionary.
///
/// Many loops have a single source (a wake-up source, a port), so the first is kept inline,
/// with no heap allocation. A source is listed exactly while it is bound to the loop (its `loop`
/// is the loop), so the loop inserts it only when it binds it and removes it only when it
/// unbinds it; neither looks for a duplicate.
struct BoundSources {
    private var first: EvSource?
    private var others: [ObjectIdentifier: EvSource] = [:]

    /// Lists `source`, which is not listed.
    mutating func insert(_ source: EvSource) {
        if first == nil {
            first = source
        } else {
            others[ObjectIdentifier(source)] = source
        }
    }

    /// Takes `source`, which is listed, off the list.
    mutating func remove(_ source: EvSource) {
        if first === source {
            first = nil
        } else {
            others.removeValue(forKey: ObjectIdentifier(source))
        }
    }

    /// Every listed source, in no particular order.
    var all: [EvSource] {
        guard let first else { return Array(others.values) }
        return [first] + others.values
    }
}
