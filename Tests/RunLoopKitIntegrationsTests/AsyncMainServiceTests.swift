#if Logging && ServiceLifecycle
import Foundation
import Synchronization
import Testing

/// The AsyncMainService example: an async ServiceGroup program on EvRunLoop.main,
/// run as a child process, shut down gracefully by SIGTERM, exits 0.
@Suite struct AsyncMainServiceTests {
    @Test func sigtermShutsTheServiceGroupDownGracefullyAndTheProgramExitsZero() throws {
        // Built next to the test bundle, in the same products folder.
        let products = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
        let process = Process()
        process.executableURL = products.appendingPathComponent("AsyncMainService")
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        // Reads lines as they come; opens `ready` at the line that says SIGTERM may be sent.
        let lines = Mutex<[String]>([])
        let ready = Latch()
        let closed = Latch()
        Thread {
            var pending = Data()
            while true {
                let chunk = output.fileHandleForReading.availableData
                if chunk.isEmpty { break }
                pending.append(chunk)
                while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                    let line = String(decoding: pending[..<newline], as: UTF8.self)
                    pending.removeSubrange(...newline)
                    lines.withLock { $0.append(line) }
                    if line.contains("ready: first tick handled on the worker") { ready.open() }
                }
            }
            closed.open()
        }.start()
        let becameReady = ready.wait(timeout: 60)
        #expect(becameReady, "no ready line: \(lines.withLock { $0 })")
        kill(process.processIdentifier, becameReady ? SIGTERM : SIGKILL)
        #expect(closed.wait(timeout: 60))
        process.waitUntilExit()
        #expect(process.terminationReason == .exit)
        #expect(process.terminationStatus == 0)
        let printed = lines.withLock { $0 }
        // In this order: ready, the heartbeat's graceful shutdown, the group's end, the exit.
        let expected = [["ready: first tick handled on the worker"], ["heartbeat stopped", "ticks="], ["service group finished", "worker=stopped"], ["exit 0"]]
        let found = expected.map { parts in printed.firstIndex { line in parts.allSatisfy { line.contains($0) } } }
        #expect(found.allSatisfy { $0 != nil }, "\(printed)")
        #expect(found.compactMap { $0 } == found.compactMap { $0 }.sorted(), "\(printed)")
        #expect(printed.last?.hasSuffix("exit 0") == true)
    }
}
#endif
