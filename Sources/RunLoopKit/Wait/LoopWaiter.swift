/// What ended one wait of a ``LoopWaiter``.
struct WakeReasons: OptionSet, Sendable {
    let rawValue: UInt32
    /// ``LoopWaiter/wakeUp()`` was called.
    static let wakeUp = WakeReasons(rawValue: 1 << 0)
    /// The planned deadline passed.
    static let deadline = WakeReasons(rawValue: 1 << 1)
    /// A watcher of a version-1 source reported readiness (see ``LoopWaiter/takeReady(_:)``).
    static let watcher = WakeReasons(rawValue: 1 << 2)
    /// libdispatch's main queue has work (main loop only).
    static let mainQueue = WakeReasons(rawValue: 1 << 3)
}

/// What a wait asks of the run loop that owns it.
protocol LoopWaiterOwner: AnyObject {
    /// Runs `body`, libev libraries' callbacks that libev runs inside the wait (prepare and fork
    /// watchers, just before it blocks), as a callout of the loop's ``EvLibevSource``s.
    func libraryCalloutInWait(_ body: () -> Void)
}

/// When a planned sleep ends by itself: the running mode's next timer or the run's timeout,
/// whichever comes first (R22).
struct SleepDeadline: Equatable {
    /// ``MonotonicTime/distantFuture``: no deadline.
    var date: MonotonicTime
    /// The repeat interval in nanoseconds when `date` is a repeating timer's own fire date, else
    /// 0: a kernel timer armed with it repeats by itself, so a periodic timer costs no re-arm.
    var interval: Int64 = 0
    /// Whether `date` is a timer's fire date on a loop whose timers are
    /// ``EvRunLoop/TimerPrecision/precise``: the wait arms it early and waits out the rest awake.
    var precise = false

    static let none = SleepDeadline(date: .distantFuture)
}

/// The wait as the engine sees it: one object per loop that sleeps until a deadline, a wake-up
/// or a watched event, and owns the deadline, the clock and the version-1 watchers.
///
/// The real one is ``EvBackend`` (libev); ``VirtualWaiter`` is a fake with a virtual clock that
/// lets the timer rules be tested without sleeping. Its states, thread rules and lock order are
/// on the documentation page "The wait".
///
/// Thread rules: ``wakeUp()`` from any thread; ``planSleep(_:)`` and
/// ``bringDeadlineForward(to:)`` under the loop's lock (the second from any thread); the rest on
/// the loop's thread.
protocol LoopWaiter: AnyObject {
    /// The clock the engine compares timer dates with.
    func now() -> MonotonicTime
    /// Awake → planned: the next ``sleep()`` ends by `deadline` at the latest (loop's thread,
    /// loop's lock held, so that a timer added meanwhile from another thread sees the plan).
    func planSleep(_ deadline: SleepDeadline)
    /// Planned → asleep → awake: blocks until the plan's deadline, a wake-up or a watched event.
    func sleep() -> WakeReasons
    /// Looks without blocking (R20.9, R25): a wake-up made meanwhile, ready descriptors.
    func poll() -> WakeReasons
    /// R44: a timer of the running mode now falls before the planned deadline (any thread,
    /// loop's lock held): a planned or sleeping wait ends by `deadline` instead.
    func bringDeadlineForward(to deadline: SleepDeadline)
    /// The running mode's timer that the planned deadline was for left it (any thread, loop's
    /// lock held): a planned or sleeping wait sleeps on to `deadline` instead, if that is later.
    func pushDeadlineBack(to deadline: SleepDeadline)
    /// Whether a sleep is planned or in progress (any thread; exact with the loop's lock held).
    var isSleepPlanned: Bool { get }
    /// Ends the current or next ``sleep()`` at once (any thread).
    func wakeUp()
    /// Tears down: no call but ``wakeUp()`` (a no-op then) may follow.
    func destroy()

