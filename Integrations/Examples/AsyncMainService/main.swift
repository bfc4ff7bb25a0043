// An async server program on RunLoopKit (issue 12 §2): a ServiceGroup (swift-service-lifecycle)
// runs on top of EvRunLoop.main through EvRunLoop.runMain, with
//   - a worker thread (EvWorkerThread is a Service: the group starts and stops it),
//   - a heartbeat timer on EvRunLoop.main that asks the worker for work each tick,
//   - graceful shutdown on SIGTERM, which the ServiceGroup owns (no EvSignalSource for it).
// It prints what happens and exits 0.
//
//     swift run --package-path Integrations AsyncMainService   # then: kill -TERM <pid>

import Foundation
import Logging
import RunLoopKit
import RunLoopKitServiceLifecycle
import ServiceLifecycle
import Synchronization

/// Prints a line at once (unbuffered, also into a pipe).
func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

/// Ticks a timer on the main run loop; each tick hands work to the worker and waits for it.
struct HeartbeatService: Service {
    let worker: EvWorkerThread

    func run() async throws {
        let ticks = Mutex(0)
        let heartbeat = EvTimer(after: .milliseconds(20), interval: .milliseconds(20)) { [worker] _ in
            let tick = ticks.withLock { $0 += 1; return $0 }
            let onWorker = (try? worker.submitAndWait { !Thread.isMainThread }) ?? false
            if tick == 1 {
                say("heartbeat on main thread: \(Thread.isMainThread); worker ran off the main thread: \(onWorker)")
                say("ready: send SIGTERM to \(getpid())")
            }
        }
        EvRunLoop.main.add(heartbeat, forMode: .common)
        // Suspends until the ServiceGroup begins its graceful shutdown (here: on SIGTERM).
        try? await gracefulShutdown()
        heartbeat.invalidate()
        say("heartbeat: graceful shutdown after \(ticks.withLock { $0 }) ticks")
    }
}

let worker = EvWorkerThread(name: "service-worker")
let group = ServiceGroup(
    services: [worker, HeartbeatService(worker: worker)],
    gracefulShutdownSignals: [.sigterm],
    logger: Logger(label: "AsyncMainService"))

try EvRunLoop.runMain {
    say("service group: starting")
    try await group.run()
    say("service group: finished; worker \(worker.state)")
}
say("AsyncMainService: exit 0")
