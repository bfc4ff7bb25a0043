import Foundation

/// What the kernel says a thread of this process is doing, read from /proc/self/task/TID.
public enum ThreadProbe {
    /// The calling thread's kernel id.
    public static func currentThreadID() -> Int32 {
        let link = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/thread-self")) ?? ""
        return Int32(link.split(separator: "/").last ?? "") ?? -1
    }

    /// Whether thread `tid` is asleep (state S) inside `epoll_wait` or `epoll_pwait`.
    public static func isAsleepInEpollWait(_ tid: Int32) -> Bool {
        guard let stat = read("stat", of: tid), let close = stat.lastIndex(of: ")"),
            stat[stat.index(after: close)...].hasPrefix(" S"),
            let syscall = read("syscall", of: tid), let number = Int(syscall.split(separator: " ").first ?? "")
        else { return false }
        #if arch(x86_64)
        return number == 232 || number == 281
        #elseif arch(arm64)
        return number == 22
        #else
        return true
        #endif
    }

    private static func read(_ name: String, of tid: Int32) -> String? {
        try? String(contentsOfFile: "/proc/self/task/\(tid)/\(name)", encoding: .utf8)
    }
}
