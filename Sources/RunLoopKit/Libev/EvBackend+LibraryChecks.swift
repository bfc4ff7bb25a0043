import CEpoll
import CLibev
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// What libev library code may not do on the libraries' loop, checked where libev lets it be
/// seen. The rest (`ev_run`, `ev_loop_destroy`, replaced callbacks) is caught in the loop's own
/// callbacks (EvBackend+LibraryLoop.swift); `ev_child` by libev's own assertion (child watchers
/// only in the default loop); `ev_break` does nothing here, since RunLoopKit's `ev_run` returns
/// after each poll anyway (one made before the poll is cancelled, EvBackend+LibraryLoop.swift);
/// calls from another thread cannot be seen at all.
extension EvBackend {
    /// After library code ran (callbacks, a `withEventLoop` body, a detach handler): the loop's
    /// userdata is still the ``LibraryLoop``, which its callbacks find through it.
    func checkLibraryCode(_ library: LibraryLoop, _ call: StaticString) {
        require(
            ev_userdata(library.loop) == Unmanaged.passUnretained(library).toOpaque(),
            "\(call): ev_set_userdata was called on the libev loop of an EvLibevSource; its userdata is RunLoopKit's")
    }

    /// The first poll after library code that may have started watchers (a `withEventLoop` body,
    /// a detach handler, every ``LibraryLoop/auditInterval``th batch of callbacks): the
    /// libraries' epoll set, as libev just made it, may hold neither one of a run loop's own
    /// descriptors (its epoll sets, eventfd or timerfd), which would take the loop's wake-ups,
    /// nor a `signalfd`, which is how libev's `ev_signal` takes a signal on this loop. The
    /// embedding's watcher of the run loop's own epoll set is the one allowed. A number listed
    /// for a file it no longer names (closed under it, open elsewhere) is not a watch of its own.
    func auditLibraryDescriptors(_ library: LibraryLoop) {
        library.auditDue = false
        guard library.backendFD >= 0 else { return }
        let embedded = library.embedIO.pointee.fd
        let entries = Self.descriptorsWatched(byEpoll: library.backendFD)
        // Only an anonymous-inode file can be a signalfd; those share the embedded epoll set's device.
        let anonymousDevice = entries.first { $0.fd == embedded }?.device
        for (fd, device) in entries where fd != embedded {
            let mayBeSignalfd = anonymousDevice == nil || device == nil || device == anonymousDevice
            let suspect = InternalDescriptors.contains(fd) || mayBeSignalfd && Self.anonymousInode(of: fd) == "[signalfd]"
            guard suspect, Self.epoll(library.backendFD, holdsFileOf: fd) else { continue }
            require(
                !InternalDescriptors.contains(fd),
                "EvLibevSource: a libev library watches descriptor \(fd), one of the run loop's own (an epoll set, eventfd or timerfd); it would take the loop's wake-ups")
            require(
                Self.anonymousInode(of: fd) != "[signalfd]",
                "EvLibevSource: a libev library watches a signal with ev_signal (libev's signalfd \(fd)); RunLoopKit owns signals: watch it with EvSignalSource")
        }
    }

    /// Whether the epoll instance `epoll` holds the file `fd` names now. The kernel keys an entry
    /// by file and number and keeps it while the file is open anywhere, and libev removes none
    /// when a watcher stops: a number listed in `/proc/self/fdinfo` may name another file since.
    /// Asked by adding it (`EEXIST`: there); an entry added for the question is removed at once.
    static func epoll(_ epoll: Int32, holdsFileOf fd: Int32) -> Bool {
        var event = epoll_event()
        guard retryingEINTR({ epoll_ctl(epoll, EPOLL_CTL_ADD, fd, &event) }) == 0 else { return errno == EEXIST }
        _ = retryingEINTR { epoll_ctl(epoll, EPOLL_CTL_DEL, fd, &event) }
        return false
    }

    /// The descriptors the epoll instance `epoll` watches, each with its file's device as the
    /// kernel writes it (`nil` if absent), from its `/proc/self/fdinfo` entry
    /// ("tfd: <number> events: … sdev:<hex>" per descriptor); empty if it cannot be read.
    static func descriptorsWatched(byEpoll epoll: Int32) -> [(fd: Int32, device: UInt64?)] {
        let file = open("/proc/self/fdinfo/\(epoll)", O_RDONLY | O_CLOEXEC)
        guard file >= 0 else { return [] }
        defer { close(file) }
        var text: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(file, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { break }
            text += chunk[0..<count]
        }
        var found: [(fd: Int32, device: UInt64?)] = []
        for line in text.split(separator: UInt8(ascii: "\n")) where line.starts(with: Array("tfd:".utf8)) {
            let digits = line.dropFirst(4).drop { $0 == UInt8(ascii: " ") }.prefix { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }
            guard let fd = Int32(String(decoding: digits, as: UTF8.self)) else { continue }
            found.append((fd, fieldValue(line, "sdev:").flatMap { UInt64($0, radix: 16) }))
        }
        return found
    }

    /// The text after `name` in `line`, up to the next space.
    private static func fieldValue(_ line: ArraySlice<UInt8>, _ name: String) -> String? {
        let key = Array(name.utf8)
        guard let start = line.indices.first(where: { line[$0...].starts(with: key) }) else { return nil }
        return String(decoding: line[(start + key.count)...].prefix { $0 != UInt8(ascii: " ") }, as: UTF8.self)
    }

    /// "[signalfd]", "[eventfd]", "[eventpoll]", … for an anonymous-inode descriptor (what
    /// `/proc/self/fd` links it to, less "anon_inode:"); `nil` for any other.
    static func anonymousInode(of fd: Int32) -> String? {
        var link = [CChar](repeating: 0, count: 64)
        let count = readlink("/proc/self/fd/\(fd)", &link, link.count - 1)
        guard count > 0 else { return nil }
        let target = String(decoding: link[0..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return target.hasPrefix("anon_inode:") ? String(target.dropFirst("anon_inode:".count)) : nil
    }
}
