import CLibev
import Foundation
import RunLoopKit

/// Watchers started on an ``EvLibevSource``'s libev loop the way a libev library starts its own:
/// an `ev_io`, `ev_timer`, `ev_prepare`, `ev_check`, `ev_fork`, `ev_cleanup`, `ev_async`, `ev_idle`
/// or `ev_periodic` whose C callback calls a Swift closure. Made, started, stopped and called on the loop's thread only.
final class LibraryWatcher {
    enum Kind {
        case readable(Int32)
        case timer(seconds: Double)
        case prepare
        case check
        case fork
        case cleanup
        /// An `ev_async`, which another thread may send (``sender(_:)``).
        case async
        case idle
        /// An `ev_periodic` on the wall clock: at `offset` plus whole `interval`s.
        case periodic(offset: Double, interval: Double)
    }

    private let kind: Kind
    private let watcher: UnsafeMutableRawPointer
    private let onEvent: () -> Void

    init(_ kind: Kind, onEvent: @escaping () -> Void) {
        self.kind = kind
        self.onEvent = onEvent
        switch kind {
        case .readable(let fd):
            watcher = Self.made { clibev_io_init($0, { _, watcher, _ in LibraryWatcher.fire(watcher) }, fd, Int32(EV_READ)) }
        case .timer(let seconds):
            watcher = Self.made { clibev_timer_init($0, { _, watcher, _ in LibraryWatcher.fire(watcher) }, seconds, 0) }
        case .prepare:
            watcher = Self.made { clibev_prepare_init($0) { _, watcher, _ in LibraryWatcher.fire(watcher) } }
        case .check:
            watcher = Self.made { clibev_check_init($0) { _, watcher, _ in LibraryWatcher.fire(watcher) } }
        case .fork:
            watcher = Self.made { clibev_fork_init($0) { _, watcher, _ in LibraryWatcher.fire(watcher) } }
        case .cleanup:
            watcher = Self.made { clibev_cleanup_init($0) { _, watcher, _ in LibraryWatcher.fire(watcher) } }
        case .async:
            watcher = Self.made { clibev_async_init($0) { _, watcher, _ in LibraryWatcher.fire(watcher) } }
        case .idle:
            watcher = Self.made { clibev_idle_init($0) { _, watcher, _ in LibraryWatcher.fire(watcher) } }
        case .periodic(let offset, let interval):
            watcher = Self.made { clibev_periodic_init($0, { _, watcher, _ in LibraryWatcher.fire(watcher) }, offset, interval) }
        }
        clibev_set_data(watcher, Unmanaged.passUnretained(self).toOpaque())
    }

    /// A watcher of libev's type `Watcher`, allocated and set up by `initialise`.
    private static func made<Watcher>(_ initialise: (UnsafeMutablePointer<Watcher>) -> Void) -> UnsafeMutableRawPointer {
        let watcher = UnsafeMutablePointer<Watcher>.allocate(capacity: 1)
        initialise(watcher)
        return UnsafeMutableRawPointer(watcher)
    }

    private static func fire<Watcher>(_ watcher: UnsafeMutablePointer<Watcher>?) {
        guard let watcher else { return }
        Unmanaged<LibraryWatcher>.fromOpaque(clibev_get_data(watcher)).takeUnretainedValue().onEvent()
    }

    func start(_ evLoop: OpaquePointer) {
        switch kind {
        case .readable: ev_io_start(evLoop, watcher.assumingMemoryBound(to: ev_io.self))
        case .timer: ev_timer_start(evLoop, watcher.assumingMemoryBound(to: ev_timer.self))
        case .prepare: ev_prepare_start(evLoop, watcher.assumingMemoryBound(to: ev_prepare.self))
        case .check: ev_check_start(evLoop, watcher.assumingMemoryBound(to: ev_check.self))
        case .fork: ev_fork_start(evLoop, watcher.assumingMemoryBound(to: ev_fork.self))
        case .cleanup: ev_cleanup_start(evLoop, watcher.assumingMemoryBound(to: ev_cleanup.self))
        case .async: ev_async_start(evLoop, watcher.assumingMemoryBound(to: ev_async.self))
        case .idle: ev_idle_start(evLoop, watcher.assumingMemoryBound(to: ev_idle.self))
        case .periodic: ev_periodic_start(evLoop, watcher.assumingMemoryBound(to: ev_periodic.self))
        }
    }

    func stop(_ evLoop: OpaquePointer) {
        switch kind {
        case .readable: ev_io_stop(evLoop, watcher.assumingMemoryBound(to: ev_io.self))
        case .timer: ev_timer_stop(evLoop, watcher.assumingMemoryBound(to: ev_timer.self))
        case .prepare: ev_prepare_stop(evLoop, watcher.assumingMemoryBound(to: ev_prepare.self))
        case .check: ev_check_stop(evLoop, watcher.assumingMemoryBound(to: ev_check.self))
        case .fork: ev_fork_stop(evLoop, watcher.assumingMemoryBound(to: ev_fork.self))
        case .cleanup: ev_cleanup_stop(evLoop, watcher.assumingMemoryBound(to: ev_cleanup.self))
        case .async: ev_async_stop(evLoop, watcher.assumingMemoryBound(to: ev_async.self))
        case .idle: ev_idle_stop(evLoop, watcher.assumingMemoryBound(to: ev_idle.self))
        case .periodic: ev_periodic_stop(evLoop, watcher.assumingMemoryBound(to: ev_periodic.self))
        }
    }

    var isActive: Bool { clibev_is_active(watcher) != 0 }
    var isPending: Bool { clibev_is_pending(watcher) != 0 }

    /// Drops the watcher's pending event (`ev_clear_pending`); returns its events, 0 if none.
    func clearPending(_ evLoop: OpaquePointer) -> Int32 {
        ev_clear_pending(evLoop, watcher)
    }

    /// Feeds `events` to the watcher, as a library that has an event for it at hand does.
    func feed(_ evLoop: OpaquePointer, _ events: Int32) {
        ev_feed_event(evLoop, watcher, events)
    }

    /// What another thread needs to send this `ev_async` on `evLoop` (kept alive by the caller).
    func sender(_ evLoop: OpaquePointer) -> AsyncSender {
        AsyncSender(evLoop: UInt(bitPattern: Int(bitPattern: UnsafeRawPointer(evLoop))), watcher: UInt(bitPattern: watcher))
    }

    deinit {
        watcher.deallocate()
    }
}

/// An `ev_async` and its loop, by address: `ev_async_send` is the one libev call a library may
/// make from any thread.
struct AsyncSender: Sendable {
    let evLoop: UInt
    let watcher: UInt

    func send() {
        ev_async_send(OpaquePointer(bitPattern: evLoop), UnsafeMutablePointer<ev_async>(bitPattern: watcher))
    }
}
