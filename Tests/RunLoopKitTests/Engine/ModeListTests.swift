@testable import RunLoopKit
import Testing

/// ModeList, the list of modes each item keeps: the same answers whether the modes sit inline
/// (one or two) or in its indexed tail (R39: an item may be in any number of its loop's modes).
@Suite struct ModeListTests {
    private static func modes(_ count: Int, _ prefix: String) -> [EvRunLoop.Mode] {
        (0..<count).map { EvRunLoop.Mode("ModeListTests.\(prefix).\($0)") }
    }

    /// Past the inline two and through several growths of the tail's index (whose table starts
    /// at eight slots), every appended mode is found, in order, and no other mode is.
    @Test func aLongListFindsEveryModeItHoldsAndNoOther() {
        let held = Self.modes(1_000, "held")
        let other = Self.modes(1_000, "other")
        var list = ModeList()
        for (count, mode) in held.enumerated() {
            list.append(mode)
            #expect(list.contains(mode))
            #expect(!list.contains(other[count]))
        }
        #expect(Array(list) == held)
        #expect(held.allSatisfy(list.contains))
        #expect(!other.contains(where: list.contains))
    }

    /// Removing leaves the other modes, in order, still found; a copy taken before is unchanged
    /// (the tail is copied on write).
    @Test func removingKeepsTheRestAndLeavesCopiesAlone() {
        let all = Self.modes(50, "remove")
        var list = ModeList(all)
        let before = list
        let leaving = ModeList(all.enumerated().filter { $0.offset % 3 == 0 }.map(\.element))
        list.remove(leaving)
        let kept = all.enumerated().filter { $0.offset % 3 != 0 }.map(\.element)
        #expect(Array(list) == kept)
        #expect(kept.allSatisfy(list.contains))
        #expect(!leaving.contains(where: list.contains))
        #expect(Array(before) == all)
        #expect(all.allSatisfy(before.contains))
        list.append(all[0])
        #expect(list.contains(all[0]) && !before.contains(Self.modes(1, "absent")[0]))
    }
}
