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

@Suite struct ReadmeExampleTests {
    @Test func exampleRunsAsTheReadmeSays() {
        let log = onLoopThread { _ in readmeExample() }
        #expect(log == ["entry", "tick", "tick", "tick", "source", "exit", "stopped"])
    }

    /// The README shows exactly the code above.
    @Test func readmeShowsThisCode() throws {
        let here = URL(fileURLWithPath: #filePath)
        let root = here.deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let readme = try String(contentsOf: root.appendingPathComponent("README.md"), encoding: .utf8)
        let source = try String(contentsOf: here, encoding: .utf8)
        let begin = source.range(of: "// README-EXAMPLE-BEGIN\n")!
        let end = source.range(of: "// README-EXAMPLE-END")!
        let example = String(source[begin.upperBound..<end.lowerBound])
        #expect(readme.contains("```swift\nimport RunLoopKit\nimport Synchronization\nimport Foundation\n\n" + example + "```"))
    }
}
