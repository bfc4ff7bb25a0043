import TestSupport

/// The contains and next-timer-fire-date queries of random programs (C21, C84), drawn from a
/// stream of their own: a query changes nothing, so each program is what its seed made before
/// the queries existed, with queries in between (its tail cut to keep its length), unless an
/// invalidation is refused below.
///
/// Keeps clear of `KnownDifference.invalidatedItemIsNoCommonItem`: a source or observer asked
/// about with the pseudo-mode is never invalidated, and one invalidated is never asked so.
struct QueryGenerator {
    private var rng: SplitMix64
    private var askedAsCommon: Set<Int> = []
    private var invalidated: Set<Int> = []

    private static let modes = ["default", "default", "A", "B", "common", "common"]

    init(seed: UInt64) {
        rng = SplitMix64(seed: seed ^ 0x51_7565_7279)
    }

    /// A query in about one operation in fourteen (one in four in a timer's script, where a
    /// firing timer's date is asked), or nil. `timers` are the timer ids among `items`.
    mutating func query(items: [Int], timers: [Int], inTimersScript: Bool) -> Op? {
        guard Int.random(in: 0..<(inTimersScript ? 4 : 14), using: &rng) == 0 else { return nil }
        var mode = Self.modes.randomElement(using: &rng)!
        guard Bool.random(using: &rng), let id = items.randomElement(using: &rng) else {
            return .nextTimerFireDate(mode)
        }
        if mode == "common", !timers.contains(id) {
            if invalidated.contains(id) { mode = "default" } else { askedAsCommon.insert(id) }
        }
        return .contains(id, mode: mode)
    }

    /// Whether item `id` may be invalidated; if so, it counts as invalidated from now on.
    mutating func mayInvalidate(_ id: Int, isTimer: Bool) -> Bool {
        guard isTimer || !askedAsCommon.contains(id) else { return false }
        invalidated.insert(id)
        return true
    }
}
