import Foundation

/// python3's `http.server` for a test: serves a directory of its own on 127.0.0.1, on a port the
/// kernel chose (the server prints it once it listens), until ``stop()`` or release.
public final class HTTPTestServer: Sendable {
    public struct StartError: Error, CustomStringConvertible {
        public let description: String
    }

    /// The port it listens on, on 127.0.0.1.
    public let port: Int
    /// The directory it serves.
    public let directory: URL
    private let process: Process

    private init(port: Int, directory: URL, process: Process) {
        self.port = port
        self.directory = directory
        self.process = process
    }

    /// Starts a server serving `files` (name and size in bytes) and returns once it listens.
    public static func start(files: [String: Int]) throws -> HTTPTestServer {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("curl-on-runloop-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        for (name, size) in files {
            let bytes = (0..<size).map { UInt8(truncatingIfNeeded: $0) }
            try Data(bytes).write(to: directory.appendingPathComponent(name))
        }
        let script = """
            import http.server, os, sys
            os.chdir(sys.argv[1])
            class Handler(http.server.SimpleHTTPRequestHandler):
                def log_message(self, *args): pass
            class Server(http.server.ThreadingHTTPServer):
                request_queue_size = 256  # the default 5 drops the SYNs of many connects at once
            server = Server(("127.0.0.1", 0), Handler)
            print(server.server_address[1], flush=True)
            server.serve_forever()
            """
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = ["-c", script, directory.path]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        var line = Data()
        while let byte = try output.fileHandleForReading.read(upToCount: 1), !byte.isEmpty, byte != Data("\n".utf8) {
            line += byte
        }
        guard let port = Int(String(decoding: line, as: UTF8.self)) else {
            process.terminate()
            throw StartError(description: "python3's http.server did not start")
        }
        return HTTPTestServer(port: port, directory: directory, process: process)
    }

    /// The URL of `name` on this server.
    public func url(_ name: String) -> String { "http://127.0.0.1:\(port)/\(name)" }

    /// Stops the server (SIGKILL: a child of a dispatch thread may start with SIGTERM blocked) and
    /// removes its directory. Idempotent.
    public func stop() {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        try? FileManager.default.removeItem(at: directory)
    }

    deinit { stop() }
}
