import Foundation
import HiredisExample
import RedisServer
import RunLoopKit
import Testing

/// hiredis's async client, attached with its own libev adapter (`redisLibevAttach`) to an
/// EvLibevSource, against a real redis-server each test starts on 127.0.0.1 and stops again.
@Suite struct HiredisOnRunLoopTests {
    /// What a run of commands saw: the replies, those that were wrong, and the callbacks that
    /// ran off the loop's thread.
    struct Outcome: Sendable {
        var replies = 0
        var wrong: [String] = []
        var offTheLoopsThread = 0
    }

    @Test func tenThousandPipelinedSetGetPairsAllAnsweredRightOnTheLoopsThread() throws {
        let pairs = 10_000
        let outcome = try withRedisServer { server in
            onLoopThread { loop -> Outcome in
                var outcome = Outcome()
                func check(_ reply: String?, _ expected: String, _ what: String) {
                    outcome.replies += 1
                    if !loop.isCurrent { outcome.offTheLoopsThread += 1 }
                    if reply != expected { outcome.wrong.append("\(what): \(reply ?? "nil")") }
                }
                let redis = RedisConnection(port: server.port)
                // All sent before the loop runs: hiredis writes them as the socket takes them.
                for i in 0..<pairs {
                    redis.send(["SET", "key:\(i)", "value:\(i)"]) { check($0, "OK", "SET \(i)") }
                    redis.send(["GET", "key:\(i)"]) { reply in
                        check(reply, "value:\(i)", "GET \(i)")
                        if i == pairs - 1 { loop.stop() }
                    }
                }
                loop.run(mode: .default, timeout: .seconds(60))
                redis.close()
                return outcome
            }
        }
        #expect(outcome.replies == 2 * pairs)
        #expect(outcome.wrong.isEmpty, "\(outcome.wrong.prefix(5))")
        #expect(outcome.offTheLoopsThread == 0)
    }

    /// Each command is sent from the previous reply's callback: 1,000 SET/GET pairs, 2,000 round
    /// trips one after another.
    @Test func aThousandSequentialSetGetPairsAllAnsweredRightOnTheLoopsThread() throws {
        let pairs = 1_000
        let outcome = try withRedisServer { server in
            onLoopThread { loop -> Outcome in
                var outcome = Outcome()
                func check(_ reply: String?, _ expected: String, _ what: String) {
                    outcome.replies += 1
                    if !loop.isCurrent { outcome.offTheLoopsThread += 1 }
                    if reply != expected { outcome.wrong.append("\(what): \(reply ?? "nil")") }
                }
                let redis = RedisConnection(port: server.port)
                func pair(_ i: Int) {
                    guard i < pairs else { return loop.stop() }
                    redis.send(["SET", "sequential:\(i)", "\(i * i)"]) { reply in
                        check(reply, "OK", "SET \(i)")
                        redis.send(["GET", "sequential:\(i)"]) { reply in
                            check(reply, "\(i * i)", "GET \(i)")
                            pair(i + 1)
                        }
                    }
                }
                pair(0)
                loop.run(mode: .default, timeout: .seconds(60))
                redis.close()
                return outcome
            }
        }
        #expect(outcome.replies == 2 * pairs)
        #expect(outcome.wrong.isEmpty, "\(outcome.wrong.prefix(5))")
        #expect(outcome.offTheLoopsThread == 0)
    }

    /// R24, R38: hiredis's callbacks are one handled source: each run that returns after a
    /// source returns handledSource, the last one when the reply arrived.
    @Test func R38_runsThatReturnAfterASourceReturnHandledSourceWhenRepliesArrive() throws {
        let (reply, results) = try withRedisServer { server in
            onLoopThread { loop -> (String?, [EvRunLoop.RunResult]) in
                let redis = RedisConnection(port: server.port)
                var reply: String?
                redis.send(["PING"]) { reply = $0 }
                var results: [EvRunLoop.RunResult] = []
                while reply == nil && results.count < 20 {
                    results.append(loop.run(mode: .default, timeout: .seconds(10), returnAfterSourceHandled: true))
                }
                redis.close()
                return (reply, results)
            }
        }
        #expect(reply == "PONG")
        #expect(!results.isEmpty && results.allSatisfy { $0 == .handledSource }, "\(results)")
    }

