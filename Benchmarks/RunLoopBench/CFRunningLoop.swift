import CCFRunLoop
import Dispatch
import Foundation
import Synchronization

/// The real CFRunLoop's side of `RunningLoop`: a CFRunLoop on its own thread, running the
/// default mode with no deadline (a finite timeout would make CF arm a libdispatch timer per
/// run), with one version-0 source.
///
/// `@unchecked Sendable`: `runLoop` and `source` are written once on the loop thread before
/// `ready` is signalled and only read afterwards; CF documents the calls made from other
/// threads (signal, wake-up, perform-block, stop) as thread-safe.
final class CFRunningLoop: TimerHoldingLoop, @unchecked Sendable {
    private let onSignal: @Sendable () -> Void
    private var runLoop: CFRunLoop?
    private var source: CFRunLoopSource?
    private let stopRequested = Atomic<Bool>(false)
    private let exited = DispatchSemaphore(value: 0)
    private var thread: BenchThread?

    init(onSignal: @escaping @Sendable () -> Void) {
        self.onSignal = onSignal
        let ready = DispatchSemaphore(value: 0)
        let me = UnsafeSendable(self)
        thread = BenchThread(cpu: Pinning.shared.loopCPU) { me.value.loopThreadMain(ready: ready) }
        ready.wait()
    }

    private func loopThreadMain(ready: DispatchSemaphore) {
        let loop = CFRunLoopGetCurrent().takeUnretainedValue()
        var context = CFRunLoopSourceContext(
            version: 0, info: Unmanaged.passUnretained(self).toOpaque(), retain: nil, release: nil,
            copyDescription: nil, equal: nil, hash: nil, schedule: nil, cancel: nil,
            perform: { info in
                Unmanaged<CFRunningLoop>.fromOpaque(info!).takeUnretainedValue().onSignal()
            })
        let source = CFRunLoopSourceCreate(nil, 0, &context).takeRetainedValue()
        CFRunLoopAddSource(loop, source, kCFRunLoopDefaultMode)
        runLoop = loop
        self.source = source
        ready.signal()
        while !stopRequested.load(ordering: .sequentiallyConsistent) {
            _ = CFRunLoopRunInMode(kCFRunLoopDefaultMode, 1e10, 0)
        }
        CFRunLoopSourceInvalidate(source)
        exited.signal()
    }

    func signal() {
        CFRunLoopSourceSignal(source)
        CFRunLoopWakeUp(runLoop)
    }

    func post(_ item: @escaping @Sendable () -> Void, count: Int) {
        // One block object for all posts; CF's Block_copy of it is then only a retain.
        let block: @convention(block) () -> Void = item
        let loop = runLoop
        for _ in 0..<count {
            CFRunLoopPerformBlock(loop, kCFRunLoopDefaultMode, block)
            CFRunLoopWakeUp(loop)
        }
    }

    /// Adding is thread-safe in CF; the loop retains the timer.
    func holdFarOffTimer() {
        let timer = CFRunLoopTimerCreate(nil, CFAbsoluteTimeGetCurrent() + 86_400, 0, 0, 0, { _, _ in }, nil).takeRetainedValue()
        CFRunLoopAddTimer(runLoop, timer, kCFRunLoopDefaultMode)
        CFRunLoopWakeUp(runLoop)  // CF arms the new deadline at its next sleep
    }

    func stop() {
        stopRequested.store(true, ordering: .sequentiallyConsistent)
        // A stop that lands between two runs is lost by CF; repeat until the thread is out.
        repeat { CFRunLoopStop(runLoop) } while exited.wait(timeout: .now() + .milliseconds(20)) == .timedOut
        thread?.join()
    }
}
