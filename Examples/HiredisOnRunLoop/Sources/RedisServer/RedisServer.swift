import Foundation

/// A redis-server of its own for a test, an example or a benchmark: started on 127.0.0.1 on a
/// free port with persistence off (`--save "" --appendonly no`), ready when `start()` returns,
/// stopped by ``stop()`` (or when released).
public final class RedisServer: Sendable {
    /// Failures to start one.
    public struct StartError: Error, CustomStringConvertible {
        public let description: String
    }

    /// The port it listens on, on 127.0.0.1.
    public let port: Int32
    private let process: Process

    private init(port: Int32, process: Process) {
        self.port = port
        self.process = process
    }

    /// Starts a server and returns once it accepts connections (its log says so). A port taken
    /// between choosing it and the server's bind is tried again with another.
    public static func start() throws -> RedisServer {
        var lastLog = ""
        for _ in 0..<5 {
            let port = try freePort()
            let process = Process()
            process.executableURL = try executable()
            process.arguments = [
                "--port", "\(port)", "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                "--dir", FileManager.default.temporaryDirectory.path, "--logfile", "",
            ]
            let output = Pipe()
            process.standardOutput = output
            process.standardError = output
            try process.run()
            let (ready, log) = waitUntilReady(output.fileHandleForReading)
            if ready {
                // Drained until the server exits, so that its log never fills the pipe.
                let reader = output.fileHandleForReading
                Thread.detachNewThread { while !reader.availableData.isEmpty {} }
                return RedisServer(port: port, process: process)
            }
            process.waitUntilExit()
            lastLog = log
        }
        throw StartError(description: "redis-server did not start: \(lastLog)")
    }

    /// Stops the server and waits for it to exit. Idempotent. Asked with `SHUTDOWN NOSAVE`, not
    /// SIGTERM: a child of a dispatch thread starts with that thread's signals blocked.
    public func stop() {
        guard process.isRunning else { return }
        if !shutDown() { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }

    /// Sends `SHUTDOWN NOSAVE` and reads until the server closes the connection as it exits.
    private func shutDown() -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        let connected = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
        let command = Array("SHUTDOWN NOSAVE\r\n".utf8)
        guard connected, send(fd, command, command.count, 0) == command.count else { return false }
        var byte: UInt8 = 0
        while recv(fd, &byte, 1, 0) > 0 {}
        return true
    }

    deinit { stop() }

    /// A TCP port on 127.0.0.1 that nothing listens on now: the kernel's choice for a socket
    /// bound to port 0, closed again.
    public static func freePort() throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw StartError(description: "socket: errno \(errno)") }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                bind(fd, address, length) == 0 && getsockname(fd, address, &length) == 0
            }
        }
        guard bound else { throw StartError(description: "bind: errno \(errno)") }
        return Int32(UInt16(bigEndian: address.sin_port))
    }

    /// redis-server on the `PATH`.
    private static func executable() throws -> URL {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        for directory in path.split(separator: ":").map(String.init) + ["/usr/sbin", "/usr/bin"] {
            let candidate = URL(fileURLWithPath: directory).appendingPathComponent("redis-server")
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
        }
        throw StartError(description: "redis-server is not installed (apt-get install redis-server)")
    }

    /// Reads the server's log until it accepts connections (true) or exits (false, with the log).
    private static func waitUntilReady(_ reader: FileHandle) -> (Bool, String) {
        var log = ""
        while true {
            let data = reader.availableData
            guard !data.isEmpty else { return (false, log) }
            log += String(decoding: data, as: UTF8.self)
            if log.contains("Ready to accept connections") { return (true, log) }
        }
    }
}