    /// Nothing listens on the port: hiredis's connect callback reports the refusal, and the
    /// pending command's callback gets no reply.
    @Test func aConnectionToAPortWhereNothingListensReportsItsErrorThroughHiredissCallback() throws {
        let port = try RedisServer.freePort()
        let (called, reply, error) = onLoopThread { loop -> (Bool, String?, String?) in
            let redis = RedisConnection(port: port)
            var called = false
            var reply: String?
            redis.send(["PING"]) {
                called = true
                reply = $0
                loop.stop()
            }
            loop.run(mode: .default, timeout: .seconds(10))
            redis.close()
            return (called, reply, redis.error)
        }
        #expect(called)
        #expect(reply == nil)
        #expect(error == "Connection refused")
    }

    /// close() while hiredis still connects: hiredis frees such a connection without calling its
    /// disconnect callback, so the example forgets it at the detach itself. The pending command
    /// gets no reply, and a command sent afterwards none either, instead of hiredis being handed
    /// the freed connection. Before, the connection stayed open in the example's eyes.
    @Test func closingAConnectionStillConnectingLetsItGo() throws {
        let (isOpen, replies) = try withRedisServer { server in
            onLoopThread { _ -> (Bool, [String]) in
                var replies: [String] = []
                let redis = RedisConnection(port: server.port)
                redis.send(["PING"]) { replies.append("pending: \($0 ?? "nil")") }
                redis.close()  // no run yet: the connect is still in progress
                redis.send(["PING"]) { replies.append("after close: \($0 ?? "nil")") }
                return (redis.isOpen, replies)
            }
        }
        #expect(!isOpen)
        #expect(replies == ["pending: nil", "after close: nil"])
    }

    /// R4: the loop's thread exits with the connection open and a command waiting for its
    /// reply (BLPOP on an empty list blocks for ever): the source's detach handler frees the
    /// connection while the libev loop still exists, and hiredis answers the pending command
    /// with no reply. (`make test-asan` runs this under AddressSanitizer and LeakSanitizer.)
    @Test func R4_aLoopWhoseThreadExitsWithAConnectionOpenLetsHiredisGo() throws {
        let seen = Shared<[String]>([])
        try withRedisServer { server in
            onLoopThread { loop in
                let redis = RedisConnection(port: server.port)
                redis.send(["SET", "left", "open"]) { reply in
                    seen.set(seen.get + ["SET: \(reply ?? "nil")"])
                    loop.stop()
                }
                loop.run(mode: .default, timeout: .seconds(10))
                redis.send(["BLPOP", "nothing", "0"]) { reply in
                    seen.set(seen.get + ["BLPOP at the teardown, on the loop's thread: \(reply ?? "nil")"])
                }
                loop.run(mode: .default, timeout: .milliseconds(10))  // sent; the server blocks it
            }
        }
        #expect(seen.get == ["SET: OK", "BLPOP at the teardown, on the loop's thread: nil"])
    }

    /// The example program starts its own redis-server, asks for the greeting, prints it.
    @Test func theExampleProgramPrintsTheGreeting() throws {
        // Built next to the test bundle, in the same products folder.
        let products = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
        let process = Process()
        process.executableURL = products.appendingPathComponent("hiredis-on-runloop")
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let printed = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        #expect(printed == "hello\n")
    }

    /// The README's "Using libev libraries" shows the example's marked region word for word.
    @Test func theReadmeShowsTheExample() throws {
        let package = URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let readme = try String(
            contentsOf: package.deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("README.md"),
            encoding: .utf8)
        let example = try String(
            contentsOf: package.appendingPathComponent("Sources/HiredisExample/RedisConnection.swift"), encoding: .utf8)
        let begin = try #require(example.range(of: "// README-HIREDIS-BEGIN\n"))
        let end = try #require(example.range(of: "// README-HIREDIS-END"))
        #expect(readme.contains("```swift\n" + example[begin.upperBound..<end.lowerBound] + "```"))
    }
}
