import Foundation
import HTTPTestServer
import RunLoopKit
import Testing

/// libcurl's multi_socket API on an EvLibevSource, as a C program drives it on a plain
/// libev loop, against python3's http.server: what a plain libev loop gives curl, the run loop gives.
/// Serialized: the descriptor check counts the process's open descriptors.
@Suite(.serialized) struct CurlOnRunLoopTests {
    static let size = 256 * 1024

    /// Many transfers at once, on fresh connections (sockets closed and their numbers reused
    /// while the loop runs) and on reused ones: every one completes whole, its callback on the
    /// loop's thread as the source's callout, in the mode holding the source.
    @Test func manyTransfersCompleteWhole() throws {
        let outcome = try withHTTPServer(files: ["file": Self.size]) { server in
            onLoopThread { loop -> (finished: Int, bad: [String], result: EvRunLoop.RunResult) in
                let curl = CurlMulti()
                var bad: [String] = []
                let total = 60
                curl.onFinished = { done in
                    if loop.currentCallout != .libevSource || loop.currentMode != .default { bad.append("callout \(String(describing: loop.currentCallout))") }
                    if done.result != 0 || done.bytes != Self.size { bad.append("transfer \(done.tag): curl \(done.result), \(done.bytes) bytes") }
                    if curl.finished.count == total { loop.stop() }
                }
                for tag in 0..<total { curl.get(server.url("file"), tag: tag, freshConnection: tag % 2 == 0) }
                let result = loop.run(mode: .default, timeout: .seconds(60))
                let finished = curl.finished.count
                curl.close()
                return (finished, bad, result)
            }
        }
        #expect(outcome.result == .stopped)
        #expect(outcome.finished == 60)
        #expect(outcome.bad == [])
    }

    /// Transfers go on while the loop switches between a mode with the source and one without:
    /// no callback runs in the other mode, and all complete (a timer or socket that came due
    /// meanwhile waits and is served when the source's mode runs again).
    @Test func transfersGoOnAcrossModeSwitches() throws {
        let outcome = try withHTTPServer(files: ["file": Self.size]) { server in
            onLoopThread { loop -> (finished: Int, bad: [String]) in
                let tracking = EvRunLoop.Mode("tracking")
                loop.add(EvTimer(after: .seconds(3600)) { _ in }, forMode: tracking)
                let curl = CurlMulti()
                var bad: [String] = []
                let total = 20
                curl.onFinished = { done in
                    if loop.currentMode != .default { bad.append("callback in \(String(describing: loop.currentMode))") }
                    if done.result != 0 || done.bytes != Self.size { bad.append("transfer \(done.tag): curl \(done.result), \(done.bytes) bytes") }
                }
                for tag in 0..<total { curl.get(server.url("file"), tag: tag, freshConnection: true) }
                let deadline = ContinuousClock.now + .seconds(60)
                while curl.finished.count < total && ContinuousClock.now < deadline {
                    _ = loop.run(mode: .default, timeout: .milliseconds(2), returnAfterSourceHandled: true)
                    _ = loop.run(mode: tracking, timeout: .milliseconds(2))
                }
                let finished = curl.finished.count
                curl.close()
                return (finished, bad)
            }
        }
        #expect(outcome.finished == 20)
        #expect(outcome.bad == [])
    }

    /// The loop's thread exits with transfers under way: the detach handler lets curl go while
    /// the libev loop still exists, and nothing the thread opened stays open (curl's sockets,
    /// the libev loop's descriptors, the run loop's).
    @Test func aThreadThatExitsMidTransferLetsCurlGo() throws {
        let (running, opened) = try withHTTPServer(files: ["big": 4 * 1024 * 1024]) { server in
            onLoopThread { loop -> (Int, [Int32: String]) in
                let before = openDescriptors()
                let curl = CurlMulti()
                for tag in 0..<8 { curl.get(server.url("big"), tag: tag, freshConnection: true) }
                // Until curl watches its sockets; then the thread exits, transfers unfinished.
                while curl.watchedSockets < 8 && curl.finished.isEmpty {
                    _ = loop.run(mode: .default, timeout: .seconds(10), returnAfterSourceHandled: true)
                }
                let opened = openDescriptors().subtracting(before)
                // The directory listing's own descriptor, closed by now, has no name.
                let named = opened.map { ($0, fileName($0)) }.filter { !$0.1.isEmpty }
                return (curl.running, Dictionary(uniqueKeysWithValues: named))
            }
        }
        #expect(running > 0)
        #expect(opened.count >= 8)
        // The same number naming the same file: left open (another thread may have reused a number).
        let left = opened.filter { fileName($0.key) == $0.value }
        #expect(left.isEmpty, "left open: \(left)")
    }
}

