import Foundation
import HTTPTestServer
import RunLoopKit
import Synchronization

/// Runs `body` on a new thread with that thread's run loop and returns its result once the
/// thread has exited, its loop torn down (a join waits for the thread's key destructors). A
/// body that hangs stops the test process after `seconds` with a message, rather than CI.
func onLoopThread<T: Sendable>(timeout seconds: Double = 120, _ body: @escaping @Sendable (EvRunLoop) -> T) -> T {
    let result = Mutex<T?>(nil)
    var thread = pthread_t()
    let work = Unmanaged.passRetained(ThreadWork { result.withLock { $0 = body(EvRunLoop.current) } }).toOpaque()
    precondition(pthread_create(&thread, nil, { context in
        Unmanaged<ThreadWork>.fromOpaque(context!).takeRetainedValue().body()
        return nil
    }, work) == 0)
    let joined = DispatchSemaphore(value: 0)
    let joiner = thread
    Thread {
        pthread_join(joiner, nil)
        joined.signal()
    }.start()
    guard joined.wait(timeout: .now() + seconds) == .success else {
        fatalError("loop thread did not finish within \(seconds) s")
    }
    return result.withLock { $0! }
}

/// What a new thread runs.
private final class ThreadWork: Sendable {
    let body: @Sendable () -> Void
    init(_ body: @escaping @Sendable () -> Void) { self.body = body }
}

/// An HTTP server for one test, serving `files` (name: size), stopped when `body` returns.
func withHTTPServer<T>(files: [String: Int], _ body: (HTTPTestServer) throws -> T) throws -> T {
    let server = try HTTPTestServer.start(files: files)
    defer { server.stop() }
    return try body(server)
}

/// Open descriptors of this process.
func openDescriptors() -> Set<Int32> {
    Set(((try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []).compactMap { Int32($0) })
}

/// What `/proc/self/fd/<fd>` links to ("socket:[1234]", "anon_inode:[eventpoll]"), "" if closed.
func fileName(_ fd: Int32) -> String {
    var link = [UInt8](repeating: 0, count: 256)
    let count = link.withUnsafeMutableBufferPointer { buffer in
        buffer.withMemoryRebound(to: CChar.self) { readlink("/proc/self/fd/\(fd)", $0.baseAddress!, 255) }
    }
    return count > 0 ? String(decoding: link[0..<count], as: UTF8.self) : ""
}
