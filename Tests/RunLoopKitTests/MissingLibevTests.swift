import Foundation
import Testing

/// A machine without libev's headers: the first error of a build says what to install. The
/// shim (which the benchmark's BenchLibev includes too) is compiled with clang twice: as it is,
/// and with no include path at all, where `<ev.h>` cannot be found.
@Suite struct MissingLibevTests {
    static let shim = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Sources/CLibev/shim.h").path

    /// clang's exit status and standard error for the shim, with `flags`.
    static func compileShim(_ flags: [String]) throws -> (status: Int32, errors: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["clang", "-fsyntax-only", "-x", "c"] + flags + [shim]
        let errors = Pipe()
        process.standardError = errors
        try process.run()
        let text = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return (process.terminationStatus, text)
    }

    @Test func withoutEvHTheFirstErrorNamesThePackageToInstall() throws {
        let (status, errors) = try Self.compileShim(["-nostdinc"])
        #expect(status != 0)
        let first = try #require(errors.split(separator: "\n").first { $0.contains("error:") })
        #expect(first.contains("shim.h"), "\(first)")
        #expect(first.contains("apt-get install libev-dev"), "\(first)")
        #expect(errors.components(separatedBy: "error:").count - 1 == 1, "one error, not a cascade:\n\(errors)")
    }

    @Test func withEvHTheShimCompilesCleanly() throws {
        let (status, errors) = try Self.compileShim([])
        #expect(status == 0, "\(errors)")
    }
}
