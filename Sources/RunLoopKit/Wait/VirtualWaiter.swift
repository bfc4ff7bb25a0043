#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A fake wait with a virtual clock, for testing the engine's timer rules without sleeping.
///
/// Time moves only when the loop sleeps with a deadline (``AdvancePolicy/toEachDeadline``: the
/// clock jumps to the deadline at once) or when a test moves it (``AdvancePolicy/manual``:
/// ``advance(by:)``). A sleep with no deadline blocks until a wake-up or a deadline moved from
/// another thread (R44), like the real wait. Version-1 watchers are recorded and never report,
/// and signals are not routed: a virtual loop is for timers, version-0 sources, observers and
/// blocks. A loop waits with one when made with ``EvRunLoop/init(isMain:waiter:)`` and adopted
/// by its thread (``ThreadRegistry/adopt(_:)``).
///
/// `@unchecked Sendable`: every field is reached under `mutex`.
final class VirtualWaiter: LoopWaiter, @unchecked Sendable {
    /// How the virtual clock moves.
    enum AdvancePolicy {
        /// A sleep with a deadline moves the clock to it and returns.
        case toEachDeadline
        /// Only ``advance(by:)`` moves the clock; a sleep waits for it.
        case manual
    }

    private let policy: AdvancePolicy
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let changed = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    private var clock: MonotonicTime
    private var requested = SleepDeadline.none
    private var planned = false
    private var asleep = false
    private var wakeRequested = false
    private var sleeps = 0
    private var polls = 0
    private var watchers: [Int: WatcherKind] = [:]
    /// Tokens of removed watchers, for the next ones (tokens stay small, as the protocol says).
    private var freeTokens: [Int] = []

    /// A clock that starts at `start` (the real clock's reading, by default, so that timers made
    /// with dates of the real clock are where they would be).
    init(startingAt start: MonotonicTime = .now(), policy: AdvancePolicy = .toEachDeadline) {
        clock = start
        self.policy = policy
        pthread_mutex_init(mutex, nil)
        pthread_cond_init(changed, nil)
    }

    deinit {
        pthread_cond_destroy(changed)
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
        changed.deallocate()
    }

    private func locked<Result>(_ body: () -> Result) -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return body()
    }

    /// The virtual clock's reading.
    func now() -> MonotonicTime { locked { clock } }

    /// The virtual clock's reading as an instant of the clock the public API speaks.
    var instant: ContinuousClock.Instant { now().instant }

    /// How many sleeps have ended so far.
    var sleepCount: Int { locked { sleeps } }

    /// How many polls (looks without sleeping) the loop has made so far.
    var pollCount: Int { locked { polls } }

    /// The deadline of the sleep planned or in progress, ``MonotonicTime/distantFuture`` if none.
    var plannedDeadline: MonotonicTime { locked { planned ? requested.date : .distantFuture } }

    /// The sleep planned or in progress, with its precision; `nil` if none.
    var plannedSleep: SleepDeadline? { locked { planned ? requested : nil } }

    /// Moves the clock on by `duration` (any thread); a sleep whose deadline it reaches ends.
    func advance(by duration: Duration) {
        locked {
            clock = clock.adding(duration)
            pthread_cond_broadcast(changed)
        }
    }

    /// Blocks the calling thread until the loop blocks in a sleep (after `sleepsBefore` sleeps
    /// have ended, so a test can wait for the next one).
    func waitUntilAsleep(afterSleeps sleepsBefore: Int = 0) {
        locked {
            while !(asleep && sleeps >= sleepsBefore) { pthread_cond_wait(changed, mutex) }
        }
    }

    func planSleep(_ deadline: SleepDeadline) {
        locked {
            requested = deadline
            planned = true
        }
    }

    func sleep() -> WakeReasons {
        locked {
            defer {
                planned = false
                asleep = false
                sleeps += 1
                pthread_cond_broadcast(changed)
            }
            while true {
                if wakeRequested {
                    wakeRequested = false
                    return .wakeUp
                }
                if requested.date != .distantFuture {
                    if policy == .toEachDeadline && clock < requested.date { clock = requested.date }
                    if clock >= requested.date { return .deadline }
                }
                if !asleep {
                    asleep = true
                    pthread_cond_broadcast(changed)
                }
                pthread_cond_wait(changed, mutex)
            }
        }
    }

    func poll() -> WakeReasons {
        locked {
            polls += 1
            guard wakeRequested else { return [] }
            wakeRequested = false
            return .wakeUp
        }
    }

    func bringDeadlineForward(to deadline: SleepDeadline) {
        movePlannedDeadline(to: deadline) { $0 < $1 }
    }

    func pushDeadlineBack(to deadline: SleepDeadline) {
        movePlannedDeadline(to: deadline) { $0 > $1 }
    }

    /// Moves the planned sleep's deadline to `deadline` when `replaces(its date, the planned one)`.
    private func movePlannedDeadline(to deadline: SleepDeadline, when replaces: (MonotonicTime, MonotonicTime) -> Bool) {
        locked {
            guard planned, replaces(deadline.date, requested.date) else { return }
            requested = deadline
            pthread_cond_broadcast(changed)
        }
    }

    var isSleepPlanned: Bool { locked { planned } }

    func wakeUp() {
        locked {
            wakeRequested = true
            pthread_cond_broadcast(changed)
        }
    }

    func destroy() {}

    func addWatcher(_ kind: WatcherKind) -> Int {
        locked {
            let token = freeTokens.popLast() ?? watchers.count + 1  // 1...count are all taken
            watchers[token] = kind
            return token
        }
    }

    func startWatcher(_ token: Int) {}
    func stopWatcher(_ token: Int) {}
    func parkWatcher(_ token: Int) {}
    func removeWatcher(_ token: Int) {
        locked {
            if watchers.removeValue(forKey: token) != nil { freeTokens.append(token) }
        }
    }
    var hasReady: Bool { false }
    func gatherReady() -> Bool { false }
    func takeReady(_ body: (_ token: Int, _ events: Int32) -> Void) {}
    func readinessTaken(_ token: Int, verify: Bool) -> Bool { true }
    func holdReadiness(_ token: Int) {}
    func rearmWatchers() {}
    func route(_ signal: Int32) {}
    func unroute(_ signal: Int32) {}
    func setSignal(_ signal: Int32, wakesLoop: Bool) {}
    func withLibraryLoop<Result, Failure: Error>(
        _ call: StaticString, _ body: (OpaquePointer) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        fatalError("\(call): a loop on the virtual wait has no libev loop")
    }
    func takeLibraryEvents() -> Bool { false }
    func runLibraryCallbacks() {}
    func watchMainQueue(_ watch: Bool) {}
    func peekMainQueueSignal() -> Bool { false }
    func takeMainQueueSignal() -> Bool { false }
    func drainMainQueue() {}
}
