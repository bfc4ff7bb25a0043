/// Every run loop's own descriptors in the process: libev's epoll fd, the wake-up eventfd, the
/// timerfd and the ``DescriptorSet``'s epoll fd, and the process's ``FileRegister``.
///
/// A file-descriptor source for one of them would corrupt its loop: libev's epoll set inside the
/// loop's ``DescriptorSet`` makes libev's own `epoll_ctl` fail with `ELOOP` (Debian's libev
/// asserts), and a caller reading the eventfd or timerfd would steal wake-ups. So
/// `EvFileDescriptorSource` refuses them, and ``DescriptorSet`` reports them failed should the
/// number have become internal after the source was made. A number leaves the set before it is
/// closed, so a caller never sees a closed number refused.
///
/// A bit per descriptor number, in words that grow to the highest number marked: descriptors
/// are small numbers, so this is a few bytes per loop, with no hashing, no temporary collection
/// per call, and no resizing code that first runs only once a process has many loops.
enum InternalDescriptors {
    private static let words = Locked<[UInt64]>([])

    /// Marks `fd` (≥ 0) as internal.
    static func insert(_ fd: Int32) {
        let (word, bit) = position(of: fd)
        words.withLock { words in
            if word >= words.count {
                // At least double, so that a process opening loop after loop grows it rarely.
                let wanted = max(word + 1, 2 * words.count, 16)
                words.append(contentsOf: repeatElement(0, count: wanted - words.count))
            }
            words[word] |= bit
        }
    }

    /// Unmarks `fd`; a negative number (a descriptor that was never made) is skipped.
    static func remove(_ fd: Int32) {
        guard fd >= 0 else { return }
        let (word, bit) = position(of: fd)
        words.withLock { words in
            if word < words.count { words[word] &= ~bit }
        }
    }

    /// Whether `fd` is one of a run loop's own descriptors.
    static func contains(_ fd: Int32) -> Bool {
        guard fd >= 0 else { return false }
        let (word, bit) = position(of: fd)
        return words.withLock { word < $0.count && $0[word] & bit != 0 }
    }

    private static func position(of fd: Int32) -> (word: Int, bit: UInt64) {
        (Int(fd) >> 6, 1 << UInt64(fd & 63))
    }
}

extension EvBackend {
    /// Whether `fd` is one of a run loop's own descriptors, which no source may watch.
    static func isInternalDescriptor(_ fd: Int32) -> Bool { InternalDescriptors.contains(fd) }
}
