import Foundation

/// Runs one scenario of a harness program built next to the test bundle (`MainLoopHarness`,
/// `AsyncMainHarness`) as a child process, and returns its exit status, standard output and
/// standard error, once it has exited.
///
/// Some scenarios crash on purpose (a misuse that must stop the process). Swift's crash
/// backtracer would then run as a grandchild holding copies of the child's output descriptors —
/// under ASan for minutes — so it is disabled, and both outputs go to files read once the child
/// itself has exited: nothing here waits for an end-of-file that another process could hold back.
func runHarness(_ program: String, _ scenario: String, _ arguments: [String] = []) throws -> (status: Int32, output: String, errors: String) {
    let products = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
    let process = Process()
    process.executableURL = products.appendingPathComponent(program)
    process.arguments = [scenario] + arguments
    process.environment = ProcessInfo.processInfo.environment.merging(["SWIFT_BACKTRACE": "enable=no"]) { $1 }
    let folder = FileManager.default.temporaryDirectory
    let outputFile = folder.appendingPathComponent("harness-\(UUID().uuidString).out")
    let errorFile = folder.appendingPathComponent("harness-\(UUID().uuidString).err")
    defer { for file in [outputFile, errorFile] { try? FileManager.default.removeItem(at: file) } }
    // Close-on-exec: the child gets them as its standard output and error only; any other
    // process a parallel test starts meanwhile must not inherit them (it would count them
    // among its descriptors).
    let outputHandle = try createForWriting(outputFile)
    let errorHandle = try createForWriting(errorFile)
    defer { try? outputHandle.close(); try? errorHandle.close() }
    process.standardOutput = outputHandle
    process.standardError = errorHandle
    try process.run()
    process.waitUntilExit()
    return (process.terminationStatus, try contents(of: outputFile), try contents(of: errorFile))
}

/// A new empty file at `file`, open for writing with close-on-exec.
private func createForWriting(_ file: URL) throws -> FileHandle {
    let descriptor = open(file.path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
    guard descriptor >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
    return FileHandle(fileDescriptor: descriptor, closeOnDealloc: true)
}

/// A file's text, read through a `FileHandle`: `String(contentsOf:)` leaks its 4 KiB buffer on
/// an empty file (LeakSanitizer, `make test-asan`).
private func contents(of file: URL) throws -> String {
    let handle = try FileHandle(forReadingFrom: file)
    defer { try? handle.close() }
    return String(decoding: try handle.readToEnd() ?? Data(), as: UTF8.self)
}
