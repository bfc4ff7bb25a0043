import Foundation
import Testing

/// The documentation stays whole: every rule number cited anywhere in the repository is defined
/// on the DocC pages (`Sources/RunLoopKit/RunLoopKit.docc`), the README links only to files in
/// the repository, and the README and the DocC landing page show the same layout.
@Suite struct DocumentationTests {
    static let root = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let catalogue = root.appendingPathComponent("Sources/RunLoopKit/RunLoopKit.docc")

    /// What is scanned for citations: the code, the tests, the examples, the nested benchmark
    /// package, the README, the Makefile and CI's script (the DocC pages themselves included).
    static let scannedRoots = ["Sources", "Tests", "Examples", "Benchmarks", ".ci", "README.md", "Makefile"]

    /// A rule number as cited (R27, R20.7; C- and W-numbers alike), not part of a longer word (SIGUSR1).
    static let citation = try! NSRegularExpression(pattern: #"(?<![A-Za-z0-9])([RCW][0-9]+(?:\.[0-9]+)?)(?![0-9])"#)
    /// A rule defined on a DocC page: a list item that starts with its number in bold.
    static let definition = try! NSRegularExpression(
        pattern: #"^[ \t]*(?:[-*]|[0-9]+\.)[ \t]+\*\*([RCW][0-9]+(?:\.[0-9]+)?)\*\*"#, options: [.anchorsMatchLines])

    struct Citation: CustomStringConvertible {
        let rule: String
        let file: String
        let line: Int
        var description: String { "\(rule) in \(file):\(line)" }
    }

    /// Every rule defined on the DocC pages, with the page that defines it.
    static func definedRules() throws -> [String: [String]] {
        var defined: [String: [String]] = [:]
        for page in try markdownPages() {
            let text = try String(contentsOf: page, encoding: .utf8)
            for match in definition.matches(in: text, range: NSRange(text.startIndex..., in: text)) {
                let rule = String(text[Range(match.range(at: 1), in: text)!])
                defined[rule, default: []].append(page.lastPathComponent)
            }
        }
        return defined
    }

    static func markdownPages() throws -> [URL] {
        try FileManager.default.contentsOfDirectory(at: catalogue, includingPropertiesForKeys: nil)
            .filter { $0.pathExtension == "md" }
    }

    /// Every text file under the scanned roots, leaving out build folders.
    static func scannedFiles() -> [URL] {
        var files: [URL] = []
        for name in scannedRoots {
            let url = root.appendingPathComponent(name)
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory) else { continue }
            guard isDirectory.boolValue else {
                files.append(url)
                continue
            }
            let walker = FileManager.default.enumerator(at: url, includingPropertiesForKeys: [.isDirectoryKey])
            while let item = walker?.nextObject() as? URL {
                let isFolder = (try? item.resourceValues(forKeys: [.isDirectoryKey]).isDirectory) ?? false
                if isFolder {
                    if item.lastPathComponent.hasPrefix(".build") || item.lastPathComponent == ".swiftpm" { walker?.skipDescendants() }
                } else {
                    files.append(item)
                }
            }
        }
        return files
    }

    static func citations(in file: URL) -> [Citation] {
        guard let data = try? Data(contentsOf: file), let text = String(data: data, encoding: .utf8) else { return [] }
        let relative = String(file.path.dropFirst(root.path.count + 1))
        var found: [Citation] = []
        for (index, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = String(line)
            for match in citation.matches(in: line, range: NSRange(line.startIndex..., in: line)) {
                found.append(Citation(rule: String(line[Range(match.range(at: 1), in: line)!]), file: relative, line: index + 1))
            }
        }
        return found
    }

    @Test func everyCitedRuleNumberIsDefinedOnTheDocCPages() throws {
        let defined = try Self.definedRules()
        let files = Self.scannedFiles()
        #expect(files.count > 100, "the scan found the repository's files")
        let citations = files.flatMap(Self.citations(in:))
        #expect(citations.contains { $0.rule == "R27" }, "the scan finds citations")
        let undefined = citations.filter { defined[$0.rule] == nil }
        #expect(
            undefined.isEmpty,
            """
            Rule numbers cited but defined on no page of Sources/RunLoopKit/RunLoopKit.docc (R-rules and \
            C-rules in TheRules.md, as a list item starting with the number in bold, stated in the \
            project's words):
            \(undefined.map { "  \($0)" }.joined(separator: "\n"))
            """)
    }

    @Test func eachRuleIsDefinedOnceAndR1ToR60AllAre() throws {
        let defined = try Self.definedRules()
        let twice = defined.filter { $0.value.count > 1 }.keys.sorted()
        #expect(twice.isEmpty, "defined more than once: \(twice)")
        let missing = (1...60).map { "R\($0)" }.filter { defined[$0] == nil }
        #expect(missing.isEmpty, "R-rules missing from TheRules.md: \(missing)")
        #expect(!defined.keys.contains { $0.hasPrefix("R") && Int($0.dropFirst().prefix { $0.isNumber })! > 60 }, "no new R-numbers")
    }

    /// A reader of a fresh clone can follow every link: none leaves the repository.
    @Test func theReadmeLinksOnlyToFilesInTheRepository() throws {
        let readme = try String(contentsOf: Self.root.appendingPathComponent("README.md"), encoding: .utf8)
        let link = try NSRegularExpression(pattern: #"\]\(([^)\s]+)\)"#)
        var targets: [String] = []
        for match in link.matches(in: readme, range: NSRange(readme.startIndex..., in: readme)) {
            targets.append(String(readme[Range(match.range(at: 1), in: readme)!]))
        }
        #expect(!targets.isEmpty)
        for target in targets where !target.hasPrefix("#") {
            #expect(!target.contains("://"), "README links outside the repository: \(target)")
            let path = String(target.prefix { $0 != "#" })
            let resolved = Self.root.appendingPathComponent(path).standardizedFileURL.path
            #expect(resolved.hasPrefix(Self.root.standardizedFileURL.path + "/"), "README links outside the repository: \(target)")
            #expect(FileManager.default.fileExists(atPath: resolved), "README links to a missing file: \(target)")
        }
    }

    /// The README's Layout section and the DocC landing page draw the same picture.
    @Test func theReadmeAndTheLandingPageShowTheSameLayout() throws {
        let readme = try String(contentsOf: Self.root.appendingPathComponent("README.md"), encoding: .utf8)
        let landing = try String(contentsOf: Self.catalogue.appendingPathComponent("RunLoopKit.md"), encoding: .utf8)
        let inReadme = try #require(Self.codeBlock(after: "## Layout", in: readme))
        let onLanding = try #require(Self.codeBlock(after: "### How the code is laid out", in: landing))
        #expect(
            inReadme == onLanding,
            "README.md's Layout block and the one under \"How the code is laid out\" in RunLoopKit.docc/RunLoopKit.md differ: change both")
        // The picture names every folder of the library and of the behaviour tests.
        for folder in try FileManager.default.contentsOfDirectory(atPath: Self.root.appendingPathComponent("Sources/RunLoopKit").path).sorted() {
            #expect(inReadme.contains("  \(folder)/"), "the layout leaves out Sources/RunLoopKit/\(folder)")
        }
    }

    /// The first fenced block after `heading`.
    static func codeBlock(after heading: String, in text: String) -> String? {
        guard let start = text.range(of: "\n\(heading)\n") else { return nil }
        guard let open = text.range(of: "```\n", range: start.upperBound..<text.endIndex) else { return nil }
        guard let close = text.range(of: "\n```", range: open.upperBound..<text.endIndex) else { return nil }
        return String(text[open.upperBound..<close.lowerBound])
    }
}
