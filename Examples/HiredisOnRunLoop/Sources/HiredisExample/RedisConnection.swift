// README-HIREDIS-BEGIN
import CHiredis
import RunLoopKit

/// A hiredis async connection on the calling thread's run loop: hiredis's own libev adapter
/// attaches it to an EvLibevSource's libev loop, and its callbacks run on this thread, in the
/// loop's version-1 step, while a mode holding the source runs.
public final class RedisConnection {
    private let source = EvLibevSource()
    private var context: UnsafeMutablePointer<redisAsyncContext>?  // nil once hiredis freed it
    /// Why the connection failed or ended, if it did.
    public private(set) var error: String?

    public init(port: Int32, loop: EvRunLoop = .current, mode: EvRunLoop.Mode = .default) {
        loop.add(source, forMode: mode)
        let context = source.withEventLoop { evLoop in
            let context = redisAsyncConnect("127.0.0.1", port)!
            redisLibevAttach(evLoop, context)  // hiredis's adapter, on the loop's libev loop
            return context
        }
        self.context = context
        context.pointee.data = Unmanaged.passUnretained(self).toOpaque()
        redisAsyncSetConnectCallback(context) { context, status in
            if status != REDIS_OK { RedisConnection.of(context).ended(context, status) }
        }
        redisAsyncSetDisconnectCallback(context) { context, status in RedisConnection.of(context).ended(context, status) }
        // At close() or when the loop's thread exits, while the libev loop still exists. Forgotten
        // first: hiredis frees a connection still connecting without its disconnect callback.
        source.onDetach { _ in
            guard let context = self.context else { return }
            self.context = nil
            redisAsyncFree(context)
        }
    }

    /// Sends a command; `reply` runs on the loop's thread with the reply as text, or with nil if
    /// the connection ended first.
    public func send(_ arguments: [String], reply: @escaping (String?) -> Void = { _ in }) {
        guard let context else { return reply(nil) }
        let strings = arguments.map { strdup($0) }
        defer { strings.forEach { free($0) } }
        var argv = strings.map { UnsafePointer($0) }
        let handler = Unmanaged.passRetained(ReplyHandler(reply)).toOpaque()
        let sent = redisAsyncCommandArgv(context, { _, reply, handler in
            Unmanaged<ReplyHandler>.fromOpaque(handler!).takeRetainedValue().body(RedisConnection.text(of: reply))
        }, handler, Int32(arguments.count), &argv, arguments.map(\.utf8.count))
        if sent != REDIS_OK { Unmanaged<ReplyHandler>.fromOpaque(handler).takeRetainedValue().body(nil) }
    }

    /// Lets the connection go (loop's thread): hiredis frees it, pending replies get nil.
    public func close() { source.invalidate() }

    /// Whether the connection is up or still connecting: false once it failed, ended or was closed.
    public var isOpen: Bool { context != nil }

    private func ended(_ context: UnsafePointer<redisAsyncContext>?, _ status: Int32) {
        if status != REDIS_OK { error = context?.pointee.errstr.map { String(cString: $0) } }
        self.context = nil  // hiredis frees it after this callback
    }

    private static func of(_ context: UnsafePointer<redisAsyncContext>?) -> RedisConnection {
        Unmanaged.fromOpaque(context!.pointee.data).takeUnretainedValue()
    }

    private static func text(of reply: UnsafeMutableRawPointer?) -> String? {
        guard let reply = reply?.assumingMemoryBound(to: redisReply.self).pointee else { return nil }
        switch reply.type {
        case REDIS_REPLY_INTEGER: return String(reply.integer)
        case REDIS_REPLY_NIL: return "(nil)"
        default: return reply.str.map { String(cString: $0) }  // a string, a status, an error
        }
    }
}

private final class ReplyHandler {
    let body: (String?) -> Void
    init(_ body: @escaping (String?) -> Void) { self.body = body }
}

/// SET, then GET, through Redis on 127.0.0.1:`port`, on the calling thread's run loop.
public func greeting(fromRedisOn port: Int32) -> String? {
    let redis = RedisConnection(port: port)
    var greeting: String?
    redis.send(["SET", "greeting", "hello"])
    redis.send(["GET", "greeting"]) { reply in
        greeting = reply
        EvRunLoop.current.stop()
    }
    EvRunLoop.current.run(mode: .default, timeout: .seconds(10))
    redis.close()
    return greeting
}
// README-HIREDIS-END
