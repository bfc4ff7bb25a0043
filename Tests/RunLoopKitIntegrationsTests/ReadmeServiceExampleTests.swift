import Foundation
import Testing

/// The README's async-main service block is the AsyncMainService example's marked region, word
/// for word (AsyncMainServiceTests runs that program).
@Suite struct ReadmeServiceExampleTests {
    @Test func readmeShowsTheAsyncMainServiceExample() throws {
        let root = URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let readme = try String(contentsOf: root.appendingPathComponent("README.md"), encoding: .utf8)
        let example = try String(contentsOf: root.appendingPathComponent("Examples/AsyncMainService/main.swift"), encoding: .utf8)
        let begin = try #require(example.range(of: "// README-SERVICE-BEGIN\n"))
        let end = try #require(example.range(of: "// README-SERVICE-END"))
        #expect(readme.contains("```swift\n" + example[begin.upperBound..<end.lowerBound] + "```"))
    }
}
