// An async server program on RunLoopKit: a ServiceGroup (swift-service-lifecycle)
// runs on top of EvRunLoop.main through EvRunLoop.runMain, with
//   - a worker thread (EvWorkerThread is a Service: the group starts and stops it),
//   - a heartbeat timer on EvRunLoop.main that hands work to the worker each tick,
//   - a stall monitor on the main loop that reports through swift-log,
//   - graceful shutdown on SIGTERM, which the ServiceGroup owns (no EvSignalSource for it).
// It logs what happens to standard output and exits 0.
//
//     swift run --enable-all-traits AsyncMainService   # then: kill -TERM <pid>

#if Logging && ServiceLifecycle
import Foundation
import Logging
import RunLoopKit
import RunLoopKitLogging
import RunLoopKitServiceLifecycle
import ServiceLifecycle
import Synchronization

LoggingSystem.bootstrap(StreamLogHandler.standardOutput)  // flushed line by line

// README-SERVICE-BEGIN
/// A service that ticks a timer on the main run loop and hands work to a worker thread.
struct HeartbeatService: Service {
    let worker: EvWorkerThread
    let logger: Logger

    func run() async throws {
        let ticks = Mutex(0)
        let heartbeat = EvTimer(after: .milliseconds(20), interval: .milliseconds(20)) { [worker, logger] _ in
            let tick = ticks.withLock { $0 += 1; return $0 }
            try? worker.execute {  // runs on the worker's thread, in order
                if tick == 1 { logger.info("ready: first tick handled on the worker; send SIGTERM") }
            }
        }
        EvRunLoop.main.add(heartbeat, forMode: .common)
        try? await gracefulShutdown()  // until the group shuts down (here: on SIGTERM)
        heartbeat.invalidate()
        logger.info("heartbeat stopped", metadata: ["ticks": "\(ticks.withLock { $0 })"])
    }
}

let logger = Logger(label: "AsyncMainService")
let worker = EvWorkerThread(name: "service-worker")
let group = ServiceGroup(
    services: [worker, HeartbeatService(worker: worker, logger: logger)],
    gracefulShutdownSignals: [.sigterm],  // the group owns SIGTERM: no EvSignalSource for it
    logger: logger)
let stallMonitor = EvStallMonitor(loop: .main, logger: logger)  // stall reports as log records

// A synchronous main: runMain runs EvRunLoop.main on this thread until the body returns.
try EvRunLoop.runMain {
    try stallMonitor.start()
    try worker.start()  // before the group starts its services at once: no early tick finds it idle
    try await group.run()
    stallMonitor.stop()
    logger.info("service group finished", metadata: ["worker": "\(worker.state)"])
}
// README-SERVICE-END
logger.info("exit 0")
#else
print("AsyncMainService needs the package traits Logging and ServiceLifecycle: swift run --enable-all-traits AsyncMainService")
#endif
