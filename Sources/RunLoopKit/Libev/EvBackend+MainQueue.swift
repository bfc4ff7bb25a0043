import CLibev
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// libdispatch's main queue, serviced by the main run loop (R17, R60): libdispatch signals an
/// eventfd when `DispatchQueue.main` (and so the main actor) has work; the loop watches it with
/// an `ev_io` while it runs a common mode, reads it, then lets libdispatch drain the queue.
extension EvBackend {
    /// Starts or stops servicing the main queue's eventfd (main loop's thread only). A stop
    /// leaves the watcher started, so that a switch to a mode that is not common and back costs
    /// no `epoll_ctl`; it ends only if the queue signals before the servicing comes back
    /// (``mainQueueSignalled(_:)``).
    func watchMainQueue(_ watch: Bool) {
        guard watch != mainQueueServiced else { return }
        mainQueueServiced = watch
        guard watch else { return }
        let watcher = mainQueueWatcher ?? makeMainQueueWatcher()
        if clibev_is_active(watcher) == 0 {
            startInternalWatcher(watcher, call: "EvRunLoop.run(mode:timeout:returnAfterSourceHandled:)")
        }
    }

    /// Whether the main queue signalled work, leaving the signal to ``takeMainQueueSignal()``.
    /// Never blocks.
    ///
    /// A look, not a wait: `poll` with a zero timeout on libdispatch's eventfd. libev can only
    /// look by entering `ev_run`, which would also report (and run the callbacks of) the loop's
    /// other watchers in the middle of a pass, where CF's shortcut looks at the main queue alone.
    /// Made only while an observer of the wait could tell the shortcut from the sleep.
    func peekMainQueueSignal() -> Bool {
        var entry = pollfd(fd: _dispatch_get_main_queue_handle_4CF(), events: Int16(POLLIN), revents: 0)
        return retryingEINTR { Int32(systemPoll(&entry, 1, 0)) } == 1
    }

    /// Whether the main queue signalled work; clears the signal. Never blocks.
    func takeMainQueueSignal() -> Bool {
        var count: UInt64 = 0
        return retryingEINTR { Int32(read(_dispatch_get_main_queue_handle_4CF(), &count, 8)) } == 8
    }

    /// Runs the main queue's pending work (main thread only).
    func drainMainQueue() {
        _dispatch_main_queue_callback_4CF(nil)
    }

    private func makeMainQueueWatcher() -> UnsafeMutablePointer<ev_io> {
        let watcher = UnsafeMutablePointer<ev_io>.allocate(capacity: 1)
        clibev_io_init(watcher, { loop, watcher, revents in
            guard let loop, let watcher else { return }
            EvBackend.with(loop) { backend in
                if revents & EvBackend.failed != 0 { return backend.internalWatcherFailed(watcher) }
                backend.mainQueueSignalled(watcher)
            }
        }, _dispatch_get_main_queue_handle_4CF(), Int32(EV_READ))
        mainQueueWatcher = watcher
        return watcher
    }

    /// The main queue's eventfd is readable: a wake reason while the queue is serviced; else the
    /// watcher stops, since the eventfd stays readable until the queue is drained.
    private func mainQueueSignalled(_ watcher: UnsafeMutablePointer<ev_io>) {
        if mainQueueServiced {
            reasons.pointee |= WakeReasons.mainQueue.rawValue
        } else {
            stopInternalWatcher(watcher)
        }
    }
}

/// poll(2), for the main queue's look; inside EvBackend the name is its own non-blocking pass.
private func systemPoll(_ entries: UnsafeMutablePointer<pollfd>, _ count: nfds_t, _ timeout: Int32) -> Int32 {
    poll(entries, count, timeout)
}

extension EvBackend {
    /// Whether libdispatch has taken its main queue off the main thread for good
    /// (`dispatchMain()`, which an async main calls): the queue's handle is then gone, and no
    /// run loop on the main thread will ever service it. Any thread; no lock.
    static var mainQueueLeftMainThread: Bool { _dispatch_get_main_queue_handle_4CF() < 0 }
}
