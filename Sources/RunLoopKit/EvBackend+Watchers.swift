import CLibev
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Watchers for version-1 sources: an `ev_io` per file-descriptor source and an `ev_signal` per
/// signal source. Each is identified by a token; when libev reports it during a wait, the token
/// and the events are queued for ``EvBackend/takeReady()``. All on the loop's thread.
extension EvBackend {
    enum Watcher {
        case io(UnsafeMutablePointer<ev_io>)
        case signal(UnsafeMutablePointer<ev_signal>)
    }

    /// Readiness bits as libev reports them.
    static let readable = Int32(EV_READ)
    static let writable = Int32(EV_WRITE)
    static let failed = Int32(EV_ERROR)

    /// A stopped watcher for readiness of `fd` (`events`: ``readable`` and/or ``writable``).
    func addIOWatcher(fd: Int32, events: Int32) -> Int {
        let watcher = UnsafeMutablePointer<ev_io>.allocate(capacity: 1)
        clibev_io_init(watcher, { loop, watcher, events in
            guard let loop, let watcher else { return }
            EvBackend.of(loop).noteReady(clibev_get_data(watcher), events)
        }, fd, events)
        return register(.io(watcher), watcher)
    }

    /// A stopped watcher for the Unix signal `signal`.
    func addSignalWatcher(signal: Int32) -> Int {
        let watcher = UnsafeMutablePointer<ev_signal>.allocate(capacity: 1)
        clibev_signal_init(watcher, { loop, watcher, events in
            guard let loop, let watcher else { return }
            EvBackend.of(loop).noteReady(clibev_get_data(watcher), events)
        }, signal)
        return register(.signal(watcher), watcher)
    }

    func startWatcher(_ token: Int) {
        switch watchers[token] {
        case .io(let watcher):
            // libev (built with assertions, as Debian's is) aborts on a watcher whose descriptor
            // was closed behind its back; report that as an error readiness instead.
            guard fcntl(watcher.pointee.fd, F_GETFD) != -1 else {
                noteReady(clibev_get_data(watcher), Self.failed)
                return
            }
            ev_io_start(loop, watcher)
        case .signal(let watcher): ev_signal_start(loop, watcher)
        case nil: break
        }
    }

    func stopWatcher(_ token: Int) {
        switch watchers[token] {
        case .io(let watcher): ev_io_stop(loop, watcher)
        case .signal(let watcher): ev_signal_stop(loop, watcher)
        case nil: break
        }
    }

    func removeWatcher(_ token: Int) {
        stopWatcher(token)
        ready.removeAll { $0.token == token }
        switch watchers.removeValue(forKey: token) {
        case .io(let watcher): watcher.deallocate()
        case .signal(let watcher): watcher.deallocate()
        case nil: break
        }
    }

    /// Whether a watcher reported readiness not yet taken with ``takeReady()``.
    var hasReady: Bool { !ready.isEmpty }

    /// The watchers that fired since the last call, in the order the kernel reported them, which
    /// is the order their descriptors became ready. libev calls the pending watchers of one wait
    /// last-reported first, so ``noteReady(_:_:)`` saw them reversed.
    func takeReady() -> [(token: Int, events: Int32)] {
        defer { ready.removeAll(keepingCapacity: true) }
        return ready.reversed()
    }

    private func register(_ watcher: Watcher, _ raw: UnsafeMutableRawPointer) -> Int {
        nextWatcherToken += 1
        clibev_set_data(raw, UnsafeMutableRawPointer(bitPattern: nextWatcherToken))
        watchers[nextWatcherToken] = watcher
        return nextWatcherToken
    }

    private static func of(_ loop: OpaquePointer) -> EvBackend {
        Unmanaged<EvBackend>.fromOpaque(ev_userdata(loop)).takeUnretainedValue()
    }

    func noteReady(_ data: UnsafeMutableRawPointer?, _ events: Int32) {
        let token = Int(bitPattern: data)
        if let index = ready.firstIndex(where: { $0.token == token }) {
            ready[index].events |= events
        } else {
            ready.append((token, events))
        }
        reasons.pointee |= WakeReasons.watcher.rawValue
        if events & Self.failed != 0 { stopWatcher(token) }  // e.g. the fd was closed: no busy loop
    }
}
