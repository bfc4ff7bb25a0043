import Foundation
import RunLoopKit
import Synchronization
import Testing
import TestSupport

/// EvWorkerThread: a keep-alive thread whose loop runs submitted work until it is stopped.
@Suite struct WorkerThreadTests {
    private struct Oops: Error, Equatable { let code: Int }

    @Test func submittedWorkRunsOnTheWorkerThreadInSubmissionOrder() throws {
        let worker = EvWorkerThread(name: "test-order")
        try worker.start()
        let workerLoop = try #require(worker.runLoop)
        let log = EventLog<Int>()
        let ranOnWorkerLoop = Box(true)
        let done = Latch()
        for index in 0..<100 {
            try worker.execute {
                if EvRunLoop.current !== workerLoop { ranOnWorkerLoop.set(false) }
                log.append(index)
                if index == 99 { done.open() }
            }
        }
        #expect(done.wait())
        #expect(log.all == Array(0..<100))
        #expect(ranOnWorkerLoop.get)
        worker.stop()
    }

    @Test func submitAndWaitReturnsTheClosuresValueAfterItRan() throws {
        let worker = EvWorkerThread()
        try worker.start()
        let workerLoop = try #require(worker.runLoop)
        let ranOn = try worker.submitAndWait { ObjectIdentifier(EvRunLoop.current) }
        #expect(ranOn == ObjectIdentifier(workerLoop))
        let value = try worker.submitAndWait { 6 * 7 }
        #expect(value == 42)
        worker.stop()
    }

