import Foundation
import Testing

/// One list of differences from CF: every document that lists them holds exactly the
/// entries of `KnownDifference`, under the same short titles, so nothing differs silently and no
/// list drifts from the others. A document joins by adding a line to `listings`.
@Suite struct DifferenceListTests {
    /// A document that lists the differences: a Markdown file of the package and the heading of
    /// the section whose first table has the titles in its first column.
    struct Listing: CustomStringConvertible, Sendable {
        let path: String
        let heading: String
        var description: String { "\(path) § \(heading)" }
    }

    static let listings = [
        Listing(path: "README.md", heading: "## Where RunLoopKit differs from CF on purpose"),
        Listing(path: "Sources/RunLoopKit/RunLoopKit.docc/DifferencesFromCF.md", heading: "## The list"),
    ]

    @Test(arguments: listings)
    func theListingHoldsExactlyTheKnownDifferences(_ listing: Listing) throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let text = try String(contentsOf: root.appendingPathComponent(listing.path), encoding: .utf8)
        let titles = try #require(Self.firstColumn(ofTableUnder: listing.heading, in: text), "no table under \(listing)")
        let known = KnownDifference.allCases.map(\.title)
        #expect(Set(titles).count == titles.count, "\(listing) lists a title twice: \(titles)")
        #expect(Set(known).count == known.count, "KnownDifference has a title twice")
        let missing = known.filter { !titles.contains($0) }, extra = titles.filter { !known.contains($0) }
        #expect(missing.isEmpty, "\(listing) does not list: \(missing)")
        #expect(extra.isEmpty, "\(listing) lists what KnownDifference does not: \(extra)")
    }

    /// The first cells of the body rows of the first table after `heading` (header row and
    /// separator skipped), or nil when the heading or the table is missing.
    static func firstColumn(ofTableUnder heading: String, in text: String) -> [String]? {
        let lines = text.components(separatedBy: "\n")
        guard let start = lines.firstIndex(where: { $0.trimmingCharacters(in: .whitespaces) == heading }) else { return nil }
        let rest = lines[(start + 1)...]
        let level = heading.prefix { $0 == "#" }
        // The section ends at the next heading of the same or a higher level.
        let section = rest.prefix { line in
            let hashes = line.prefix { $0 == "#" }
            return hashes.isEmpty || hashes.count > level.count || !line.dropFirst(hashes.count).hasPrefix(" ")
        }
        guard let tableStart = section.firstIndex(where: { $0.hasPrefix("|") }) else { return nil }
        let table = section[tableStart...].prefix { $0.hasPrefix("|") }
        return table.dropFirst(2).map { row in
            row.split(separator: "|", omittingEmptySubsequences: false)[1].trimmingCharacters(in: .whitespaces)
        }
    }
}
