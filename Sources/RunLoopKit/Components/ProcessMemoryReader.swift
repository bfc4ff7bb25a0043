#if canImport(Runtime)
@_spi(MemoryReaders) import Runtime
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Reads this process's memory through `process_vm_readv(2)`, so that reading an address that
/// was unmapped meanwhile fails (`EFAULT`) instead of crashing the process; the Runtime module's
/// ImageMap capture reads the loaded images' ELF headers through it (see
/// ``EvStallBacktrace``). Uncached on purpose: the Runtime's caching reader leaks its page
/// whenever a read fails.
struct ProcessMemoryReader: MemoryReader {
    /// A read of memory that is not (or no longer) mapped, or a C library without the call.
    struct ReadFailure: Error {}

    func fetch(from address: UInt64, into buffer: UnsafeMutableRawBufferPointer) throws {
        guard buffer.count > 0 else { return }
        guard let read = GNUExtensions.readProcessMemory else { throw ReadFailure() }
        var local = iovec(iov_base: buffer.baseAddress, iov_len: buffer.count)
        var remote = iovec(iov_base: UnsafeMutableRawPointer(bitPattern: UInt(address)), iov_len: buffer.count)
        guard read(getpid(), &local, 1, &remote, 1, 0) == buffer.count else { throw ReadFailure() }
    }
}
#endif
