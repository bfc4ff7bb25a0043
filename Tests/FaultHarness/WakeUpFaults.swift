// Wake-ups and signals that survive failed writes, and EINTR everywhere.
import Dispatch
import FaultInjection
import Foundation
import RunLoopKit
import Synchronization

/// A port message sent from another thread while that thread's `write` to the loop's eventfd
/// fails (and the loop's `read` of it too) is delivered: the wake-up is retried, not lost.
func wakeUpSurvivesFailedWrites(_ writeSpec: String, _ readSpec: String) {
    let received = Mutex<[Int]>([])
    let ready = DispatchSemaphore(value: 0)
    let loopBox = Mutex<EvRunLoop?>(nil)
    let port = EvMessagePort<Int> { value in received.withLock { $0.append(value) } }
    let finished = DispatchSemaphore(value: 0)
    Thread {
        let loop = EvRunLoop.current
        loop.add(port, forMode: .default)
        loopBox.withLock { $0 = loop }
        ready.signal()
        arm(readSpec + "@thread")
        run(loop, for: 5) { received.withLock { $0.count } == 100 }
        runloopkit_faults_disarm()
        finished.signal()
    }.start()
    ready.wait()
    let loop = loopBox.withLock { $0! }
    for value in 0..<100 {
        while !loop.isWaiting { sched_yield() }  // the loop sleeps: the send must write the eventfd
        arm(writeSpec + "@thread")
        do { try port.send(value) } catch { fail("send: \(error)") }
    }
    runloopkit_faults_disarm()
    finished.wait()
    let got = received.withLock { $0 }
    guard got == Array(0..<100) else { fail("\(writeSpec): delivered \(got.count) of 100") }
    print("\(writeSpec) / \(readSpec): 100 of 100 delivered")
}

/// A signal whose handler's eventfd write fails is still handled.
func signalSurvivesFailedWrites() {
    let handled = Mutex(0)
    let result = onNewThread { () -> EvRunLoop.RunResult in
        let loop = EvRunLoop.current
        let source = try! EvSignalSource(signal: SIGUSR1) {
            handled.withLock { $0 += 1 }
            EvRunLoop.current.stop()
        }
        loop.add(source, forMode: .default)
        let trigger = EvTimer(after: .milliseconds(20)) { _ in
            // From another thread, once this loop sleeps: the handler's write fails three times.
            Thread {
                while !loop.isWaiting { sched_yield() }
                arm("write:1:ENOMEM:3")
                kill(getpid(), SIGUSR1)
            }.start()
        }
        loop.add(trigger, forMode: .default)
        let result = loop.run(mode: .default, timeout: .seconds(5))
        runloopkit_faults_disarm()
        source.invalidate()
        return result
    }
    guard result == .stopped, handled.withLock({ $0 }) == 1 else { fail("signal: run \(result), handled \(handled.withLock { $0 })") }
    print("signal with failing writes: handled")
}

/// Every wrapped call on the loop's thread fails with EINTR every other time while timers,
/// port messages, a signal and a pipe keep the loop busy: everything arrives exactly once.
func interruptedEverywhere() {
    let received = Mutex<[Int]>([])
    let ticks = Mutex(0)
    let signals = Mutex(0)
    let bytes = Mutex(0)
    let port = EvMessagePort<Int> { value in received.withLock { $0.append(value) } }
    var fds: [Int32] = [0, 0]
    guard pipe(&fds) == 0 else { fail("pipe") }
    let readEnd = fds[0], writeEnd = fds[1]
    let ready = DispatchSemaphore(value: 0)
    let finished = DispatchSemaphore(value: 0)
    let spec = ["epoll_ctl", "epoll_wait", "read", "write", "timerfd_settime"].map { "\($0):1:EINTR:0:2@thread" }.joined(separator: ";")
    Thread {
        let loop = EvRunLoop.current
        loop.add(port, forMode: .default)
        loop.add(EvTimer(after: .milliseconds(5), interval: .milliseconds(5)) { _ in ticks.withLock { $0 += 1 } }, forMode: .default)
        let signalSource = try! EvSignalSource(signal: SIGUSR2) { signals.withLock { $0 += 1 } }
        loop.add(signalSource, forMode: .default)
        let pipeSource = try! EvFileDescriptorSource(fileDescriptor: readEnd, events: .readable) { _ in
            var byte: UInt8 = 0
            var count = -1
            repeat { count = read(readEnd, &byte, 1) } while count < 0 && errno == EINTR
            if count == 1 { bytes.withLock { $0 += 1 } }
        }
        loop.add(pipeSource, forMode: .default)
        ready.signal()
        arm(spec)
        run(loop, for: 10) {
            received.withLock { $0.count } == 1000 && bytes.withLock { $0 } == 20 && signals.withLock { $0 } >= 1 && ticks.withLock { $0 } >= 20
        }
        runloopkit_faults_disarm()
        signalSource.invalidate()
        pipeSource.invalidate()
        finished.signal()
    }.start()
    ready.wait()
    for value in 0..<1000 {
        do { try port.send(value) } catch { fail("send: \(error)") }
        if value % 50 == 0 {
            var byte: UInt8 = 1
            while write(writeEnd, &byte, 1) < 0 && errno == EINTR {}
        }
    }
    kill(getpid(), SIGUSR2)
    finished.wait()
    close(readEnd)
    close(writeEnd)
    let got = received.withLock { $0 }
    guard got == Array(0..<1000) else { fail("EINTR: messages \(got.count) of 1000, in order: \(got == got.sorted())") }
    guard bytes.withLock({ $0 }) == 20 else { fail("EINTR: pipe bytes \(bytes.withLock { $0 }) of 20") }
    guard signals.withLock({ $0 }) >= 1 else { fail("EINTR: the signal was lost") }
    guard ticks.withLock({ $0 }) >= 20 else { fail("EINTR: \(ticks.withLock { $0 }) ticks") }
    print("EINTR every other call: all delivered once")
}