    @Test func submitAndWaitRethrowsTheClosuresError() throws {
        let worker = EvWorkerThread()
        try worker.start()
        #expect(throws: Oops(code: 7)) {
            try worker.submitAndWait { () throws -> Int in throw Oops(code: 7) }
        }
        // The worker survives a throwing item.
        #expect(try worker.submitAndWait { "still alive" } == "still alive")
        worker.stop()
    }

    @Test func submitAndWaitFromTheWorkerItselfRunsInlineInsteadOfDeadlocking() throws {
        let worker = EvWorkerThread()
        try worker.start()
        let nested = try worker.submitAndWait { () throws -> Int in
            try worker.submitAndWait { 5 } + 1
        }
        #expect(nested == 6)
        worker.stop()
    }

    @Test func asyncSubmitReturnsTheValueOrRethrowsWithoutBlockingTheCaller() async throws {
        struct Oops: Error, Equatable { let code: Int }
        let worker = EvWorkerThread()
        let loop = try worker.start()
        #expect(worker.runLoop === loop)
        #expect(try await worker.submit { EvRunLoop.current === loop ? 42 : -1 } == 42)
        await #expect(throws: Oops(code: 3)) { try await worker.submit { () throws -> Int in throw Oops(code: 3) } }
        await worker.stop()
        await #expect(throws: EvWorkerThreadError.stopped) { try await worker.submit { 1 } }
    }

    @Test func submitBeforeStartThrowsNotStarted() {
        let worker = EvWorkerThread()
        #expect(worker.state == .idle)
        #expect(throws: EvWorkerThreadError.notStarted) { try worker.execute {} }
        #expect(throws: EvWorkerThreadError.notStarted) { try worker.submitAndWait { 1 } }
        #expect(worker.runLoop == nil)
    }

    @Test func submitAfterStopThrowsStoppedInsteadOfDroppingTheWork() throws {
        let worker = EvWorkerThread()
        try worker.start()
        worker.stop()
        #expect(worker.state == .stopped)
        #expect(worker.runLoop == nil)
        let ran = Box(false)
        #expect(throws: EvWorkerThreadError.stopped) { try worker.execute { ran.set(true) } }
        #expect(throws: EvWorkerThreadError.stopped) { try worker.submitAndWait { ran.set(true) } }
        #expect(ran.get == false)
    }

    @Test func startingTwiceOrAfterStopThrows() throws {
        let worker = EvWorkerThread()
        try worker.start()
        #expect(throws: EvWorkerThreadError.alreadyStarted) { try worker.start() }
        worker.stop()
        #expect(throws: EvWorkerThreadError.stopped) { try worker.start() }

        let neverStarted = EvWorkerThread()
        neverStarted.stop()
        #expect(neverStarted.state == .stopped)
        #expect(throws: EvWorkerThreadError.stopped) { try neverStarted.start() }
    }

    @Test func stopRunsEverythingSubmittedBeforeItThenEndsTheThread() throws {
        let worker = EvWorkerThread()
        try worker.start()
        let loop = try #require(worker.runLoop)
        let release = Latch()
        let log = EventLog<Int>()
        let loopTornDown = Latch()
        // R4: the worker's loop is finalised when its thread exits; a source's cancel callout says so.
        loop.add(EvSource(cancel: { _, _ in loopTornDown.open() }) {}, forMode: .default)
        try worker.execute { release.wait() }  // holds the queue until the stop request is in
        for index in 0..<50 { try worker.execute { log.append(index) } }

        worker.stop(waitUntilExited: false)
        #expect(worker.state == .stopping)
        #expect(throws: EvWorkerThreadError.stopped) { try worker.execute { log.append(-1) } }
        #expect(log.count == 0)

        release.open()
        worker.stop()  // now waits: the queue drains, the thread exits and is joined
        #expect(log.all == Array(0..<50))
        #expect(worker.state == .stopped)
        #expect(loopTornDown.wait(timeout: 0))  // already open: stop() returned after the teardown
    }

    @Test func stopFromAWorkItemFinishesTheQueueWithoutDeadlocking() throws {
        let worker = EvWorkerThread()
        try worker.start()
        let release = Latch()
        let log = EventLog<String>()
        let lastRan = Latch()
        try worker.execute {
            release.wait()
            worker.stop()  // on the worker itself: must not wait for itself
            log.append("stop requested")
            if (try? worker.execute { log.append("late") }) == nil { log.append("late refused") }
            if (try? worker.submitAndWait { log.append("late inline") }) == nil { log.append("late inline refused") }
        }
        try worker.execute { log.append("queued before stop") }
        try worker.execute {
            log.append("last")
            lastRan.open()
        }
        release.open()
        #expect(lastRan.wait())
        worker.stop()
        #expect(log.all == ["stop requested", "late refused", "late inline refused", "queued before stop", "last"])
        #expect(worker.state == .stopped)
    }

    @Test func concurrentStopsAllReturnAfterTheThreadEnded() throws {
        let worker = EvWorkerThread()
        try worker.start()
        let release = Latch()
        try worker.execute { release.wait() }
        let returned = EventLog<EvWorkerThread.State>()
        let stoppers = (0..<4).map { _ in
            startLoopThread { _ in
                worker.stop()
                returned.append(worker.state)
            }
        }
        release.open()
        for stopper in stoppers { #expect(stopper.finished.wait()) }
        #expect(returned.all == Array(repeating: .stopped, count: 4))
    }

    /// Dropped outside a task (a test's body runs in one), where the release waits.
    @Test func droppingTheLastReferenceStopsTheWorkerAfterItsQueue() throws {
        let loopTornDown = Latch()
        let log = EventLog<Int>()
        let tornDownWhenReleased = Box(false)
        pthread_join(spawnThread {
            do {
                let worker = EvWorkerThread()
                guard let loop = try? worker.start() else { return }
                loop.add(EvSource(cancel: { _, _ in loopTornDown.open() }) {}, forMode: .default)
                for index in 0..<10 { try? worker.execute { log.append(index) } }
            }  // the last reference goes here: deinit stops and joins the thread
            tornDownWhenReleased.set(loopTornDown.wait(timeout: 0))
        }, nil)
        #expect(tornDownWhenReleased.get)
        #expect(log.all == Array(0..<10))
    }

    @Test func droppingTheLastReferenceOnTheWorkerThreadItselfEndsTheThread() throws {
        let loopTornDown = Latch()
        let holder = Box<EvWorkerThread?>(nil)
        let release = Latch()
        do {
            let worker = EvWorkerThread()
            try worker.start()
            let loop = try #require(worker.runLoop)
            loop.add(EvSource(cancel: { _, _ in loopTornDown.open() }) {}, forMode: .default)
            holder.set(worker)
            try worker.execute {
                release.wait()
                holder.set(nil)  // the last reference, dropped on the worker thread: must not self-join
            }
        }
        release.open()
        #expect(loopTornDown.wait())
    }

    @Test func aWorkItemRunningANestedLoopDoesNotKeepTheWorkerAliveAfterStop() throws {
        let worker = EvWorkerThread()
        try worker.start()
        let nestedEntered = Latch()
        let nestedResult = Box<EvRunLoop.RunResult?>(nil)
        try worker.execute {
            nestedEntered.open()
            // A nested run of the default mode (R58): stop's final block runs inside it.
            nestedResult.set(EvRunLoop.current.run(mode: .default))
        }
        #expect(nestedEntered.wait())
        worker.stop()
        #expect(worker.state == .stopped)
        #expect(nestedResult.get != nil)
    }

    @Test func workerLoopCanHostTimersBetweenSubmissions() throws {
        let worker = EvWorkerThread()
        try worker.start()
        let fired = Latch()
        try worker.execute {
            EvRunLoop.current.add(EvTimer(after: .milliseconds(1)) { _ in fired.open() }, forMode: .default)
        }
        #expect(fired.wait())
        worker.stop()
    }

    /// A stop that waits, after one that did not (as ``EvLoopGroup``'s does, and `await stop()`
    /// then `stop()`), waits until the thread is gone, even once it is past its body: a
    /// thread-local destructor that takes a while runs after the body, and the wait covers it.
    /// (Such a thread detached itself, and the second stop returned at once.)
    @Test func aStopThatWaitsAfterOneThatDidNotWaitsUntilTheThreadIsGone() throws {
        let worker = EvWorkerThread(name: "test-exiting")
        try worker.start()
        var key = pthread_key_t()
        #expect(pthread_key_create(&key) { _ in
            slowExitEntered.signal()
            usleep(200_000)  // the thread's exit takes this long
            slowExitFinished.store(true, ordering: .releasing)
        } == 0)
        defer { pthread_key_delete(key) }
        let slowExitKey = key
        try worker.execute { pthread_setspecific(slowExitKey, UnsafeRawPointer(bitPattern: 1)) }
        worker.stop(waitUntilExited: false)
        #expect(slowExitEntered.wait(timeout: .now() + 30) == .success)  // past its body
        worker.stop(waitUntilExited: true)
        let finished = slowExitFinished.load(ordering: .acquiring)
        #expect(finished)
    }
}

/// Set by the thread-local destructor of the test above, run as the worker's thread exits.
private let slowExitEntered = DispatchSemaphore(value: 0)
private let slowExitFinished = Atomic<Bool>(false)
