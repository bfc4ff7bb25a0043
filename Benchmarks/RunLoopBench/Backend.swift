/// The run loops measured side by side. Every scenario drives each of them through the same
/// small protocol (`Backend`), implemented once per backend in its own file.
enum BackendID: String, CaseIterable, Codable, Sendable, Comparable {
    /// RunLoopKit's `EvRunLoop`: the library under test, in its default timer precision.
    case runloopkit
    /// RunLoopKit with `EvRunLoop.timerPrecision = .precise` (timer scenarios only).
    case runloopkitPrecise = "runloopkit-precise"
    /// libev used directly through CLibev (epoll): the floor of this design.
    case libev
    /// libev with EVBACKEND_IOURING, where the kernel allows it (timer scenario only).
    case libevIOURing = "libev-uring"
    /// The real CFRunLoop inside Swift's Foundation on Linux.
    case cf
    /// SwiftNIO's event loop (a one-thread `MultiThreadedEventLoopGroup`): a peer, not a
    /// `Backend` (see `Peers`).
    case nio
    /// A libdispatch serial queue: a peer, not a `Backend` (see `Peers`).
    case dispatch
    /// Not a run loop: a plain (default) actor of the Swift runtime, the baseline of scenario
    /// `actorhop`. No `Backend` implements it; only that scenario measures it.
    case defaultActor = "default-actor"

    /// Column heading in reports.
    var title: String {
        switch self {
        case .runloopkit: "RunLoopKit"
        case .runloopkitPrecise: "RunLoopKit precise"
        case .libev: "libev"
        case .libevIOURing: "libev io_uring"
        case .cf: "CFRunLoop"
        case .nio: "SwiftNIO"
        case .dispatch: "libdispatch"
        case .defaultActor: "default actor"
        }
    }

    /// Name in ratio headings.
    var shortTitle: String {
        switch self {
        case .cf: "CF"
        case .nio: "NIO"
        default: title
        }
    }

    static func < (a: BackendID, b: BackendID) -> Bool {
        allCases.firstIndex(of: a)! < allCases.firstIndex(of: b)!
    }
}

/// A loop running on its own thread with one version-0 source (libev: an `ev_async`), driven
/// from other threads. Made by `Backend.startLoop(onSignal:)`.
protocol RunningLoop: Sendable {
    /// From any thread: signals the source and wakes the loop (CF: CFRunLoopSourceSignal +
    /// CFRunLoopWakeUp; libev: ev_async_send; RunLoopKit: signal() + wakeUp()).
    func signal()
    /// From any thread: schedules `item` on the loop `count` times, each followed by a wake-up
    /// (CF: CFRunLoopPerformBlock + CFRunLoopWakeUp; libev: mutex queue + ev_async_send).
    func post(_ item: @escaping @Sendable () -> Void, count: Int)
    /// Stops the loop and joins its thread.
    func stop()
}

/// A running loop that can also hold a timer, so that its sleeps have a deadline.
protocol TimerHoldingLoop: RunningLoop {
    /// From any thread: adds a timer due in a day, that does nothing, to the loop's mode, and
    /// returns once the loop's next sleep has it for its deadline.
    func holdFarOffTimer()
}

/// A running loop that can also watch a descriptor, so that it sleeps in `epoll_wait`.
protocol DescriptorWatchingLoop: RunningLoop {
    /// From any thread: makes the loop watch the read end of a pipe that is never written, and
    /// returns once it does. The pipe is closed when the loop stops.
    func watchIdleDescriptor()
}

/// A running loop that can hang a host's phases on libev's own iteration: an `ev_prepare` and an
/// `ev_check` watcher, whose callbacks libev runs before and after every poll.
protocol PhaseWatchingLoop: RunningLoop {
    /// From any thread: starts the two watchers, with callbacks that only count, and returns
    /// once they are started.
    func watchPhases()
}

/// Times of one add-then-cancel pass over many timers (scenario `scaling`).
struct ChurnTimes: Sendable {
    var addNs: UInt64
    var cancelNs: UInt64
    /// After the cancels: one read of each timer's own memory, in the cancel order. What any
    /// cancel costs at least when the timers are no longer in the CPU's caches; `nil` where
    /// not measured.
    var visitNs: UInt64?
}

/// One run loop implementation, as the scenarios need it. Methods other than `startLoop` run
/// on a fresh thread the scenario made for the call, which owns the loop they use.
protocol Backend: Sendable {
    var id: BackendID { get }

    /// How a repeating timer that fell a whole interval behind is rescheduled.
    var catchUp: CatchUpPolicy { get }

    /// Starts a loop on a new thread whose source calls `onSignal` on that thread, and returns
    /// once the loop is ready to be signalled.
    func startLoop(onSignal: @escaping @Sendable () -> Void) -> any RunningLoop

    /// Runs a repeating timer of `intervalNs` until `recorder.fired` says stop. Reports the
    /// first due time with `recorder.start(firstDueNs:)` before running.
    func runRepeatingTimer(intervalNs: UInt64, recorder: LatenessRecorder)

    /// Arms a timer `delayNs` ahead, re-arms it `delayNs` ahead of each callout until
    /// `recorder.fired` says stop; reports each due time with `recorder.expect(dueNs:)`.
    func runRearmedTimer(delayNs: UInt64, recorder: LatenessRecorder)

    /// Adds one timer per offset (fire date = now + offset, all far ahead), then cancels them
    /// in `cancelOrder`; returns the time spent in the adds and in the cancels only, and where
    /// the backend can, the time to read each timer once more in the same order.
    func churnTimers(offsetsNs: [UInt64], cancelOrder: [Int]) -> ChurnTimes

    /// With `items` timers and `items` sources in the default mode, performs `switches` nested
    /// runs of another mode (one poll each) from inside a default-mode callout; returns the
    /// total time of the nested runs.
    func switchModes(items: Int, switches: Int) -> UInt64

    /// Creates and uses this thread's loop the way an app's thread would (one source added,
    /// one polling run). The result keeps the loop alive until dropped on the same thread.
    func touchLoop() -> AnyObject?
}

/// A backend whose main thread's run loop services libdispatch's main queue, as CF's does
/// (scenario `mainqueue`). Raw libev has no such loop and does not conform.
protocol MainLoopBackend: Backend {
    /// On the process's main thread: runs the main run loop in its default mode until it has
    /// handled something (the main queue's work, normally), then returns.
    func runMainLoopOnce()
}

/// Backends measured only in the timer scenarios: RunLoopKit in its other timer precision.
func timerPrecisionVariants() -> [any Backend] {
    #if canImport(RunLoopKit)
    [RunLoopKitBackend(precise: true)]
    #else
    []
    #endif
}

/// The backends compiled into this binary, in report order. `libev-uring` is included only
/// where the kernel lets libev create an io_uring loop.
func availableBackends() -> [any Backend] {
    var all: [any Backend] = []
    #if canImport(RunLoopKit)
    all.append(RunLoopKitBackend())
    #endif
    all.append(LibevBackend(flavor: .epoll))
    if LibevBackend.ioUringWorks() { all.append(LibevBackend(flavor: .ioUring)) }
    all.append(CFBackend())
    return all
}
