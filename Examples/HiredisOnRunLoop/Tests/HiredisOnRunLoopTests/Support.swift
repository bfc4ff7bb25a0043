import Foundation
import RedisServer
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

/// A redis-server for one test: started on 127.0.0.1 on a free port, persistence off, stopped
/// when the test's body returns.
func withRedisServer<T>(_ body: (RedisServer) throws -> T) throws -> T {
    let server = try RedisServer.start()
    defer { server.stop() }
    return try body(server)
}

/// A value handed between threads.
final class Shared<Value: Sendable>: Sendable {
    private let value: Mutex<Value>
    init(_ value: Value) { self.value = Mutex(value) }
    var get: Value { value.withLock { $0 } }
    func set(_ newValue: Value) { value.withLock { $0 = newValue } }
}