    /// A stopped watcher for a version-1 source; its token, from 1 up: a removed watcher's token
    /// goes to a later watcher, so tables indexed by token stay as long as the watchers at once.
    func addWatcher(_ kind: WatcherKind) -> Int
    func startWatcher(_ token: Int)
    func stopWatcher(_ token: Int)
    /// Stops a watcher while modes without its source run: as ``stopWatcher(_:)``, but a
    /// descriptor's kernel entry may stay, so that starting it again costs less (a mode switch).
    func parkWatcher(_ token: Int)
    func removeWatcher(_ token: Int)
    /// Whether a watcher reported readiness not yet taken with ``takeReady(_:)``.
    var hasReady: Bool { get }
    /// Brings the watchers' readiness up to date; returns whether any is to be taken (loop's
    /// thread, outside the loop's lock).
    func gatherReady() -> Bool
    /// Hands `body` each watcher that fired since the last call, with what fired, and forgets
    /// them; `body` must not call the waiter. No array is made for them.
    func takeReady(_ body: (_ token: Int, _ events: Int32) -> Void)
    /// The engine took `token`'s readiness for its source's handler, about to run: a watcher
    /// that stopped reporting while that readiness waited (a descriptor's) reports again. With
    /// `verify` (code ran on the loop's thread since the readiness came), returns whether a
    /// descriptor's number still names the file its source was made for; if not, the watcher
    /// failed and the handler must get the error alone.
    func readinessTaken(_ token: Int, verify: Bool) -> Bool
    /// The readiness `token`'s watcher reported waits for the handler of an outer run's
    /// iteration (C70): what stopped reporting for it stays so through the sleeps of runs nested
    /// meanwhile, until ``readinessTaken(_:verify:)``.
    func holdReadiness(_ token: Int)
    /// Readiness that waited for a handler went with a source that left its modes: every
    /// watcher reports again what is ready.
    func rearmWatchers()
    /// Routes a Unix signal to this loop from now on, or stops (any thread).
    func route(_ signal: Int32)
    func unroute(_ signal: Int32)
    /// Whether a delivery of a routed signal ends the wait: only while the running mode holds a
    /// source for it (R37). Loop's thread, loop's lock held.
    func setSignal(_ signal: Int32, wakesLoop: Bool)

    /// Runs `body`, library code, with the libev loop that libev libraries attach to
    /// (``EvLibevSource``), made at the first call; then checks what library code may not do.
    /// Loop's thread; stops with a message naming `call` when the loop cannot be made.
    func withLibraryLoop<Result, Failure: Error>(
        _ call: StaticString, _ body: (OpaquePointer) throws(Failure) -> Result
    ) throws(Failure) -> Result
    /// Whether the library loop's watchers have events the engine has not taken yet (loop's
    /// thread); clears that. ``hasReady`` is true while they do.
    func takeLibraryEvents() -> Bool
    /// Runs the callbacks of the library loop's pending watchers (loop's thread, the version-1
    /// step, R38), then checks what they may not do.
    func runLibraryCallbacks()

    /// Main loop only: whether to watch libdispatch's main queue in the next waits.
    func watchMainQueue(_ watch: Bool)
    /// Main loop only: whether the main queue signalled work; leaves the signal set.
    func peekMainQueueSignal() -> Bool
    /// Main loop only: whether the main queue signalled work; clears the signal.
    func takeMainQueueSignal() -> Bool
    /// Main loop only: runs the main queue's pending work.
    func drainMainQueue()
}

/// What a version-1 source's watcher watches.
enum WatcherKind {
    /// Readiness (``ReadinessBits``) of a caller's descriptor, for as long as it names `file`.
    case descriptor(fd: Int32, events: Int32, file: FileIdentity)
    /// A Unix signal routed to the loop.
    case signal(Int32)
    /// The watchers of libev libraries (``EvLibevSource``): all of them, in the library loop.
    case libraryLoop
}

/// Readiness bits reported by ``LoopWaiter/takeReady(_:)`` (libev's `EV_READ`, `EV_WRITE` and
/// `EV_ERROR`, so the libev layer passes them through as they are).
enum ReadinessBits {
    static let readable: Int32 = 0x01
    static let writable: Int32 = 0x02
    static let failed: Int32 = Int32(bitPattern: 0x8000_0000)
}
