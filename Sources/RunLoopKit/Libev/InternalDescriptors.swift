/// Every run loop's own descriptors in the process: libev's epoll fd, the wake-up eventfd, the
/// timerfd and the ``DescriptorSet``'s epoll fd.
///
/// A file-descriptor source for one of them would corrupt its loop: libev's epoll set inside the
/// loop's ``DescriptorSet`` makes libev's own `epoll_ctl` fail with `ELOOP` (Debian's libev
/// asserts), and a caller reading the eventfd or timerfd would steal wake-ups. So
/// `EvFileDescriptorSource` refuses them, and ``DescriptorSet`` reports them failed should the
/// number have become internal after the source was made. A number leaves the set before it is
/// closed, so a caller never sees a closed number refused.
enum InternalDescriptors {
    private static let descriptors = Locked<Set<Int32>>([])

    static func insert(_ fds: [Int32]) {
        descriptors.withLock { $0.formUnion(fds) }
    }

    static func remove(_ fds: [Int32]) {
        descriptors.withLock { $0.subtract(fds) }
    }

    /// Whether `fd` is one of a run loop's own descriptors.
    static func contains(_ fd: Int32) -> Bool {
        descriptors.withLock { $0.contains(fd) }
    }
}

extension EvBackend {
    /// Whether `fd` is one of a run loop's own descriptors, which no source may watch.
    static func isInternalDescriptor(_ fd: Int32) -> Bool { InternalDescriptors.contains(fd) }
}
