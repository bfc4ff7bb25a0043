import CEpoll
import CLibev
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// How the loop survives failures of its own watchers and of libev's wait: `epoll_ctl` refusing
/// one of its descriptors (libev stops the watcher with `EV_ERROR`), a timerfd that cannot be
/// made or armed, and `epoll_wait` failing (reported through ``SystemErrorHook``). Each is
/// retried up to ``EvBackend/retryLimit`` times in a row, then the process stops with a message
/// naming the call.
extension EvBackend {
    /// libev stopped `watcher` after `epoll_ctl` failed for it (`ENOMEM`, `ENOSPC`): start it
    /// again before the next wait.
    func internalWatcherFailed(_ watcher: UnsafeMutablePointer<ev_io>) {
        failedWatchers.append((watcher, errno))
    }

    /// Starts one of the loop's own watchers, after making sure libev's `epoll_ctl` for it
    /// (made inside the next `ev_run`) cannot end in libev's assertion. A restart after an
    /// `EV_ERROR` skips that check: the descriptor passed it, and libev refused it otherwise.
    func startInternalWatcher(_ watcher: UnsafeMutablePointer<ev_io>, call: String, checked: Bool = true) {
        if checked { checkOwnDescriptorOrStop(watcher.pointee.fd, call: call) }
        ev_io_start(loop, watcher)
        checkNextPollForPendingWatchers()
        ownWatchersChanged = true
    }

    /// Stops one of the loop's own watchers for good (or until started again).
    func stopInternalWatcher(_ watcher: UnsafeMutablePointer<ev_io>) {
        ev_io_stop(loop, watcher)
        ownWatchersChanged = true
        failedWatchers.removeAll { $0.watcher == watcher }
    }

    /// Restarts failed watchers and stands in for an unarmed deadline.
    @inline(never)
    func repair() {
        restartFailedWatchers()
        armFallbackIfNeeded()
    }

    func restartFailedWatchers() {
        guard !failedWatchers.isEmpty else {
            rearmFailures = 0
            return
        }
        let failed = failedWatchers
        failedWatchers.removeAll()
        rearmFailures += 1
        require(
            rearmFailures <= Self.retryLimit,
            "EvRunLoop.run(mode:timeout:returnAfterSourceHandled:): epoll_ctl keeps refusing the loop's own descriptor \(failed[0].watcher.pointee.fd): \(describe(errno: failed[0].errno))")
        for (watcher, _) in failed where clibev_is_active(watcher) == 0 {
            // ev_io_set marks the descriptor for a new epoll_ctl: libev believes the killed
            // registration still stands and would otherwise skip it.
            clibev_io_set(watcher, watcher.pointee.fd, Int32(EV_READ))
            startInternalWatcher(watcher, call: "EvRunLoop.run(mode:timeout:returnAfterSourceHandled:)", checked: false)
        }
    }

    /// A deadline the timerfd could not hold (not made, or `timerfd_settime` failed) is held by
    /// an `ev_timer` for this sleep: libev rounds its timeout up to the millisecond, so the
    /// wake-up is late by less than one, never by a whole sleep. The timerfd is tried again first.
    func armFallbackIfNeeded() {
        guard deadlineUnarmed else { return }
        deadlineUnarmed = false
        let unarmed: MonotonicTime? = withDeadline { state in
            if state.timerFD < 0 && state.requested.date != .distantFuture { makeTimerDescriptor(&state) }
            return arm(state.target, &state) ? nil : state.requested.date
        }
        if fallbackTimerActive { stopFallbackTimer() }
        guard let unarmed, unarmed != .distantFuture else { return }
        let remaining = max(0, Double(unarmed.nanoseconds &- MonotonicTime.now().nanoseconds) / 1e9)
        // In the loop the thread will block in: libev counts only that loop's timers.
        let library = watchedLibrary
        let timerLoop = library?.loop ?? loop
        ev_now_update(timerLoop)
        let timer = fallbackTimer ?? .allocate(capacity: 1)
        fallbackTimer = timer
        // Its data is the wait's reasons: it may run in the libraries' loop, whose userdata is not the backend.
        clibev_timer_init(timer, { _, timer, _ in
            guard let timer else { return }
            clibev_get_data(timer).assumingMemoryBound(to: UInt32.self).pointee |= WakeReasons.deadline.rawValue
        }, remaining, 0)
        clibev_set_data(timer, reasons)
        ev_timer_start(timerLoop, timer)
        library?.holdsFallbackTimer = true
        fallbackTimerActive = true
    }

