internal import CHiredis
import RunLoopKit

/// The loads of scenario hiredis: round trips sent all at once, or each from the previous
/// reply's callback.
public enum HiredisLoad: String, CaseIterable, Sendable {
    case pipelined, sequential
}

/// The loops scenario hiredis compares.
public enum HiredisLoop: Sendable {
    /// An EvLibevSource of the calling thread's EvRunLoop, running its default mode.
    case runLoopKit
    /// A plain libev loop, as a C program would use it: `ev_loop_new`, `ev_run`.
    case libev
}

/// Round trips per second through hiredis's async client on `loop`, made on the calling thread
/// (a fresh one, so the loop is too): `count` SET and GET in turn against 127.0.0.1:`port`,
/// timed with `clock` (nanoseconds) from the first command to the last reply, the connection
/// made before. NaN if a reply was wrong or the connection failed.
public func hiredisRoundTrips(on loop: HiredisLoop, port: Int32, load: HiredisLoad, count: Int, clock: () -> UInt64) -> Double {
    switch loop {
    case .runLoopKit:
        let runLoop = EvRunLoop.current
        let source = EvLibevSource()
        runLoop.add(source, forMode: .default)
        let client = source.withEventLoop { HiredisClient(port: port, evLoop: $0) }
        source.onDetach { _ in client.close() }
        while !client.connected && !client.failed {
            runLoop.run(mode: .default, timeout: .seconds(10), returnAfterSourceHandled: true)
        }
        client.done = { runLoop.stop() }
        let start = clock()
        client.start(load, count: count)
        runLoop.run(mode: .default)  // until done() stops it
        let elapsed = clock() - start
        let right = client.connected && client.wrong == 0 && client.finished
        source.invalidate()
        return right ? Double(count) / (Double(elapsed) / 1e9) : .nan
    case .libev:
        let evLoop = ev_loop_new(UInt32(EVBACKEND_EPOLL))!
        let client = HiredisClient(port: port, evLoop: evLoop)
        while !client.connected && !client.failed { ev_run(evLoop, Int32(EVRUN_ONCE)) }
        client.done = { ev_break(evLoop, Int32(EVBREAK_ALL)) }
        let start = clock()
        client.start(load, count: count)
        ev_run(evLoop, 0)
        let elapsed = clock() - start
        let right = client.connected && client.wrong == 0 && client.finished
        client.close()
        ev_loop_destroy(evLoop)
        return right ? Double(count) / (Double(elapsed) / 1e9) : .nan
    }
}

/// One hiredis async connection, driven the same way on either loop: commands preformatted in
/// Redis's protocol, sent all at once (pipelined) or each from the previous reply's callback
/// (sequential), every reply checked. Callbacks are C functions with the client as their
/// private data, so no closure is made per command. Loop's thread only.
final class HiredisClient {
    private static let set = Array("*3\r\n$3\r\nSET\r\n$10\r\nbench:key1\r\n$5\r\nvalue\r\n".utf8CString)
    private static let get = Array("*2\r\n$3\r\nGET\r\n$10\r\nbench:key1\r\n".utf8CString)

    private let context: UnsafeMutablePointer<redisAsyncContext>
    private(set) var connected = false
    private(set) var failed = false
    /// Replies not in yet, commands not sent yet (sequential), replies that were wrong.
    private var outstanding = 0
    private var unsent = 0
    private(set) var wrong = 0
    private var sendsSet = true
    /// Called on the loop's thread when the last reply is in.
    var done: () -> Void = {}

    var finished: Bool { outstanding == 0 }

    /// A connection to 127.0.0.1:`port`, attached with hiredis's libev adapter to `evLoop`.
    init(port: Int32, evLoop: OpaquePointer) {
        context = redisAsyncConnect("127.0.0.1", port)
        context.pointee.data = Unmanaged.passUnretained(self).toOpaque()
        redisLibevAttach(evLoop, context)
        redisAsyncSetConnectCallback(context) { context, status in
            let client = HiredisClient.of(context)
            if status == REDIS_OK { client.connected = true } else { client.failed = true }
        }
    }

    /// Sends `count` round trips (SET and GET in turn): all now, or one per reply.
    func start(_ load: HiredisLoad, count: Int) {
        outstanding = count
        unsent = count
        switch load {
        case .pipelined: while unsent > 0 { sendNext() }
        case .sequential: sendNext()
        }
    }

    /// Lets the connection go (hiredis stops its watchers and frees it).
    func close() { redisAsyncFree(context) }

    private func sendNext() {
        unsent -= 1
        let command = sendsSet ? Self.set : Self.get
        let expected = UnsafeMutableRawPointer(bitPattern: sendsSet ? 1 : 2)
        sendsSet.toggle()
        command.withUnsafeBufferPointer { bytes in
            _ = redisAsyncFormattedCommand(context, { context, reply, expected in
                HiredisClient.of(UnsafePointer(context)).replied(reply, setReply: Int(bitPattern: expected) == 1)
            }, expected, bytes.baseAddress, bytes.count - 1)
        }
    }

    private func replied(_ raw: UnsafeMutableRawPointer?, setReply: Bool) {
        let reply = raw?.assumingMemoryBound(to: redisReply.self).pointee
        let right = setReply
            ? reply?.type == REDIS_REPLY_STATUS && reply?.len == 2
            : reply?.type == REDIS_REPLY_STRING && reply?.len == 5
        if !right { wrong += 1 }
        outstanding -= 1
        if unsent > 0 && outstanding == unsent { sendNext() }  // sequential: the next one
        if outstanding == 0 { done() }
    }

    private static func of(_ context: UnsafePointer<redisAsyncContext>?) -> HiredisClient {
        Unmanaged.fromOpaque(context!.pointee.data).takeUnretainedValue()
    }
}
