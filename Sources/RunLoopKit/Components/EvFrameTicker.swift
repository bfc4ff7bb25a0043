import Synchronization

/// Why an ``EvFrameTicker`` could not be added to a loop.
public enum EvFrameTickerError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The loop's thread has exited (R4): the ticker would never tick.
    case loopExited

    /// A message naming the call that failed and why.
    public var description: String {
        switch self {
        case .loopExited: "EvFrameTicker.add(to:forModes:): the run loop's thread has exited"
        }
    }
}

/// A frame clock for UI-like work, in the manner of `CADisplayLink` (an FPS label, a frame
/// monitor): calls back at a fixed rate in chosen modes, counting the frames it
/// could not deliver.
///
/// Frames sit on a fixed grid — frame *k* is due at `start + k × interval` — so scheduling never
/// drifts however late a callback runs. It rides on a repeating ``EvTimer`` (R42: the next fire
/// date stays on the grid and skips missed slots): when the loop was busy or running a mode the
/// ticker is not in (R41), the next callback reports the newest due frame and how many frames
/// were dropped since the previous callback. The frames-per-second figure is measured over
/// windows of grid time, so it is exact arithmetic, not a noisy clock reading:
/// `delivered frames / (frames elapsed × interval)`.
///
/// The loop holds the ticker's timer, but not the ticker: dropping the last reference to it
/// invalidates it (unlike `CADisplayLink`, which the run loop retains — no weak-proxy
/// workaround is needed).
public final class EvFrameTicker: Sendable {
    /// The frame grid: frame `index` is due at `start + index × interval`.
    public struct Grid: Sendable, Equatable {
        /// When frame 0 was due: when the ticker was added to its loop.
        public let start: ContinuousClock.Instant
        /// The time between frames.
        public let interval: Duration

        /// A grid.
        ///
        /// - Precondition: `interval` is positive.
        public init(start: ContinuousClock.Instant, interval: Duration) {
            require(interval > .zero, "EvFrameTicker.Grid.init: interval must be positive (got \(interval))")
            self.start = start
            self.interval = interval
        }

        /// The newest frame due at or before `instant` (negative before `start`).
        public func frameIndex(at instant: ContinuousClock.Instant) -> Int64 {
            let elapsed = start.duration(to: instant).saturatingNanoseconds
            let step = interval.saturatingNanoseconds
            let quotient = elapsed / step
            return elapsed < 0 && elapsed % step != 0 ? quotient - 1 : quotient  // floor, not truncation
        }

        /// When frame `index` is due.
        public func time(ofFrame index: Int64) -> ContinuousClock.Instant {
            start.advanced(by: .nanoseconds(interval.saturatingNanoseconds.multipliedReportingOverflow(by: index).partialValue))
        }
    }

    /// One callback.
    public struct Frame: Sendable {
        /// The frame delivered: the newest one due when the callback began.
        public let index: Int64
        /// When this frame was due (on the grid; CADisplayLink's `timestamp`).
        public let timestamp: ContinuousClock.Instant
        /// When the next frame is due (CADisplayLink's `targetTimestamp`).
        public let targetTimestamp: ContinuousClock.Instant
        /// When the callback began.
        public let callbackTime: ContinuousClock.Instant
        /// Frames that were due since the previous callback but not delivered.
        public let droppedFrames: Int
        /// Frames delivered so far, this one included.
        public let totalFrames: Int
        /// Frames dropped so far.
        public let totalDroppedFrames: Int
        /// Frames per second over the last completed window; `nil` until a window completed.
        public let framesPerSecond: Double?
    }

    /// Counters so far.
    public struct Statistics: Sendable, Equatable {
        /// Frames delivered to the handler.
        public var framesDelivered: Int
        /// Frames that were due but not delivered (not counting those due while paused).
        public var framesDropped: Int
        /// Over the last completed window; `nil` until one completed.
        public var framesPerSecond: Double?
    }

    private struct State {
        var grid: Grid?
        var timer: EvTimer?
        var isValid = true
        var isPaused = false
        var lastIndex: Int64 = 0
        var delivered = 0
        var dropped = 0
        var windowStartIndex: Int64 = 0
        var windowFrames = 0
        var framesPerSecond: Double?
    }

    /// The time between frames (whole nanoseconds, the timer's resolution).
    public let interval: Duration
    /// The span of grid time each frames-per-second figure covers.
    public let measurementWindow: Duration
    private let handler: @Sendable (Frame) -> Void
    private let state = Locked(State())

    /// A ticker calling `handler` every `interval`, not yet added to a loop.
    ///
    /// - Parameters:
    ///   - interval: the frame period, rounded to whole nanoseconds.
    ///   - measurementWindow: how much grid time each frames-per-second figure covers.
    ///   - handler: runs on the loop's thread for each delivered frame.
    /// - Precondition: `interval` is at least 1 ns; `measurementWindow` is positive.
    public init(interval: Duration, measurementWindow: Duration = .seconds(1), handler: @escaping @Sendable (Frame) -> Void) {
        require(interval >= .nanoseconds(1), "EvFrameTicker.init: interval must be at least 1 ns (got \(interval))")
        require(measurementWindow > .zero, "EvFrameTicker.init: measurementWindow must be positive")
        self.interval = .nanoseconds(interval.saturatingNanoseconds)
        self.measurementWindow = measurementWindow
        self.handler = handler
    }

    /// A ticker at `framesPerSecond` (60, 120…): its interval is `1 s / framesPerSecond`.
    ///
    /// - Precondition: `framesPerSecond` is positive.
    public convenience init(framesPerSecond: Int, measurementWindow: Duration = .seconds(1), handler: @escaping @Sendable (Frame) -> Void) {
        require(framesPerSecond > 0, "EvFrameTicker.init(framesPerSecond:): must be positive (got \(framesPerSecond))")
        self.init(interval: .seconds(1) / framesPerSecond, measurementWindow: measurementWindow, handler: handler)
    }

