import CLibev
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// How the loop survives failures of its own watchers and of libev's wait: `epoll_ctl` refusing
/// the eventfd or the timerfd (libev stops the watcher with `EV_ERROR`), a timerfd that could
/// not be armed, and `epoll_wait` failing (reported through ``SystemErrorHook``). Each is retried
/// up to ``EvBackend/retryLimit`` times in a row, then the process stops with a message naming
/// the call.
extension EvBackend {
    /// Starts one of the loop's own watchers; its `epoll_ctl` happens in the next `ev_run`.
    func startInternalWatcher(_ watcher: UnsafeMutablePointer<ev_io>) {
        ev_io_start(loop, watcher)
        hasUnflushedWatchers = true
    }

    /// libev stopped `watcher` after `epoll_ctl` failed for it (`ENOMEM`, `ENOSPC`): start it
    /// again before the next wait.
    func internalWatcherFailed(_ watcher: UnsafeMutablePointer<ev_io>) {
        failedWatchers.append((watcher, errno))
    }

    /// Stops one of the loop's own watchers for good (or until started again).
    func stopInternalWatcher(_ watcher: UnsafeMutablePointer<ev_io>) {
        ev_io_stop(loop, watcher)
        failedWatchers.removeAll { $0.watcher == watcher }
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
            startInternalWatcher(watcher)
        }
    }

    /// A timerfd that could not be armed is backed by an `ev_timer` for this wait (libev rounds
    /// its timeout up to the millisecond: late by less than one, never by a whole sleep).
    func armFallbackIfNeeded() {
        guard deadlineUnarmed else { return }
        deadlineUnarmed = false
        let unarmed: MonotonicTime? = deadline.withLock { state in
            if state.timerFD < 0 && state.requested != .distantFuture { makeTimerDescriptor(&state) }
            return arm(state.requested, &state) ? nil : state.requested
        }
        if fallbackTimerActive, let fallbackTimer {
            ev_timer_stop(loop, fallbackTimer)
            fallbackTimerActive = false
        }
        guard let unarmed, unarmed != .distantFuture else { return }
        let remaining = max(0, Double(unarmed.nanoseconds &- MonotonicTime.now().nanoseconds) / 1e9)
        ev_now_update(loop)
        let timer = fallbackTimer ?? .allocate(capacity: 1)
        fallbackTimer = timer
        clibev_timer_init(timer, { loop, _, _ in
            guard let loop else { return }
            EvBackend.of(loop).reasons.pointee |= WakeReasons.deadline.rawValue
        }, remaining, 0)
        ev_timer_start(loop, timer)
        fallbackTimerActive = true
    }

    /// Makes the timerfd at the first finite deadline and has libev watch it (loop's thread,
    /// `deadline`'s lock held). If the process has no descriptor left (or the kernel refuses),
    /// the timerfd stays unmade: the fallback timer stands in, and the next deadline tries again.
    func makeTimerDescriptor(_ state: inout DeadlineState) {
        let fd = retryingEINTR { timerfd_create(CLOCK_MONOTONIC, Int32(TFD_NONBLOCK | TFD_CLOEXEC)) }
        guard fd >= 0 else { return }
        InternalDescriptors.insert(fd)
        state.timerFD = fd
        state.armed = .distantFuture
        settled.store(state.settled, ordering: .relaxed)
        // Made once: the timerfd stays until the loop is destroyed.
        let watcher = UnsafeMutablePointer<ev_io>.allocate(capacity: 1)
        clibev_io_init(watcher, { loop, watcher, revents in
            guard let loop, let watcher else { return }
            let backend = EvBackend.of(loop)
            if revents & EvBackend.failed != 0 { return backend.internalWatcherFailed(watcher) }
            backend.deadline.withLock { state in
                // Read under the lock: another thread's re-arm (R44) then either came before the
                // read (and the read sees the new setting) or after it (and is what is armed).
                var expirations: UInt64 = 0
                var result = read(watcher.pointee.fd, &expirations, 8)
                while result < 0 && errno == EINTR { result = read(watcher.pointee.fd, &expirations, 8) }
                // One-shot: expired and read, it is disarmed. A failed read leaves it readable,
                // still holding the expired date, which is what `armed` says.
                if result == 8 {
                    state.armed = .distantFuture
                    backend.settled.store(state.settled, ordering: .relaxed)
                }
            }
            backend.reasons.pointee |= WakeReasons.deadline.rawValue
        }, fd, Int32(EV_READ))
        deadlineWatcher = watcher
        startInternalWatcher(watcher)
    }

    /// A blocking `ev_run` returned with nothing: libev's minute is up, or `epoll_wait` failed
    /// (reported through ``SystemErrorHook``), which is retried unless it keeps failing.
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
}
