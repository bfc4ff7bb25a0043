import Foundation

/// Starts a joinable POSIX thread running `body`; `name` (at most 15 bytes show) names it in
/// `/proc`, so a watchdog's thread dump says which thread is which.
@discardableResult
public func spawnThread(named name: String? = nil, _ body: @escaping @Sendable () -> Void) -> pthread_t {
    final class Work: Sendable {
        let name: String?
        let body: @Sendable () -> Void
        init(_ name: String?, _ body: @escaping @Sendable () -> Void) { self.name = name; self.body = body }
    }
    var thread = pthread_t()
    let context = Unmanaged.passRetained(Work(name, body)).toOpaque()
    let status = pthread_create(&thread, nil, { context in
        let work = Unmanaged<Work>.fromOpaque(context!).takeRetainedValue()
        if let name = work.name {
            // pthread_setname_np is not imported on Linux; this is what it writes.
            try? String(name.prefix(15)).write(toFile: "/proc/thread-self/comm", atomically: false, encoding: .utf8)
        }
        work.body()
        return nil
    }, context)
    precondition(status == 0, "pthread_create failed: \(status)")
    return thread
}
