import Dispatch
import Foundation
import RunLoopKit
import Testing

/// A process signal has one owner: libdispatch's signal sources — how
/// swift-service-lifecycle's ServiceGroup traps its shutdown signals — and RunLoopKit's signal
/// routing each install a process-wide handler that does not chain to the one it replaced.
@Suite struct SignalOwnerTests {
    /// Before, the source silently took SIGUSR2 away from the DispatchSource (whichever handler
    /// was installed last received every delivery); a ServiceGroup's graceful shutdown never began.
    @Test func aSignalSourceForASignalADispatchSourceTrapsStopsWithAMessage() async {
        let outcome = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let source = DispatchSource.makeSignalSource(signal: SIGUSR2, queue: .global())
            let registered = DispatchSemaphore(value: 0)
            source.setRegistrationHandler { registered.signal() }
            source.setEventHandler {}
            source.resume()
            registered.wait()
            onLoopThread { loop in
                let watcher = try? EvSignalSource(signal: SIGUSR2) {}
                loop.add(watcher!, forMode: .default)
            }
        }
        let errors = String(decoding: outcome?.standardErrorContent ?? [], as: UTF8.self)
        #expect(errors.contains("EvRunLoop.add(_:forMode:): signal \(SIGUSR2) is already trapped by a DispatchSource"))
        #expect(errors.contains("A signal has one owner"))
    }

    /// A handler of the program's own (not libdispatch's) is still taken over and put back.
    @Test func aSignalSourceTakesOverAPlainHandler() async {
        await #expect(processExitsWith: .success) {
            var own = sigaction()
            own.__sigaction_handler.sa_handler = { _ in }
            sigaction(SIGUSR2, &own, nil)
            onLoopThread { loop in
                let fired = Locked(false)
                let watcher = try! EvSignalSource(signal: SIGUSR2) { fired.set(true) }
                loop.add(watcher, forMode: .default)
                kill(getpid(), SIGUSR2)
                while !fired.get { loop.run(mode: .default, timeout: .seconds(10), returnAfterSourceHandled: true) }
                watcher.invalidate()
            }
        }
    }

    /// The other order: a DispatchSource traps the signal while a source has it (the source then
    /// receives nothing). Before, the source's end put back the disposition from before it, over
    /// libdispatch's handler, and the next delivery killed the process.
    @Test func aDispatchSourceThatTookTheSignalKeepsItWhenTheSourceGoes() async {
        await #expect(processExitsWith: .success) {
            onLoopThread { loop in
                let watcher = try! EvSignalSource(signal: SIGUSR1) {}
                loop.add(watcher, forMode: .default)
                let source = DispatchSource.makeSignalSource(signal: SIGUSR1, queue: .global())
                let registered = DispatchSemaphore(value: 0), delivered = DispatchSemaphore(value: 0)
                source.setRegistrationHandler { registered.signal() }
                source.setEventHandler { delivered.signal() }
                source.resume()
                registered.wait()
                watcher.invalidate()
                kill(getpid(), SIGUSR1)
                if delivered.wait(timeout: .now() + 30) != .success { exit(3) }
            }
        }
    }
}

/// A flag shared with a signal source's handler.
private final class Locked: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Bool
    init(_ value: Bool) { self.value = value }
    var get: Bool { lock.withLock { value } }
    func set(_ newValue: Bool) { lock.withLock { value = newValue } }
}