    /// Invalidates the ticker: the loop no longer holds anything of it.
    deinit { invalidate() }

    /// Starts ticking on `loop` in `modes` (``EvRunLoop/Mode/common`` = every common mode, R12):
    /// frame 0 is now, frame 1 one interval from now.
    ///
    /// - Thread: any (R6).
    /// - Throws: ``EvFrameTickerError/loopExited`` if the loop's thread has exited.
    /// - Precondition: the ticker was not added before and is valid; `modes` is not empty.
    public func add(to loop: EvRunLoop, forModes modes: [EvRunLoop.Mode] = [.common]) throws(EvFrameTickerError) {
        require(!modes.isEmpty, "EvFrameTicker.add(to:forModes:): modes must not be empty")
        let timer: EvTimer = state.withLock { state in
            require(state.isValid, "EvFrameTicker.add(to:forModes:): the ticker was invalidated")
            require(state.grid == nil, "EvFrameTicker.add(to:forModes:): the ticker was already added to a loop")
            let grid = Grid(start: Self.now(), interval: interval)
            // Added paused: parked far away until resumed (see isPaused).
            let firstDate = state.isPaused ? grid.start.advanced(by: Self.parkedDelay) : grid.time(ofFrame: 1)
            let timer = EvTimer(fireAt: firstDate, interval: interval) { [weak self] _ in
                self?.tick()
            }
            state.grid = grid
            state.timer = timer
            return timer
        }
        for mode in modes { loop.add(timer, forMode: mode) }
        if loop.threadHasExited {
            invalidate()
            throw .loopExited
        }
    }

    /// The grid, once the ticker was added to a loop.
    public var grid: Grid? { state.withLock { $0.grid } }

    /// Whether the ticker still ticks (or can still be added): false once invalidated, and once
    /// the thread of the loop it was added to has exited (R4).
    public var isValid: Bool {
        state.withLock { state in
            // Its timer leaves the loop only at the loop's end, or at invalidate().
            state.isValid && (state.timer.map { timer in timer.state.withLock { $0.loop != nil } } ?? true)
        }
    }

    /// The counters so far.
    public var statistics: Statistics {
        state.withLock { Statistics(framesDelivered: $0.delivered, framesDropped: $0.dropped, framesPerSecond: $0.framesPerSecond) }
    }

    /// While paused, no frame is delivered, and frames due meanwhile do not count as dropped;
    /// on resume the ticker continues on its grid with the next frame due. A paused ticker stays
    /// in its modes (it keeps them from being empty, R16). Safe from any thread.
    public var isPaused: Bool {
        get { state.withLock { $0.isPaused } }
        set {
            let (timer, date): (EvTimer?, ContinuousClock.Instant?) = state.withLock { state in
                guard state.isValid, state.isPaused != newValue, let grid = state.grid else {
                    state.isPaused = newValue
                    return (nil, nil)
                }
                state.isPaused = newValue
                if newValue { return (state.timer, Self.now().advanced(by: Self.parkedDelay)) }
                // Never back: a frame already delivered is never delivered again.
                state.lastIndex = max(state.lastIndex, grid.frameIndex(at: Self.now()))
                state.windowStartIndex = state.lastIndex
                state.windowFrames = 0
                return (state.timer, grid.time(ofFrame: state.lastIndex + 1))
            }
            if let timer, let date { timer.fireDate = date }  // R44: re-arms the loop's wait
        }
    }

    /// Where a paused ticker's timer waits: far enough never to fire.
    private static let parkedDelay = Duration.seconds(86_400 * 365)

    /// Stops the ticker for good: its timer leaves every mode (R45). Safe from any thread, and
    /// from the handler.
    public func invalidate() {
        let timer = state.withLock { state -> EvTimer? in
            state.isValid = false
            defer { state.timer = nil }
            return state.timer
        }
        timer?.invalidate()
    }

    /// The clock the loop fires timers by, as an instant: a frame's slot has passed on it when
    /// the ticker's timer fires, with no rounding between the two clocks.
    private static func now() -> ContinuousClock.Instant { MonotonicTime.now().instant }

    /// The timer's handler, on the loop's thread.
    ///
    /// The frame is the newest one due now, not the one the timer's date names: another thread
    /// pausing or resuming re-dates the timer meanwhile, to a slot not yet due or a year ahead.
    private func tick() {
        let now = Self.now()
        let frame: Frame? = state.withLock { state in
            guard state.isValid, !state.isPaused, let grid = state.grid else { return nil }
            let current = grid.frameIndex(at: now)
            guard current > state.lastIndex else { return nil }
            let dropped = Int(current - state.lastIndex - 1)
            state.lastIndex = current
            state.delivered += 1
            state.dropped += dropped
            state.windowFrames += 1
            let span = current - state.windowStartIndex
            let spanDuration = interval * Int(span)
            if spanDuration >= measurementWindow {
                let seconds = Double(spanDuration.saturatingNanoseconds) / 1e9
                state.framesPerSecond = Double(state.windowFrames) / seconds
                state.windowStartIndex = current
                state.windowFrames = 0
            }
            return Frame(
                index: current, timestamp: grid.time(ofFrame: current), targetTimestamp: grid.time(ofFrame: current + 1),
                callbackTime: now, droppedFrames: dropped, totalFrames: state.delivered,
                totalDroppedFrames: state.dropped, framesPerSecond: state.framesPerSecond)
        }
        if let frame { handler(frame) }
    }
}
