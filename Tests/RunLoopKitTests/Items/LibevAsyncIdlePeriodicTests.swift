import CLibev
import Foundation
import RunLoopKit
import Testing

/// `ev_async_send` is the one libev call a library may make from any thread (a library's worker
/// threads hand results back with it). Started on an ``EvLibevSource``'s loop, an `ev_async`
/// behaves as on a plain libev loop: a send ends the wait of a run whose mode holds the source,
/// and waits, like any of the libraries' events, while only other modes run (R37).
@Suite struct LibevAsyncTests {
    @Test func aSendFromAnotherThreadEndsTheWaitAndItsCallbackRuns() {
        let log = EventLog<String>()
        let result = onLoopThread { loop -> EvRunLoop.RunResult in
            let (source, async, sender) = startedAsync(on: loop) { log.append("async") }
            let sending = Thread {
                #expect(spinUntil { loop.isWaiting })
                sender.send()
            }
            sending.start()
            let result = loop.run(mode: .default, timeout: .seconds(30), returnAfterSourceHandled: true)
            source.withEventLoop { async.stop($0) }
            source.invalidate()
            return result
        }
        #expect(result == .handledSource)
        #expect(log.all == ["async"])
    }

    @Test func aSendWhileAnotherModeRunsWaitsForAModeWithTheSource() {
        let log = EventLog<String>()
        let results = onLoopThread { loop -> [EvRunLoop.RunResult] in
            let (source, async, sender) = startedAsync(on: loop) { log.append("async") }
            let other = EvRunLoop.Mode("other")
            // The other mode's run sleeps through the send, and ends by a wake-up sent after it.
            let stopper = EvSource { loop.stop() }
            loop.add(stopper, forMode: other)
            let sending = Thread {
                #expect(spinUntil { loop.isWaiting })
                sender.send()
                log.append("sent")
                stopper.signal()
                loop.wakeUp()
            }
            sending.start()
            let inOther = loop.run(mode: other, timeout: .seconds(30))
            log.append("other mode done")
            let inDefault = loop.run(mode: .default, timeout: .seconds(30), returnAfterSourceHandled: true)
            source.withEventLoop { async.stop($0) }
            source.invalidate()
            return [inOther, inDefault]
        }
        #expect(results == [.stopped, .handledSource])
        #expect(log.all == ["sent", "other mode done", "async"])
    }
}

/// An `ev_async` started on a new ``EvLibevSource`` in `loop`'s default mode (loop's thread),
/// and what another thread needs to send it.
private func startedAsync(on loop: EvRunLoop, _ onEvent: @escaping () -> Void) -> (EvLibevSource, LibraryWatcher, AsyncSender) {
    let source = EvLibevSource()
    loop.add(source, forMode: .default)
    let async = LibraryWatcher(.async, onEvent: onEvent)
    let sender = source.withEventLoop { evLoop in
        async.start(evLoop)
        return async.sender(evLoop)
    }
    return (source, async, sender)
}

/// Idle and periodic watchers, which a library starts on a plain libev loop too: an active
/// `ev_idle` keeps libev from blocking and runs whenever nothing else is pending; an
/// `ev_periodic` fires at its wall-clock dates.
@Suite struct LibevIdlePeriodicTests {
    @Test func anIdleWatcherRunsUntilItStopsItselfThenTheLoopSleeps() {
        let log = EventLog<String>()
        let result = onLoopThread { loop -> EvRunLoop.RunResult in
            let source = EvLibevSource()
            loop.add(source, forMode: .default)
            let count = Box(0)
            var idle: LibraryWatcher?
            idle = LibraryWatcher(.idle) {
                count.set(count.get + 1)
                log.append("idle \(count.get)")
                if count.get == 3 { source.withEventLoop { idle?.stop($0) } }
            }
            source.withEventLoop { idle?.start($0) }
            // Once the idle watcher stopped, only a wake-up ends the sleep.
            let stopper = EvSource { loop.stop() }
            loop.add(stopper, forMode: .default)
            let waker = Thread {
                #expect(spinUntil { count.get == 3 && loop.isWaiting })
                stopper.signal()
                loop.wakeUp()
            }
            waker.start()
            let result = loop.run(mode: .default, timeout: .seconds(30))
            source.invalidate()
            idle = nil
            return result
        }
        #expect(result == .stopped)
        #expect(log.all == ["idle 1", "idle 2", "idle 3"])
    }

    @Test func aPeriodicWatcherFiresAtItsDates() {
        let fired = Box<[Double]>([])
        let result = onLoopThread { loop -> EvRunLoop.RunResult in
            let source = EvLibevSource()
            loop.add(source, forMode: .default)
            let periodic = LibraryWatcher(.periodic(offset: 0, interval: 0.01)) {
                fired.set(fired.get + [ev_time()])
                if fired.get.count == 3 { loop.stop() }
            }
            source.withEventLoop { periodic.start($0) }
            let result = loop.run(mode: .default, timeout: .seconds(30))
            source.withEventLoop { periodic.stop($0) }
            source.invalidate()
            return result
        }
        #expect(result == .stopped)
        #expect(fired.get.count == 3)
        // Each fire is at or after a whole multiple of the interval, and the next is a later one.
        let slots = fired.get.map { ($0 / 0.01).rounded(.down) }
        #expect(zip(slots, slots.dropFirst()).allSatisfy { $0 < $1 })
    }
}
