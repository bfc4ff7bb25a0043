// A keep-alive worker thread: one thread whose run loop sleeps until work arrives, instead of a
// thread per task — and, unlike Foundation's `RunLoop.run()`, which ignores stop (W13), one that
// really ends when stopped.
//
//     swift run KeepAliveWorker

import Foundation
import RunLoopKit

struct DecodeError: Error, CustomStringConvertible {
    let description = "corrupt packet"
}

func openDescriptors() -> Int {
    (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count) ?? -1
}

func residentKiB() -> Int {
    let statm = (try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8)) ?? ""
    let pages = statm.split(separator: " ").dropFirst().first.flatMap { Int($0) } ?? 0
    return pages * Int(sysconf(Int32(_SC_PAGESIZE))) / 1024
}

// 1. Start a worker: start() returns its run loop once the loop exists and waits for work.
let worker = EvWorkerThread(name: "net-worker")
let workerLoop = try worker.start()
print("1. worker started, state \(worker.state)")

// 2. Fire-and-forget work (execute) from any thread runs on the worker, in submission order.
for beat in 1...3 {
    try worker.execute {
        let onWorker = EvRunLoop.current === workerLoop
        print("2. heartbeat \(beat) sent from the worker thread: \(onWorker)")
    }
}

// 3. Wait-until-done work returns the closure's value or rethrows its error.
let checksum = try worker.submitAndWait { (1...100).reduce(0, +) }
print("3. checksum computed on the worker: \(checksum)")
do {
    try worker.submitAndWait { () throws -> Int in throw DecodeError() }
} catch {
    print("3. error rethrown to the caller: \(error)")
}

// 4. A timer on the worker's own loop works too: the thread is kept alive between items.
let fired = DispatchSemaphore(value: 0)
try worker.execute {
    EvRunLoop.current.add(EvTimer(after: .milliseconds(20)) { _ in
        print("4. a timer fired on the kept-alive worker")
        fired.signal()
    }, forMode: .default)
}
fired.wait()

// 5. stop() runs what was already submitted, then ends the thread (and joins it).
try worker.execute { print("5. last item, queued before stop, still runs") }
worker.stop()
print("5. worker stopped, state \(worker.state)")
do {
    try worker.execute { print("never printed") }
} catch {
    print("5. submitting after stop is an error, not a silent drop: \(error)")
}

// 6. Seed 004's trap, avoided: 10,000 workers created, used and stopped one after another
//    leave no descriptor and no memory behind.
func churn(_ count: Int) throws {
    for index in 0..<count {
        let worker = EvWorkerThread(stackSize: 256 << 10)
        try worker.start()
        _ = try worker.submitAndWait { index }
    }  // each worker is dropped here: that stops and joins it
}
try churn(1_000)  // warm-up: thread stacks and allocator reach their steady state
let (descriptorsBefore, memoryBefore) = (openDescriptors(), residentKiB())
try churn(10_000)
print("6. 10,000 workers later: open descriptors \(descriptorsBefore) -> \(openDescriptors()), resident \(memoryBefore) KiB -> \(residentKiB()) KiB")
