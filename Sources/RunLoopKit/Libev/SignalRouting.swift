import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The process's signal handler for signal sources: it routes each watched signal to the one
/// loop that watches it.
///
/// Why not libev's `ev_signal`: libev attaches a signal to a loop when that loop's thread starts
/// a watcher and detaches it when the thread stops the last one, so moving a signal to another
/// loop had to wait for the old loop's thread (libev asserts "a signal must not be attached to
/// two different loops"), and stopping resets the signal to `SIG_DFL`, losing the handler or
/// `SIG_IGN` the process had. Here routing is a table entry changed at once from any thread,
/// and the disposition found before the first route is put back after the last.
///
/// The handler is async-signal-safe: it sets the signal's pending flag, then, if the loop's
/// running mode holds a source for it, asks the routed loop's ``WakeSignal`` to wake the loop
/// (atomics and `write`). ``unroute(_:)`` waits for handlers in flight, so a handler never
/// touches a loop that has been torn down.
enum SignalRouting {
    /// Signals 1...64 (glibc's `_NSIG` is 65).
    static let signalCount = 65

    /// A table of atomics, one per signal, allocated once and never freed.
    ///
    /// `@unchecked Sendable`: every element is an `Atomic`, reached only through its operations.
    struct Table<Value: AtomicRepresentable>: @unchecked Sendable {
        let base: UnsafeMutablePointer<Atomic<Value>>
        init(_ initial: Value) {
            base = .allocate(capacity: SignalRouting.signalCount)
            for index in 0..<SignalRouting.signalCount { (base + index).initialize(to: Atomic(initial)) }
        }
    }

    /// Per signal: the routed loop's ``WakeSignal`` as an unretained pointer, or 0.
    private static let targetTable = Table<UInt>(0)
    private static var targets: UnsafeMutablePointer<Atomic<UInt>> { targetTable.base }
    /// Per signal: delivered and not yet taken by the routed loop (``takePending(_:)``).
    private static let pendingTable = Table<Bool>(false)
    private static var pending: UnsafeMutablePointer<Atomic<Bool>> { pendingTable.base }
    /// Per signal: whether a delivery wakes the routed loop (``setWakesLoop(_:_:wake:)``).
    private static let wakesTable = Table<Bool>(true)
    private static var wakes: UnsafeMutablePointer<Atomic<Bool>> { wakesTable.base }
    /// Handlers running now (see ``unroute(_:)``).
    private static let handlersInFlight = Atomic<Int>(0)
    /// Per signal: the disposition the process had before the first route (under this lock).
    private static let saved = Locked<[Int32: sigaction]>([:])

    /// Routes `signal` to the loop woken by `wake`, installing the handler if the signal was not
    /// routed. Any thread; the caller (`SignalOwnership`) serialises calls per signal.
    static func route(_ signal: Int32, to wake: WakeSignal) {
        // Initialised before any handler can run (a handler must not run a lazy initialiser).
        _ = (targetTable, pendingTable, wakesTable)
        _ = handlersInFlight.load(ordering: .relaxed)
        saved.withLock { saved in
            if saved[signal] == nil {
                pending[Int(signal)].store(false, ordering: .sequentiallyConsistent)
                var action = sigaction()
                action.__sigaction_handler.sa_handler = handler
                sigfillset(&action.sa_mask)
                action.sa_flags = SA_RESTART
                var previous = sigaction()
                let status = sigaction(signal, &action, &previous)
                require(status == 0, "EvRunLoop.add(_:forMode:): sigaction(\(signal)) failed (errno \(errno))")
                saved[signal] = previous
            }
            wakes[Int(signal)].store(true, ordering: .sequentiallyConsistent)  // until its loop says
            targets[Int(signal)].store(UInt(bitPattern: Unmanaged.passUnretained(wake).toOpaque()), ordering: .sequentiallyConsistent)
        }
        // A signal that arrived while the route was moving: make the new loop look.
        if pending[Int(signal)].load(ordering: .sequentiallyConsistent) { wake.request(WakeSignal.signalArrived) }
    }

    /// Stops routing `signal` and restores the disposition it had before it was first routed
    /// (a handler, `SIG_IGN`, or `SIG_DFL`), unless a handler installed since (a DispatchSource's,
    /// the program's own) replaced this one: that one stays. A delivery not yet taken is dropped:
    /// no source watches it any more. Returns once no handler can still be using the old route.
    static func unroute(_ signal: Int32) {
        saved.withLock { saved in
            targets[Int(signal)].store(0, ordering: .sequentiallyConsistent)
            while handlersInFlight.load(ordering: .sequentiallyConsistent) != 0 { sched_yield() }
            if var previous = saved.removeValue(forKey: signal), isInstalled(for: signal) {
                sigaction(signal, &previous, nil)
            }
            pending[Int(signal)].store(false, ordering: .sequentiallyConsistent)
        }
    }

    /// Whether a delivery of `signal` wakes the loop it is routed to: set by that loop's thread
    /// as its running mode changes, so that a delivery for a source of another mode waits
    /// without waking it (R37). A delivery that came unwoken asks `wake` for a look once it wakes.
    static func setWakesLoop(_ signal: Int32, _ wakesLoop: Bool, wake: WakeSignal) {
        // Sequentially consistent, as the handler's store of `pending` and load of `wakes`: one
        // of the two sees the other's store, so a delivery is either woken for or seen here.
        wakes[Int(signal)].store(wakesLoop, ordering: .sequentiallyConsistent)
        if wakesLoop && pending[Int(signal)].load(ordering: .sequentiallyConsistent) { wake.request(WakeSignal.signalArrived) }
    }

    /// Whether `signal` was delivered since the last call; clears it (the routed loop's thread).
    static func takePending(_ signal: Int32) -> Bool {
        guard pending[Int(signal)].load(ordering: .relaxed) else { return false }
        return pending[Int(signal)].exchange(false, ordering: .sequentiallyConsistent)
    }

    /// Whether `signal`'s current handler is still ``handler``.
    private static func isInstalled(for signal: Int32) -> Bool {
        var current = sigaction()
        guard sigaction(signal, nil, &current) == 0 else { return false }
        return unsafeBitCast(current.__sigaction_handler.sa_handler, to: UInt.self) == unsafeBitCast(handler, to: UInt.self)
    }

    /// What ``route(_:to:)`` installs, one function for every signal.
    private static let handler: @convention(c) (Int32) -> Void = { signal in SignalRouting.handle(signal) }

    /// The signal handler (async-signal-safe: atomics and `write` only).
    private static func handle(_ signal: Int32) {
        let savedErrno = errno
        handlersInFlight.add(1, ordering: .sequentiallyConsistent)
        if signal > 0, Int(signal) < signalCount {
            let target = targets[Int(signal)].load(ordering: .sequentiallyConsistent)
            if target != 0, let pointer = UnsafeRawPointer(bitPattern: target) {
                pending[Int(signal)].store(true, ordering: .sequentiallyConsistent)
                if wakes[Int(signal)].load(ordering: .sequentiallyConsistent) {
                    Unmanaged<WakeSignal>.fromOpaque(pointer)._withUnsafeGuaranteedRef { wake in
                        // A failed write is retried a few times; the flag stays set either way.
                        var attempts = 0
                        if !wake.request(WakeSignal.signalArrived) {
                            while attempts < 16 && !wake.kick() { attempts += 1 }
                        }
                    }
                }
            }
        }
        handlersInFlight.subtract(1, ordering: .sequentiallyConsistent)
        errno = savedErrno
    }
}