    @inline(never)
    func stopFallbackTimer() {
        guard let fallbackTimer else { return }
        if let library = watcherTables?.library, library.holdsFallbackTimer {
            ev_timer_stop(library.loop, fallbackTimer)
            library.holdsFallbackTimer = false
        } else {
            ev_timer_stop(loop, fallbackTimer)
        }
        fallbackTimerActive = false
    }

    /// A blocking `ev_run` returned with nothing: libev's minute is up, or `epoll_wait` failed
    /// (reported through ``SystemErrorHook``), which is retried unless it keeps failing.
    @inline(never)
    func checkPollFailures() {
        let count = SystemErrorHook.count
        guard count != seenSystemErrors else {
            pollFailures = 0
            return
        }
        seenSystemErrors = count
        pollFailures += 1
        require(
            pollFailures <= Self.retryLimit,
            "EvRunLoop.run(mode:timeout:returnAfterSourceHandled:): epoll_wait keeps failing: \(SystemErrorHook.lastMessage)")
    }

    /// Registers `fd` in libev's epoll set and takes it out again, before libev registers it:
    /// libev asserts when its own `epoll_ctl` fails with `EBADF`, `EINVAL` or `ELOOP`, so such a
    /// refusal is met here first and stops the process with a message naming `call`. Other
    /// errors (`ENOMEM`, `ENOSPC`) are left to libev, whose `EV_ERROR` is retried; `EEXIST`
    /// (libev keeps a stopped descriptor registered) is no refusal. Before libev's epoll
    /// descriptor is known, a descriptor closed behind the loop's back is still caught.
    func checkOwnDescriptorOrStop(_ fd: Int32, call: String) {
        if let refusal = ownDescriptorRefusal(fd, call: call) { fatalError(refusal) }
    }

    /// ``checkOwnDescriptorOrStop(_:call:)``, throwing instead (the loop's creation).
    func checkOwnDescriptor(_ fd: Int32, call: String) throws(EvRunLoopError) {
        if let refusal = ownDescriptorRefusal(fd, call: call) { throw .backendUnavailable(refusal) }
    }

    /// The message for a refusal libev would assert on, or `nil` (see
    /// ``checkOwnDescriptorOrStop(_:call:)``).
    private func ownDescriptorRefusal(_ fd: Int32, call: String) -> String? {
        // Until libev's epoll set is known (the loop's creation), a set of the probe's own.
        let probe = backendFD >= 0 ? backendFD : retryingEINTR { epoll_create1(Int32(EPOLL_CLOEXEC)) }
        defer { if probe != backendFD && probe >= 0 { close(probe) } }
        var error: Int32 = 0
        if probe >= 0 {
            var event = epoll_event()
            event.events = EPOLLIN.rawValue
            event.data.u64 = UInt64(UInt32(bitPattern: fd))
            if retryingEINTR({ epoll_ctl(probe, EPOLL_CTL_ADD, fd, &event) }) == 0 {
                if retryingEINTR({ epoll_ctl(probe, EPOLL_CTL_DEL, fd, &event) }) != 0 { error = errno }
            } else {
                error = errno
            }
        } else if fcntl(fd, F_GETFD) < 0 {
            error = errno
        }
        guard error == EBADF || error == EINVAL || error == ELOOP else { return nil }
        return "\(call): epoll_ctl refused the loop's own descriptor \(fd): \(describe(errno: error))"
    }
}
