import CLibev
import Foundation
import RunLoopKit

/// Watchers started on an ``EvLibevSource``'s libev loop the way a libev library starts its own:
/// an `ev_io` or an `ev_timer` whose C callback calls a Swift closure. Made, started, stopped and
/// called on the loop's thread only.
final class LibraryWatcher {
    enum Kind {
        case readable(Int32)
        case timer(seconds: Double)
    }

    private let io: UnsafeMutablePointer<ev_io>?
    private let timer: UnsafeMutablePointer<ev_timer>?
    private let onEvent: () -> Void

    init(_ kind: Kind, onEvent: @escaping () -> Void) {
        self.onEvent = onEvent
        switch kind {
        case .readable(let fd):
            io = .allocate(capacity: 1)
            timer = nil
            clibev_io_init(io, { _, watcher, _ in LibraryWatcher.fire(watcher) }, fd, Int32(EV_READ))
        case .timer(let seconds):
            io = nil
            timer = .allocate(capacity: 1)
            clibev_timer_init(timer, { _, watcher, _ in LibraryWatcher.fire(watcher) }, seconds, 0)
        }
        let me = Unmanaged.passUnretained(self).toOpaque()
        if let io { clibev_set_data(io, me) }
        if let timer { clibev_set_data(timer, me) }
    }

    private static func fire<Watcher>(_ watcher: UnsafeMutablePointer<Watcher>?) {
        guard let watcher else { return }
        Unmanaged<LibraryWatcher>.fromOpaque(clibev_get_data(watcher)).takeUnretainedValue().onEvent()
    }

    func start(_ evLoop: OpaquePointer) {
        if let io { ev_io_start(evLoop, io) }
        if let timer { ev_timer_start(evLoop, timer) }
    }

    func stop(_ evLoop: OpaquePointer) {
        if let io { ev_io_stop(evLoop, io) }
        if let timer { ev_timer_stop(evLoop, timer) }
    }

    var isActive: Bool { clibev_is_active(io.map(UnsafeMutableRawPointer.init) ?? UnsafeMutableRawPointer(timer!)) != 0 }

    deinit {
        io?.deallocate()
        timer?.deallocate()
    }
}

/// A pipe whose read end a test watches; closed on deinit.
final class TestPipe: Sendable {
    let readEnd: Int32
    let writeEnd: Int32

    init() {
        var fds: [Int32] = [0, 0]
        precondition(pipe(&fds) == 0)
        (readEnd, writeEnd) = (fds[0], fds[1])
    }

    func writeByte() {
        var byte: UInt8 = 1
        precondition(write(writeEnd, &byte, 1) == 1)
    }

    func readByte() {
        var byte: UInt8 = 0
        _ = read(readEnd, &byte, 1)
    }

    deinit {
        close(readEnd)
        close(writeEnd)
    }
}
