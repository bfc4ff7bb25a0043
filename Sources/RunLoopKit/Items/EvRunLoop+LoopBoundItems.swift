/// Handlers made on a loop's own thread for that loop: no `@Sendable` needed.
///
/// A handler always runs on its loop's thread, so when the item is also made and added there,
/// the handler may capture what that thread owns — a plain `var`, a non-`Sendable` class —
/// without a lock. The compiler cannot see the thread, so these calls check it at run time: made
/// and added only on the loop's own thread, and the handler stops the program if it is ever
/// called on another thread (the item added to a second loop, a timer fired from elsewhere).
extension EvRunLoop {
    /// Makes a timer whose handler needs no `@Sendable` and adds it to `mode` (one call, as
    /// Foundation's `Timer.scheduledTimer` does, C123).
    ///
    /// - Parameters:
    ///   - delay: how long from now the timer first fires; not negative.
    ///   - interval: the time between fires; `.zero` (the default) makes a one-shot timer.
    ///   - tolerance: how late the loop may fire the timer to wake less often (R46).
    ///   - mode: where the timer fires; ``Mode/default`` by default, as Foundation does (C123).
    ///   - handler: runs on this loop's thread each time the timer fires; it may capture state
    ///     of this thread that is not `Sendable`.
    /// - Returns: the timer, added to `mode`.
    /// - Precondition: called on this loop's thread (``isCurrent``).
    @discardableResult
    public func addTimer(
        after delay: Duration, interval: Duration = .zero, tolerance: Duration = .zero, forMode mode: Mode = .default,
        _ handler: @escaping (EvTimer) -> Void
    ) -> EvTimer {
        preconditionIsCurrent("EvRunLoop.addTimer(after:interval:tolerance:forMode:_:)", "a timer with a loop-bound handler can be added")
        let bound = LoopBoundHandler(handler, loop: self, call: "EvRunLoop.addTimer(after:interval:tolerance:forMode:_:)")
        let timer = EvTimer(after: delay, interval: interval, tolerance: tolerance) { timer in bound.checked()(timer) }
        add(timer, forMode: mode)
        return timer
    }

    /// Makes a timer that fires `interval` from now and, if `repeats`, every `interval` after
    /// that, with a handler that needs no `@Sendable`, and adds it to `mode` (Foundation's
    /// `Timer.scheduledTimer(withTimeInterval:repeats:block:)`, C123).
    ///
    /// - Parameters:
    ///   - interval: the delay before the first fire and, for a repeating timer, between fires.
    ///   - repeats: `false` for a timer that fires once.
    ///   - tolerance: how late the loop may fire the timer to wake less often (R46).
    ///   - mode: where the timer fires; ``Mode/default`` by default, as Foundation does (C123).
    ///   - handler: runs on this loop's thread each time the timer fires; it may capture state
    ///     of this thread that is not `Sendable`.
    /// - Returns: the timer, added to `mode`.
    /// - Precondition: called on this loop's thread (``isCurrent``); `interval` is not negative,
    ///   and not zero for a repeating timer.
    @discardableResult
    public func addTimer(
        interval: Duration, repeats: Bool, tolerance: Duration = .zero, forMode mode: Mode = .default,
        _ handler: @escaping (EvTimer) -> Void
    ) -> EvTimer {
        preconditionIsCurrent("EvRunLoop.addTimer(interval:repeats:tolerance:forMode:_:)", "a timer with a loop-bound handler can be added")
        let bound = LoopBoundHandler(handler, loop: self, call: "EvRunLoop.addTimer(interval:repeats:tolerance:forMode:_:)")
        let timer = EvTimer(interval: interval, repeats: repeats, tolerance: tolerance) { timer in bound.checked()(timer) }
        add(timer, forMode: mode)
        return timer
    }

    /// Makes a version-0 source whose `perform` needs no `@Sendable` and adds it to `mode`.
    /// Signal it from any thread with ``EvSource/signal()`` (then ``wakeUp()``, R22).
    ///
    /// - Parameters:
    ///   - order: lower orders perform first (R33).
    ///   - mode: where the source performs; ``Mode/default`` by default.
    ///   - perform: runs on this loop's thread when the signalled source is handled; it may
    ///     capture state of this thread that is not `Sendable`.
    /// - Returns: the source, added to `mode`.
    /// - Precondition: called on this loop's thread (``isCurrent``).
    @discardableResult
    public func addSource(order: Int = 0, forMode mode: Mode = .default, perform: @escaping () -> Void) -> EvSource {
        preconditionIsCurrent("EvRunLoop.addSource(order:forMode:perform:)", "a source with a loop-bound handler can be added")
        let bound = LoopBoundHandler(perform, loop: self, call: "EvRunLoop.addSource(order:forMode:perform:)")
        let source = EvSource(order: order) { bound.checked()() }
        add(source, forMode: mode)
        return source
    }

