#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// glibc functions that Swift's `Glibc` module does not import (they sit behind `_GNU_SOURCE`),
/// looked up once with `dlsym`. Each is `nil` where the C library lacks it (musl has no
/// `pthread_sigqueue`, for one); callers then do without.
enum GNUExtensions {
    typealias SetName = @convention(c) (pthread_t, UnsafePointer<CChar>) -> Int32
    typealias GetAttributes = @convention(c) (pthread_t, UnsafeMutablePointer<pthread_attr_t>) -> Int32
    typealias SignalQueue = @convention(c) (pthread_t, Int32, sigval) -> Int32

    typealias GetName = @convention(c) (pthread_t, UnsafeMutablePointer<CChar>, Int) -> Int32
    typealias GetThreadID = @convention(c) () -> pid_t

    /// `pthread_setname_np(3)`.
    static let setThreadName: SetName? = symbol("pthread_setname_np")
    /// `pthread_getname_np(3)`.
    static let getThreadName: GetName? = symbol("pthread_getname_np")
    /// `gettid(2)`: the kernel's id of the calling thread (glibc 2.30 and later).
    static let threadID: GetThreadID? = symbol("gettid")
    /// `pthread_getattr_np(3)`: the attributes, stack bounds included, of a running thread.
    static let threadAttributes: GetAttributes? = symbol("pthread_getattr_np")
    /// `pthread_sigqueue(3)`: `pthread_kill` with a value the handler receives in `si_value`.
    static let signalQueue: SignalQueue? = symbol("pthread_sigqueue")
    typealias ReadProcessMemory = @convention(c) (
        pid_t, UnsafePointer<iovec>?, UInt, UnsafePointer<iovec>?, UInt, UInt
    ) -> Int
    /// `process_vm_readv(2)`: copies another (or this) process's memory, failing with `EFAULT`
    /// on an address that is not mapped instead of faulting.
    static let readProcessMemory: ReadProcessMemory? = symbol("process_vm_readv")

    private static func symbol<F>(_ name: String) -> F? {
        guard let address = dlsym(nil, name) else { return nil }
        return unsafeBitCast(address, to: F.self)
    }

    /// The calling thread's name (15 bytes at most), or `nil` if the C library cannot say.
    static func currentThreadName() -> String? {
        guard let getThreadName else { return nil }
        var buffer = [CChar](repeating: 0, count: 16)
        guard getThreadName(pthread_self(), &buffer, buffer.count) == 0 else { return nil }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The bounds `[low, high)` of `thread`'s stack, if the C library can say.
    static func stackBounds(of thread: pthread_t) -> (low: UInt, high: UInt)? {
        guard let threadAttributes else { return nil }
        var attributes = pthread_attr_t()
        guard threadAttributes(thread, &attributes) == 0 else { return nil }
        defer { pthread_attr_destroy(&attributes) }
        var base: UnsafeMutableRawPointer?
        var size = 0
        guard pthread_attr_getstack(&attributes, &base, &size) == 0, let base else { return nil }
        let low = UInt(bitPattern: base)
        return (low, low + UInt(size))
    }
}
