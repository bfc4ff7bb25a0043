import Foundation
import RunLoopKit
import Synchronization
import Testing

// README-EXAMPLE-BEGIN
/// A worker thread with its own run loop: a repeating timer in the common modes, a source
/// signalled from another thread, and an observer of the run's phases.
func readmeExample() -> [String] {
    let log = Mutex<[String]>([])
    let loop = EvRunLoop.current

    // "tracking" joins the common modes, so `.common` items run there too.
    let tracking = EvRunLoop.Mode("tracking")
    loop.addCommonMode(tracking)

    let ticker = EvTimer(after: .milliseconds(1), interval: .milliseconds(1)) { timer in
        let ticks = log.withLock { $0.append("tick"); return $0.count { $0 == "tick" } }
        if ticks == 3 { timer.invalidate() }
    }
    loop.add(ticker, forMode: .common)

    // A version-0 source: signalled from any thread, performed on this one.
    let source = EvSource {
        log.withLock { $0.append("source") }
        EvRunLoop.current.stop()
    }
    loop.add(source, forMode: tracking)

    // Observers see the phases of each run.
    let observer = EvObserver(activities: [.entry, .exit]) { _, activity in
        log.withLock { $0.append("\(activity)") }
    }
    loop.add(observer, forMode: .common)

    // The third tick asks another thread to signal the source and wake the loop.
    let helper = EvObserver(activities: .beforeWaiting) { observer, _ in
        guard log.withLock({ $0.count { $0 == "tick" } }) == 3 else { return }
        observer.invalidate()
        Thread {
            source.signal()
            loop.wakeUp()
        }.start()
    }
    loop.add(helper, forMode: tracking)

    let result = loop.run(mode: tracking, timeout: .seconds(10))
    return log.withLock { $0 } + ["\(result)"]
}
// README-EXAMPLE-END

// README-SOURCES-BEGIN
/// Version-1 sources on the calling thread's loop: a message port, a file descriptor, a signal.
func readmeSources(reading fd: Int32) throws -> [String] {
    let log = Mutex<[String]>([])
    let loop = EvRunLoop.current
    let port = EvMessagePort<String> { message in log.withLock { $0.append("port: \(message)") } }
    loop.add(port, forMode: .default)  // an empty port keeps the loop alive
    try port.send("hello")  // from any thread; throws once invalidated or full (back-pressure)

    let input = try EvFileDescriptorSource(fileDescriptor: fd, events: .readable) { readiness in
        // On .error the number may name another file already: leave it alone.
        guard !readiness.contains(.error) else { return log.withLock { $0.append("fd: error") } }
        var byte: UInt8 = 0
        _ = read(fd, &byte, 1)  // drain it, or it stays readable
        log.withLock { $0.append("fd: readable") }
    }
    loop.add(input, forMode: .default)

    let hangUp = try EvSignalSource(signal: SIGHUP) { log.withLock { $0.append("signal: SIGHUP") } }
    loop.add(hangUp, forMode: .default)
    kill(getpid(), SIGHUP)  // delivered on this thread, in the loop's next iterations

    while log.withLock({ $0.count }) < 3 {
        loop.run(mode: .default, timeout: .seconds(10), returnAfterSourceHandled: true)
    }
    input.invalidate()
    hangUp.invalidate()
    return log.withLock { $0.sorted() }
}
// README-SOURCES-END

// README-LOOPBOUND-BEGIN
/// Loop-confined state without locks: a plain `var` and a non-`Sendable` class, captured by
/// handlers made on the loop's own thread; a box that other threads may hold but only the
/// loop's thread may open.
final class Connection { var bytesSeen = 0 }  // not Sendable

func readmeLoopBoundState() -> [Int] {
    let loop = EvRunLoop.current
    precondition(loop.isCurrent)  // allocation-free; true on the loop's own thread only
    var ticks = 0
    let connection = Connection()
    let received = EvLoopBoundBox(0, loop: loop)  // Sendable; its value opens on this thread only

    // Made and added on this thread: no @Sendable, no Mutex (checked at run time).
    let reply = loop.addSource {
        connection.bytesSeen += 1
        loop.stop()
    }
    loop.addTimer(after: .milliseconds(1), interval: .milliseconds(1)) { timer in
        ticks += 1
        connection.bytesSeen += 100
        guard ticks == 3 else { return }
        timer.invalidate()
        Thread {
            // Another thread hands work to the loop: execute wakes it.
            try? loop.execute { received.value = 42 }
            reply.signal()
            loop.wakeUp()
        }.start()
    }
    loop.run(mode: .default, timeout: .seconds(10))
    reply.invalidate()
    return [ticks, connection.bytesSeen, received.value]
}
// README-LOOPBOUND-END

@Suite struct ReadmeExampleTests {
    @Test func loopBoundStateExampleRunsAsTheReadmeSays() {
        #expect(onLoopThread { _ in readmeLoopBoundState() } == [3, 301, 42])
    }

    @Test func exampleRunsAsTheReadmeSays() {
        let log = onLoopThread { _ in readmeExample() }
        #expect(log == ["entry", "tick", "tick", "tick", "source", "exit", "stopped"])
    }

    @Test func sourcesExampleRunsAsTheReadmeSays() {
        var ends: [Int32] = [0, 0]
        #expect(pipe(&ends) == 0)
        let fds = ends
        defer { close(fds[0]); close(fds[1]) }
        var byte: UInt8 = 1
        #expect(write(fds[1], &byte, 1) == 1)
        let log = onLoopThread { _ in try! readmeSources(reading: fds[0]) }
        #expect(log == ["fd: readable", "port: hello", "signal: SIGHUP"])
    }

    /// The README shows exactly the code above, each marked region in a Swift block.
    @Test(arguments: ["EXAMPLE", "SOURCES", "LOOPBOUND"]) func readmeShowsThisCode(region: String) throws {
        let here = URL(fileURLWithPath: #filePath)
        let root = here.deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let readme = try String(contentsOf: root.appendingPathComponent("README.md"), encoding: .utf8)
        let source = try String(contentsOf: here, encoding: .utf8)
        let begin = try #require(source.range(of: "// README-\(region)-BEGIN\n"))
        let end = try #require(source.range(of: "// README-\(region)-END"))
        let code = String(source[begin.upperBound..<end.lowerBound])
        #expect(readme.contains(code + "```"))
    }
}
