import Foundation

/// A TCP connection over 127.0.0.1 made in-process for tests that need a real peer: the
/// accepted (server) end, non-blocking, and the client end. A listener on a free port is made
/// for it and closed again.
struct LoopbackConnection {
    let server: Int32
    let client: Int32

    init() {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        precondition(listener >= 0, "socket: errno \(errno)")
        defer { close(listener) }
        var address = Self.loopback(port: 0)
        precondition(Self.withSocketAddress(&address) { bind(listener, $0, $1) } == 0, "bind: errno \(errno)")
        precondition(listen(listener, 1) == 0, "listen: errno \(errno)")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &length) }
        }
        let client = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        precondition(Self.withSocketAddress(&address) { connect(client, $0, $1) } == 0, "connect: errno \(errno)")
        self.client = client
        server = accept(listener, nil, nil)
        precondition(server >= 0, "accept: errno \(errno)")
        _ = fcntl(server, F_SETFL, O_NONBLOCK)
    }

    /// Closes the client end with a reset (RST) instead of an orderly FIN.
    func resetClient() {
        var option = linger(l_onoff: 1, l_linger: 0)
        setsockopt(client, SOL_SOCKET, SO_LINGER, &option, socklen_t(MemoryLayout<linger>.size))
        close(client)
    }

    private static func loopback(port: UInt16) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return address
    }

    private static func withSocketAddress(_ address: inout sockaddr_in, _ body: (UnsafePointer<sockaddr>, socklen_t) -> Int32) -> Int32 {
        withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
    }
}
