import Foundation
import RunLoopKit
import Testing

@Suite struct SmokeTests {
    @Test func timerFiresAndRunFinishes() {
        let result = onLoopThread { loop -> (RunLoopKit.EvRunLoop.RunResult, Int) in
            let fired = EventLog<Int>()
            loop.add(EvTimer(after: .milliseconds(5)) { _ in fired.append(1) }, forMode: .default)
            let result = loop.run(mode: .default, timeout: .seconds(10))
            return (result, fired.count)
        }
        #expect(result.0 == .finished)
        #expect(result.1 == 1)
    }

    @Test func sourceSignalledFromAnotherThreadPerforms() {
        let performed = EventLog<Int>()
        let source = EvSource { performed.append(1) }
        let result = onLoopThread { loop -> RunLoopKit.EvRunLoop.RunResult in
            loop.add(source, forMode: .default)
            let poster = Thread {
                source.signal()
                loop.wakeUp()
            }
            poster.start()
            return loop.run(mode: .default, timeout: .seconds(10), returnAfterSourceHandled: true)
        }
        #expect(result == .handledSource)
        #expect(performed.count == 1)
    }
}
