#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The text of a file under /proc, read with `open` and `read`; `nil` if it cannot be read.
///
/// Not `String(contentsOfFile:)`: a /proc file says its size is zero and may vanish while it is
/// read (the fdinfo of a descriptor closed meanwhile, a thread's files once it exits), and
/// Foundation's reader then fails with a buffer it never frees, which LeakSanitizer reports.
public func procFileText(_ path: String) -> String? {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { return nil }
    defer { close(fd) }
    var bytes: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 4096)
    while true {
        let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        if count < 0 && errno == EINTR { continue }
        guard count >= 0 else { return nil }
        if count == 0 { return String(decoding: bytes, as: UTF8.self) }
        bytes += chunk[..<count]
    }
}
