import Foundation
import RunLoopKit
import Testing
import TestSupport

/// EvLoopGroup: N named keep-alive threads, their loops handed out round robin.
@Suite struct LoopGroupTests {
    /// The calling thread's name, as `ps -L` shows it.
    private static func currentThreadName() -> String {
        let name = (try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)) ?? "?"
        return name.trimmingCharacters(in: .newlines)
    }

    /// The names of this process's threads that start with `prefix`.
    private static func threads(named prefix: String) -> [String] {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        return tasks.compactMap { procFileText("/proc/self/task/\($0)/comm") }
            .map { $0.trimmingCharacters(in: .newlines) }.filter { $0.hasPrefix(prefix) }
    }

    @Test func eachLoopRunsOnItsOwnThreadNamedWithItsIndex() throws {
        let group = try EvLoopGroup(numberOfThreads: 3, name: "grp")
        #expect(group.loops.count == 3)
        #expect(Set(group.loops.map(ObjectIdentifier.init)).count == 3, "three distinct loops")
        for (index, loop) in group.loops.enumerated() {
            let (name, isCurrent) = try loop.performAndWait { (Self.currentThreadName(), loop.isCurrent) }
            #expect(name == "grp-\(index)")
            #expect(isCurrent)
        }
        group.stop()
    }

    @Test func aLongNameIsShortenedSoThatTheIndexStays() throws {
        let group = try EvLoopGroup(numberOfThreads: 11, name: "connection-workers")
        let last = try group.loops[10].performAndWait { Self.currentThreadName() }
        #expect(last == "connection-w-10")
        #expect(last.utf8.count == 15)
        group.stop()
    }

    @Test func nextHandsOutTheLoopsRoundRobin() throws {
        let group = try EvLoopGroup(numberOfThreads: 3, name: "rr")
        let handedOut = (0..<7).map { _ in ObjectIdentifier(group.next()) }
        let loops = group.loops.map(ObjectIdentifier.init)
        #expect(handedOut == loops + loops + [loops[0]])
        group.stop()
    }

    @Test func concurrentCallersOfNextShareTheLoopsEqually() throws {
        let group = try EvLoopGroup(numberOfThreads: 4, name: "share")
        let counts = TestLocked([ObjectIdentifier: Int]())
        let threads = (0..<8).map { _ in
            spawnThread {
                for _ in 0..<1000 {
                    let loop = ObjectIdentifier(group.next())
                    counts.withLock { $0[loop, default: 0] += 1 }
                }
            }
        }
        for thread in threads { pthread_join(thread, nil) }
        let perLoop = counts.withLock { $0 }
        #expect(perLoop.count == 4)
        #expect(perLoop.values.allSatisfy { $0 == 2000 }, "\(perLoop.values)")
        group.stop()
    }

    @Test func zeroOrNegativeThreadsAreRefusedWithAMessage() {
        #expect(throws: EvLoopGroupError.invalidNumberOfThreads(0)) { try EvLoopGroup(numberOfThreads: 0, name: "none") }
        #expect(throws: EvLoopGroupError.invalidNumberOfThreads(-2)) { try EvLoopGroup(numberOfThreads: -2, name: "none") }
        #expect("\(EvLoopGroupError.invalidNumberOfThreads(0))".contains("numberOfThreads must be at least 1"))
    }

    @Test func stopRunsWorkAlreadySubmittedThenEveryThreadIsGone() throws {
        let group = try EvLoopGroup(numberOfThreads: 3, name: "stopping")
        #expect(Self.threads(named: "stopping-").sorted() == ["stopping-0", "stopping-1", "stopping-2"])
        let ran = EventLog<Int>()
        let gate = Latch()
        // The first loop is held up, so its later items are still queued when the stop comes.
        try group.loops[0].execute { gate.wait() }
        for (index, loop) in group.loops.enumerated() {
            for item in 0..<10 { try loop.execute { ran.append(index * 100 + item) } }
        }
        group.stop(waitUntilExited: false)
        gate.open()
        group.stop()  // now waits
        #expect(ran.count == 30, "every item submitted before the stop ran")
        #expect(ran.all.filter { $0 < 100 } == Array(0..<10), "in order")
        // The first stop let the threads detach: the second waits for their loops' teardown,
        // and the threads themselves leave the process just after.
        #expect(spinUntil(timeout: 10) { Self.threads(named: "stopping-").isEmpty }, "every thread has exited")
        for loop in group.loops {
            #expect(throws: EvPerformError.loopExited) { try loop.execute {} }
        }
        group.stop()  // a second stop does nothing more
    }

    @Test func stopFromAWorkItemOnTheGroupDoesNotWaitForItself() throws {
        let group = try EvLoopGroup(numberOfThreads: 2, name: "self-stop")
        let returned = Latch()
        try group.loops[1].execute {
            group.stop()  // would deadlock if it joined its own thread
            returned.open()
        }
        #expect(returned.wait())
        group.stop()  // from here it waits until both threads are gone
        for loop in group.loops {
            #expect(throws: EvPerformError.loopExited) { try loop.execute {} }
        }
    }

    @Test func asyncStopSuspendsUntilEveryLoopIsTornDown() async throws {
        let group = try EvLoopGroup(numberOfThreads: 3, name: "async-stop")
        let ran = EventLog<Int>()
        for (index, loop) in group.loops.enumerated() { try loop.execute { ran.append(index) } }
        await group.stop()
        #expect(Set(ran.all) == [0, 1, 2])
        for loop in group.loops {
            #expect(throws: EvPerformError.loopExited) { try loop.execute {} }
        }
        await group.stop()  // returns at once
    }

    /// Loop 1's queued item needs loop 0, on whose thread the last reference goes: releasing
    /// the group there must not wait for loop 1's thread, which waits for loop 0.
    @Test func droppingTheGroupOnOneOfItsOwnThreadsDoesNotWaitForTheOthers() throws {
        let holder = Box<EvLoopGroup?>(try EvLoopGroup(numberOfThreads: 2, name: "self-drop"))
        let loops = holder.get!.loops
        let loop1Waits = Latch(), released = Latch(), loop1Done = Latch()
        try loops[1].execute {
            loop1Waits.wait()
            _ = try? loops[0].performAndWait { 0 }  // run, or refused if loop 0 ended first
            loop1Done.open()
        }
        try loops[0].execute {
            var group = holder.update { value in defer { value = nil }; return value }
            loop1Waits.open()
            group = nil  // the last reference
            released.open()
            _ = group
        }
        #expect(released.wait(timeout: 10))
        #expect(loop1Done.wait(timeout: 10))
    }

    /// Dropped outside a task (a test's body runs in one), where the release waits.
    @Test func droppingTheGroupStopsItsThreads() throws {
        let exited = Box<[EvRunLoop]>([])
        pthread_join(spawnThread {
            guard let group = try? EvLoopGroup(numberOfThreads: 2, name: "dropped") else { return }
            exited.set(group.loops)
        }, nil)
        let loops = exited.get
        #expect(loops.count == 2)
        for loop in loops {
            #expect(throws: EvPerformError.loopExited) { try loop.execute {} }
        }
    }
}
