import CLibev
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Watchers for version-1 sources: a caller's descriptor in the loop's ``DescriptorSet`` per
/// file-descriptor source, and an `ev_signal` per signal source. Each is identified by a token;
/// when one reports during a wait, the token and the events are queued for
/// ``EvBackend/takeReady()``. All on the loop's thread.
extension EvBackend {
    enum Watcher {
        case descriptor(fd: Int32, events: Int32)
        case signal(UnsafeMutablePointer<ev_signal>)
    }

    /// Readiness bits as libev reports them.
    static let readable = Int32(EV_READ)
    static let writable = Int32(EV_WRITE)
    static let failed = Int32(EV_ERROR)

    /// A stopped watcher for readiness of `fd` (`events`: ``readable`` and/or ``writable``).
    func addIOWatcher(fd: Int32, events: Int32) -> Int {
        register(.descriptor(fd: fd, events: events))
    }

    /// A stopped watcher for the Unix signal `signal`.
    func addSignalWatcher(signal: Int32) -> Int {
        let watcher = UnsafeMutablePointer<ev_signal>.allocate(capacity: 1)
        clibev_signal_init(watcher, { loop, watcher, events in
            guard let loop, let watcher else { return }
            EvBackend.of(loop).noteReady(Int(bitPattern: clibev_get_data(watcher)), events)
        }, signal)
        let token = register(.signal(watcher))
        clibev_set_data(watcher, UnsafeMutableRawPointer(bitPattern: token))
        return token
    }

    /// Starts watching. A descriptor that cannot be watched (closed behind the source's back,
    /// say) is reported as ``failed`` instead.
    func startWatcher(_ token: Int) {
        switch watchers[token] {
        case .descriptor(let fd, let events):
            guard let descriptors = descriptorSet() else {
                noteReady(token, Self.failed)
                return
            }
            for failed in descriptors.add(token: token, fd: fd, events: events) { noteReady(failed, Self.failed) }
        case .signal(let watcher): ev_signal_start(loop, watcher)
        case nil: break
        }
    }

    func stopWatcher(_ token: Int) {
        switch watchers[token] {
        case .descriptor(let fd, _):
            for failed in descriptors?.remove(token: token, fd: fd) ?? [] { noteReady(failed, Self.failed) }
        case .signal(let watcher): ev_signal_stop(loop, watcher)
        case nil: break
        }
    }

    func removeWatcher(_ token: Int) {
        stopWatcher(token)
        ready.removeAll { $0.token == token }
        switch watchers.removeValue(forKey: token) {
        case .signal(let watcher): watcher.deallocate()
        case .descriptor, nil: break
        }
    }

    /// Whether a watcher reported readiness not yet taken with ``takeReady()``, or a watched
    /// descriptor is always ready (see ``DescriptorSet``).
    var hasReady: Bool { !ready.isEmpty || descriptors?.hasAlwaysReady == true }

    /// The watchers that fired since the last call. Descriptors come in the order the kernel
    /// reported them, which is the order they became ready.
    func takeReady() -> [(token: Int, events: Int32)] {
        if let descriptors, descriptors.hasAlwaysReady {
            for (token, events) in descriptors.collect() { noteReady(token, events) }
        }
        defer { ready.removeAll(keepingCapacity: true) }
        return ready
    }

    private func register(_ watcher: Watcher) -> Int {
        nextWatcherToken += 1
        watchers[nextWatcherToken] = watcher
        return nextWatcherToken
    }

    private static func of(_ loop: OpaquePointer) -> EvBackend {
        Unmanaged<EvBackend>.fromOpaque(ev_userdata(loop)).takeUnretainedValue()
    }

    /// The loop's descriptor set, made and watched by libev at first use; `nil` when the
    /// process is out of descriptors.
    private func descriptorSet() -> DescriptorSet? {
        if let descriptors { return descriptors }
        guard let descriptors = DescriptorSet() else { return nil }
        let watcher = UnsafeMutablePointer<ev_io>.allocate(capacity: 1)
        clibev_io_init(watcher, { loop, _, _ in
            guard let loop else { return }
            let backend = EvBackend.of(loop)
            for (token, events) in backend.descriptors?.collect() ?? [] { backend.noteReady(token, events) }
        }, descriptors.descriptor, Int32(EV_READ))
        ev_io_start(loop, watcher)
        self.descriptors = descriptors
        descriptorsWatcher = watcher
        return descriptors
    }

    /// Stops watching the descriptor set and closes it (teardown).
    func closeDescriptorSet() {
        guard let watcher = descriptorsWatcher else { return }
        ev_io_stop(loop, watcher)
        watcher.deallocate()
        descriptorsWatcher = nil
        descriptors = nil
    }

    func noteReady(_ token: Int, _ events: Int32) {
        if let index = ready.firstIndex(where: { $0.token == token }) {
            ready[index].events |= events
        } else {
            ready.append((token, events))
        }
        reasons.pointee |= WakeReasons.watcher.rawValue
        if events & Self.failed != 0 { stopWatcher(token) }  // e.g. the fd was closed: no busy loop
    }
}
