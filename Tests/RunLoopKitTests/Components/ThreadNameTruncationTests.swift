import Foundation
import RunLoopKit
import Testing

/// Thread names keep 15 bytes: a longer name is cut at a character boundary, so that `ps`,
/// debuggers and stall reports show whole characters, never a broken UTF-8 sequence.
@Suite struct ThreadNameTruncationTests {
    /// The calling thread's name as the kernel keeps it, raw bytes.
    private static func currentThreadNameBytes() -> [UInt8] {
        let bytes = (try? Data(contentsOf: URL(fileURLWithPath: "/proc/thread-self/comm"))).map(Array.init) ?? []
        return bytes.last == 0x0A ? Array(bytes.dropLast()) : bytes
    }

    @Test func aWorkerNameLongerThan15BytesIsCutAtACharacterBoundary() throws {
        // "工作线程-" is 13 bytes; "网" (3 bytes) does not fit whole.
        let worker = EvWorkerThread(name: "工作线程-网络")
        try worker.start()
        let bytes = try worker.submitAndWait { Self.currentThreadNameBytes() }
        worker.stop()
        #expect(String(validating: bytes, as: UTF8.self) == "工作线程-")
    }
}
