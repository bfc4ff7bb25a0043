import Foundation

/// What the kernel says a thread of this process is doing, read from /proc/self/task/TID.
public enum ThreadProbe {
    /// The calling thread's kernel id.
    public static func currentThreadID() -> Int32 {
        let link = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/thread-self")) ?? ""
        return Int32(link.split(separator: "/").last ?? "") ?? -1
    }

    /// The epoll descriptor thread `tid` is asleep on (state S, inside `epoll_wait` or
    /// `epoll_pwait`: the call's first argument), or `nil` when it is not asleep there.
    public static func epollWaitDescriptor(of tid: Int32) -> Int32? {
        guard let stat = read("stat", of: tid), let close = stat.lastIndex(of: ")"),
            stat[stat.index(after: close)...].hasPrefix(" S"),
            let syscall = read("syscall", of: tid)
        else { return nil }
        let fields = syscall.split(separator: " ")
        guard fields.count > 1, let number = Int(fields[0]), epollWaitCalls.contains(number),
            let descriptor = Int32(fields[1].dropFirst(2), radix: 16)
        else { return nil }
        return descriptor
    }

    /// The descriptors the epoll instance at `epoll` watches, from the kernel's fdinfo; empty
    /// when `epoll` is not an open epoll instance.
    public static func epollTargets(of epoll: Int32) -> [Int32] {
        guard let info = procFileText("/proc/self/fdinfo/\(epoll)") else { return [] }
        return info.split(separator: "\n").compactMap { line in
            line.hasPrefix("tfd:") ? line.dropFirst(4).split(separator: " ").first.flatMap { Int32($0) } : nil
        }
    }

    /// Whether the epoll instance at `epoll` watches `target`, directly or through one epoll
    /// instance it watches (an embedded libev loop's).
    public static func epoll(_ epoll: Int32, watches target: Int32) -> Bool {
        let targets = epollTargets(of: epoll)
        return targets.contains(target) || targets.contains { epollTargets(of: $0).contains(target) }
    }

    /// What the eventfd at `descriptor` holds, not read yet (the kernel's "eventfd-count");
    /// `nil` when it is not an open eventfd.
    public static func eventfdCount(of descriptor: Int32) -> UInt64? {
        fdinfoField("eventfd-count:", of: descriptor, radix: 16)
    }

    /// The expirations of the timerfd at `descriptor` not read yet (the kernel's "ticks");
    /// `nil` when it is not an open timerfd.
    public static func timerfdTicks(of descriptor: Int32) -> UInt64? {
        fdinfoField("ticks:", of: descriptor, radix: 10)
    }

    private static func fdinfoField(_ name: String, of descriptor: Int32, radix: Int) -> UInt64? {
        guard let info = procFileText("/proc/self/fdinfo/\(descriptor)") else { return nil }
        let line = info.split(separator: "\n").first { $0.hasPrefix(name) }
        return line.flatMap { UInt64($0.dropFirst(name.count).trimmingCharacters(in: .whitespaces), radix: radix) }
    }

    /// The system call numbers of `epoll_wait` and `epoll_pwait` (`epoll_pwait2` is not libev's).
    private static var epollWaitCalls: Set<Int> {
        #if arch(x86_64)
        [232, 281]
        #elseif arch(arm64)
        [22]
        #else
        []
        #endif
    }

    private static func read(_ name: String, of tid: Int32) -> String? {
        procFileText("/proc/self/task/\(tid)/\(name)")
    }
}
