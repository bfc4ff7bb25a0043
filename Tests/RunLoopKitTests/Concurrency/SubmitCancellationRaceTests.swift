import Foundation
import RunLoopKit
import Synchronization
import Testing

/// Counts from any thread.
private final class Counter: Sendable {
    private let atomic = Atomic<Int>(0)
    func add(_ amount: Int = 1) { atomic.add(amount, ordering: .relaxed) }
    var value: Int { atomic.load(ordering: .relaxed) }
}

/// `submit` cancelled at any moment: the task gets the closure's value exactly when the closure
/// ran, and otherwise `CancellationError` (or `loopExited` once the loop is gone).
@Suite struct SubmitCancellationRaceTests {
    @Test func aLoopsSubmitCancelledAtAnyMomentRunsItsClosureOnlyForAValue() async throws {
        let worker = EvWorkerThread(name: "cancel-race")
        let loop = try worker.start()
        let runs = Counter()
        var values = 0
        for _ in 0..<2000 {
            let task = Task { try await loop.submit { runs.add(); return 1 } }
            if Bool.random() { await Task.yield() }
            task.cancel()
            if let value = try? await task.value { values += value }
        }
        await worker.stop()
        #expect(runs.value == values)
    }

    @Test func aWorkersSubmitCancelledAtAnyMomentRunsItsClosureOnlyForAValue() async throws {
        let worker = EvWorkerThread(name: "cancel-race")
        try worker.start()
        let runs = Counter()
        var values = 0
        for _ in 0..<2000 {
            let task = Task { try await worker.submit { runs.add(); return 1 } }
            if Bool.random() { await Task.yield() }
            task.cancel()
            if let value = try? await task.value { values += value }
        }
        await worker.stop()
        #expect(runs.value == values)
    }

    /// Tasks on one loop submit to another, some cancelled, while the other loop's worker stops.
    @Test func submitsFromOneLoopToAnotherThatStopsMeanwhileEndOneWayEach() async throws {
        for _ in 0..<20 {
            let source = EvWorkerThread(name: "submit-from")
            let target = EvWorkerThread(name: "submit-to")
            let sourceLoop = try source.start()
            let targetLoop = try target.start()
            let runs = Counter()
            let values = Counter()
            await withTaskGroup(of: Void.self) { group in
                for index in 0..<32 {
                    group.addTask {
                        let task = Task(executorPreference: EvRunLoopExecutor(sourceLoop)) {
                            try await targetLoop.submit { runs.add(); return 1 }
                        }
                        if index.isMultiple(of: 3) { task.cancel() }
                        do {
                            values.add(try await task.value)
                        } catch is CancellationError {
                        } catch EvPerformError.loopExited {
                        } catch {
                            Issue.record("unexpected \(error)")
                        }
                    }
                }
                group.addTask { await target.stop() }
            }
            #expect(runs.value == values.value)
            await source.stop()
        }
    }
}
