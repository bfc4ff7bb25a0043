import Dispatch
import Foundation
import RunLoopKit
import Synchronization

/// A latch that one side opens and the other waits on, with a generous safety-net timeout.
final class Latch: Sendable {
    private let semaphore = DispatchSemaphore(value: 0)
    init() {}
    func open() { semaphore.signal() }
    /// False if `seconds` passed first (a safety net, never a synchronisation).
    func wait(timeout seconds: Double = 30) -> Bool {
        semaphore.wait(timeout: .now() + seconds) == .success
    }
}

/// Runs `body` with a fresh run loop on a new thread; `finished` opens when the body returned.
func startLoopThread(_ body: @escaping @Sendable (EvRunLoop) -> Void) -> (loop: EvRunLoop, finished: Latch) {
    let loop = Mutex<EvRunLoop?>(nil)
    let ready = Latch()
    let finished = Latch()
    Thread {
        loop.withLock { $0 = EvRunLoop.current }
        ready.open()
        body(EvRunLoop.current)
        finished.open()
    }.start()
    precondition(ready.wait(), "loop thread did not start")
    return (loop.withLock { $0! }, finished)
}

#if Logging
import Logging

/// A swift-log handler that keeps every record, for assertions.
struct CapturingLogHandler: LogHandler {
    struct Record: Sendable {
        let level: Logger.Level
        let message: String
        let metadata: Logger.Metadata
    }

    final class Store: Sendable {
        let records = Mutex<[Record]>([])
        var all: [Record] { records.withLock { $0 } }
    }

    let store: Store
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .trace

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        store.records.withLock {
            $0.append(Record(level: event.level, message: "\(event.message)", metadata: metadata.merging(event.metadata ?? [:]) { $1 }))
        }
    }
}
#endif

/// Whether `task` ends within `seconds`, with what it threw; if not, it is cancelled (a safety
/// net, never a timing).
func outcome<T: Sendable>(of task: Task<T, any Error>, within seconds: Int = 60) async -> (ended: Bool, error: (any Error)?) {
    await withTaskGroup(of: (Bool, (any Error)?).self) { group in
        group.addTask {
            do { _ = try await task.value; return (true, nil) } catch { return (true, error) }
        }
        group.addTask {
            try? await Task.sleep(for: .seconds(seconds))
            return (false, nil)
        }
        let first = await group.next()!
        if !first.0 { task.cancel() }
        group.cancelAll()
        return first
    }
}
