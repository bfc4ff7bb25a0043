#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// How a loop learns libev's epoll descriptor (libev does not tell it), so that
/// ``InternalDescriptors`` can refuse it to callers.
extension EvBackend {
    /// A library called `ev_loop_fork` on its loop (queued its fork watchers, the embedding's
    /// among them): before the poll, libev closes that loop's epoll set and makes another, and
    /// the embedding's fork callback does the same to this loop's. Their numbers stop being the
    /// loop's own now, before they are closed, as at destroy.
    func releaseEpollNumbers(_ library: LibraryLoop) {
        for fd in [backendFD, library.backendFD] { InternalDescriptors.remove(fd) }
        (backendFD, library.backendFD) = (-1, -1)
        library.epollSetsRemade = true
    }

    /// Just before the poll that follows: this loop's new epoll set is the descriptor the
    /// embedding watches (libev's `ev_embed_start` takes it), and the libraries' the set that
    /// watches it.
    func claimEpollNumbers(_ library: LibraryLoop) {
        library.epollSetsRemade = false
        backendFD = library.embedIO.pointee.fd
        library.backendFD = Self.backendDescriptor(expected: backendFD, holding: backendFD)
        for fd in [backendFD, library.backendFD] where fd >= 0 { InternalDescriptors.insert(fd) }
    }