    /// Makes an observer whose handler needs no `@Sendable` and adds it to `mode`.
    ///
    /// - Parameters:
    ///   - activities: the phases to be called for (R48).
    ///   - repeats: `false` makes it stop after its first call (R50).
    ///   - order: lower first (R49).
    ///   - mode: the mode to observe; ``Mode/default`` by default.
    ///   - handler: runs on this loop's thread with the observer and the current activity; it
    ///     may capture state of this thread that is not `Sendable`.
    /// - Returns: the observer, added to `mode`.
    /// - Precondition: called on this loop's thread (``isCurrent``).
    @discardableResult
    public func addObserver(
        activities: Activity, repeats: Bool = true, order: Int = 0, forMode mode: Mode = .default,
        _ handler: @escaping (EvObserver, Activity) -> Void
    ) -> EvObserver {
        preconditionIsCurrent("EvRunLoop.addObserver(activities:repeats:order:forMode:_:)", "an observer with a loop-bound handler can be added")
        let bound = LoopBoundHandler(handler, loop: self, call: "EvRunLoop.addObserver(activities:repeats:order:forMode:_:)")
        let observer = EvObserver(activities: activities, repeats: repeats, order: order) { observer, activity in
            bound.checked()(observer, activity)
        }
        add(observer, forMode: mode)
        return observer
    }
}

extension EvRunLoop {
    /// Makes a file-descriptor source whose handler needs no `@Sendable` and adds it to `mode`:
    /// a connection's handler may keep that connection's state in plain variables of the loop's
    /// thread.
    ///
    /// - Parameters:
    ///   - fileDescriptor: the caller's open descriptor; the caller keeps owning it (see
    ///     ``EvFileDescriptorSource/init(fileDescriptor:events:order:handler:)``).
    ///   - events: ``EvFileDescriptorSource/Readiness/readable``,
    ///     ``EvFileDescriptorSource/Readiness/writable`` or both.
    ///   - mode: where the descriptor is watched (R37); ``Mode/default`` by default.
    ///   - handler: runs on this loop's thread with the readiness that fired; it may capture state
    ///     of this thread that is not `Sendable`.
    /// - Returns: the source, added to `mode`.
    /// - Throws: ``EvSourceError/badFileDescriptor(_:)`` if the descriptor is not open;
    ///   ``EvSourceError/internalDescriptor(_:)`` if it is one of a run loop's own.
    /// - Precondition: called on this loop's thread (``isCurrent``); `events` holds
    ///   `.readable` and/or `.writable`.
    @discardableResult
    public func addFileDescriptorSource(
        fileDescriptor: Int32, events: EvFileDescriptorSource.Readiness, forMode mode: Mode = .default,
        _ handler: @escaping (EvFileDescriptorSource.Readiness) -> Void
    ) throws(EvSourceError) -> EvFileDescriptorSource {
        preconditionIsCurrent(
            "EvRunLoop.addFileDescriptorSource(fileDescriptor:events:forMode:_:)", "a source with a loop-bound handler can be added")
        let bound = LoopBoundHandler(handler, loop: self, call: "EvRunLoop.addFileDescriptorSource(fileDescriptor:events:forMode:_:)")
        let source = try EvFileDescriptorSource(fileDescriptor: fileDescriptor, events: events) { readiness in
            bound.checked()(readiness)
        }
        add(source, forMode: mode)
        return source
    }
}

/// A handler that is not `Sendable`, made on `loop`'s thread and called only there.
///
/// `@unchecked Sendable`: ``checked()`` hands the handler out only on the loop's thread, the
/// thread that made it, so it never runs concurrently with that thread's other code.
struct LoopBoundHandler<Handler>: @unchecked Sendable {
    private let handler: Handler
    private let loop: EvRunLoop
    private let call: StaticString

    init(_ handler: Handler, loop: EvRunLoop, call: StaticString) {
        self.handler = handler
        self.loop = loop
        self.call = call
    }

    /// The handler, for a call on the loop's thread; stops the program on any other thread.
    func checked() -> Handler {
        loop.preconditionIsCurrent(call, "its handler is bound to the loop it was added on and runs")
        return handler
    }
}