    /// libev's epoll descriptor: the number nearest `expected` (the lowest free number just
    /// before `ev_loop_new`) whose epoll instance watches this loop's wake-up eventfd `wake`,
    /// which only libev's epoll set of this loop can (no source may watch a loop's own
    /// descriptor). Other threads open and close descriptors meanwhile, so `epoll_create1` may
    /// have taken a number above `expected` or one freed below it: up to ``epollSearchSpan``
    /// numbers either side are looked at, nearest first; when more moved (a thousand loops made
    /// at once), every epoll instance the process has open. None found: -1, and this loop's
    /// epoll descriptor stays unknown to ``InternalDescriptors`` rather than a number that
    /// belongs to someone else being refused to every caller.
    ///
    /// The near search makes no heap allocation (a stack buffer, bytes parsed by hand): every
    /// loop makes this call, and what its thread allocates and frees here would stay resident in
    /// that thread's malloc arena.
    static func backendDescriptor(expected: Int32, holding wake: Int32) -> Int32 {
        guard expected >= 0 else { return -1 }
        return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 512) { buffer -> Int32 in
            for distance in 0...epollSearchSpan {
                let below = expected - distance
                if below >= 0 && epollInstance(below, watches: wake, buffer) { return below }
                let above = expected + distance
                if distance > 0 && epollInstance(above, watches: wake, buffer) { return above }
            }
            let searched = (expected - epollSearchSpan)...(expected + epollSearchSpan)
            return openEpollInstances(skipping: searched).first { epollInstance($0, watches: wake, buffer) } ?? -1
        }
    }

    /// The descriptors in `/proc/self/fd` that are epoll instances, less those in `skipping`.
    private static func openEpollInstances(skipping: ClosedRange<Int32>) -> [Int32] {
        numberedEntries(of: "/proc/self/fd").filter { !skipping.contains($0) && anonymousInode(of: $0) == "[eventpoll]" }
    }

    /// The names in directory `path` that are numbers (in `/proc/self/fd`, the open descriptors).
    static func numberedEntries(of path: String) -> [Int32] {
        guard let directory = opendir(path) else { return [] }
        defer { closedir(directory) }
        var found: [Int32] = []
        while let entry = readdir(directory) {
            // The name in place, up to its NUL: a record is shorter than `dirent` when its name is.
            let name = String(cString: (UnsafeRawPointer(entry) + direntNameOffset).assumingMemoryBound(to: CChar.self))
            if let number = Int32(name) { found.append(number) }
        }
        return found
    }

    private static let direntNameOffset = MemoryLayout<dirent>.offset(of: \dirent.d_name)!

    /// Held from the creation of a loop's descriptors to libev's `epoll_create1` (the loop's
    /// eventfd, the note of the lowest free number, `ev_loop_new`), here and for the libev
    /// libraries' loop: loops made by many threads at once (a group of a thousand) would
    /// otherwise take each other's numbers in between, and send each other to the slow search.
    static let descriptorNumbering = Locked<Void>(())

    /// The lowest free descriptor number, as `epoll_create1` would take it now (a `dup` of
    /// `descriptor`, closed again); -1 if none is free.
    static func lowestFreeDescriptor(duplicating descriptor: Int32) -> Int32 {
        let lowest = dup(descriptor)
        if lowest >= 0 { close(lowest) }
        return lowest
    }

    /// How far from the expected number libev's epoll descriptor is looked for: how many
    /// descriptors other threads may open or close between the two moments.
    static let epollSearchSpan: Int32 = 64

    /// Whether the epoll instance at `epoll` watches `target`, read from the kernel's fdinfo
    /// with `buffer` as scratch. False when `epoll` is not open or is not an epoll instance.
    private static func epollInstance(_ epoll: Int32, watches target: Int32, _ buffer: UnsafeMutableBufferPointer<UInt8>) -> Bool {
        // "/proc/self/fdinfo/<epoll>", NUL-terminated.
        var length = 0
        let prefix: StaticString = "/proc/self/fdinfo/"
        prefix.withUTF8Buffer { bytes in
            for byte in bytes { buffer[length] = byte; length += 1 }
        }
        length += writeDecimal(epoll, into: UnsafeMutableBufferPointer(rebasing: buffer[length...]))
        buffer[length] = 0
        let file = buffer.withMemoryRebound(to: CChar.self) { open($0.baseAddress!, O_RDONLY | O_CLOEXEC) }
        guard file >= 0 else { return false }
        defer { close(file) }
        // One read: libev's set watches one descriptor yet, well within the buffer. A set that
        // someone else's thread made at this number may be cut short: then the eventfd is not
        // found, and the number is not taken.
        var count = read(file, buffer.baseAddress, buffer.count)
        while count < 0 && errno == EINTR { count = read(file, buffer.baseAddress, buffer.count) }
        guard count > 0 else { return false }
        // An epoll instance lists each watched descriptor as "tfd: <spaces><number> events: …".
        let tag: StaticString = "tfd:"
        var lineStart = 0
        while lineStart < count {
            var lineEnd = lineStart
            while lineEnd < count && buffer[lineEnd] != UInt8(ascii: "\n") { lineEnd += 1 }
            let isTarget = lineEnd - lineStart > tag.utf8CodeUnitCount
                && tag.withUTF8Buffer { tagBytes in tagBytes.indices.allSatisfy { buffer[lineStart + $0] == tagBytes[$0] } }
            if isTarget {
                var index = lineStart + tag.utf8CodeUnitCount
                while index < lineEnd && buffer[index] == UInt8(ascii: " ") { index += 1 }
                var number: Int32 = 0
                var digits = 0
                while index < lineEnd, buffer[index] >= UInt8(ascii: "0"), buffer[index] <= UInt8(ascii: "9"), digits < 10 {
                    number = number &* 10 &+ Int32(buffer[index] - UInt8(ascii: "0"))
                    index += 1
                    digits += 1
                }
                if digits > 0 && number == target { return true }
            }
            lineStart = lineEnd + 1
        }
        return false
    }

    /// Writes `value` (not negative) in decimal at the start of `buffer`; returns how many bytes.
    private static func writeDecimal(_ value: Int32, into buffer: UnsafeMutableBufferPointer<UInt8>) -> Int {
        var digits = 0
        var rest = value
        repeat {
            digits += 1
            rest /= 10
        } while rest > 0
        rest = value
        for index in stride(from: digits - 1, through: 0, by: -1) {
            buffer[index] = UInt8(ascii: "0") + UInt8(rest % 10)
            rest /= 10
        }
        return digits
    }
}
