import Foundation
import RunLoopKit
import Testing

/// Keep-alive threads that are created, used and stopped must leave nothing behind — no file
/// descriptor, no resident memory.
///
/// Open descriptors and resident memory are process-wide, and the other suites run in parallel,
/// so the measurement runs in a child process of its own: the parent test starts this test binary
/// again, with a filter that selects only ``ThreadLeakMeasurement`` and an environment variable
/// that enables it, and checks the child's verdict.
@Suite struct ThreadLeakTests {
    @Test(.timeLimit(.minutes(2)))
    func hundredThousandWorkersOneAfterAnotherAndAThousandAtOnceLeakNothing() async throws {
        let child = Process()
        child.executableURL = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        child.arguments = ["--testing-library", "swift-testing", "--filter", "ThreadLeakMeasurement"]
        var environment = ProcessInfo.processInfo.environment
        environment[ThreadLeakMeasurement.enablingVariable] = "1"
        // One malloc arena: with the default (8 per core), a thousand threads at once leave
        // megabytes of free-but-fragmented memory in secondary arenas that malloc_trim cannot
        // return. That is glibc's bounded high-water mark, not a leak, and it would drown the
        // signal; with one arena the footprint after a thousand concurrent workers stays flat.
        let tunables = [environment["GLIBC_TUNABLES"], "glibc.malloc.arena_max=1"].compactMap { $0 }
        environment["GLIBC_TUNABLES"] = tunables.joined(separator: ":")
        child.environment = environment
        let output = Pipe()
        child.standardOutput = output
        child.standardError = output
        try child.run()
        // Safety net: a hung child is ended, so the read below sees end-of-file.
        DispatchQueue.global().asyncAfter(deadline: .now() + 110) { if child.isRunning { child.terminate() } }
        // The child runs for a minute under a sanitizer: it is awaited from a thread of its own,
        // so that no thread of the pool the other suites share is held for that minute.
        let text = await withCheckedContinuation { (done: CheckedContinuation<String, Never>) in
            Thread.detachNewThread {
                let data = output.fileHandleForReading.readDataToEndOfFile()
                child.waitUntilExit()
                done.resume(returning: String(decoding: data, as: UTF8.self))
            }
        }
        let verdicts = text.split(separator: "\n").filter { $0.contains(ThreadLeakMeasurement.marker) }
        #expect(child.terminationStatus == 0, "child measurement failed:\n\(text)")
        // Both scenarios reported: the child really ran them (a filter typo would run nothing).
        #expect(verdicts.count == 2, "child output:\n\(text)")
        for line in verdicts { print(line) }
    }
}

/// Set in the child process only.
private let threadLeakChildVariable = "RUNLOOPKIT_THREAD_LEAK_CHILD"

/// The measurement itself; runs only inside the child process started above.
@Suite(.enabled(if: ProcessInfo.processInfo.environment[threadLeakChildVariable] == "1"))
struct ThreadLeakMeasurement {
    static let enablingVariable = threadLeakChildVariable
    static let marker = "THREAD-LEAK-RESULT"
    /// What may differ between before and after, whatever the number of threads (not per thread).
    static let fileDescriptorSlack = 0
    static let residentSlackBytes = 4 << 20

    @Test func workersLeaveNoDescriptorOrMemoryBehind() throws {
        raiseFileDescriptorLimit()
        // Under a sanitizer (make test-tsan / test-asan) shadow memory makes the resident size
        // meaningless — LeakSanitizer checks memory there — and threads are far slower: only
        // descriptors are compared, over fewer threads.
        let sanitizerProbes: [String] = ["__tsan_init", "__asan_init"]
        let sanitizer = sanitizerProbes.first { dlsym(nil, $0) != nil }.map { $0 == "__tsan_init" ? "ThreadSanitizer" : "AddressSanitizer" }
        let sequential = sanitizer == nil ? 100_000 : 10_000
        // Warm-up: libc's stack cache, malloc arenas, lazily made globals reach their steady state.
        try useWorkers(count: 2_000, concurrently: false)
        try useWorkers(count: 1_000, concurrently: true)
        let baseline = Footprint.now()

        try useWorkers(count: sequential, concurrently: false)
        let afterSequential = Footprint.now()
        report("\(sequential) sequential", baseline, afterSequential, sanitizer)
        #expect(afterSequential.fileDescriptors <= baseline.fileDescriptors + Self.fileDescriptorSlack)
        if sanitizer == nil {
            #expect(afterSequential.residentBytes <= baseline.residentBytes + Self.residentSlackBytes)
        }

        // Three rounds, so a leak in this path would count three thousand times.
        for _ in 0..<3 { try useWorkers(count: 1_000, concurrently: true) }
        let afterConcurrent = Footprint.now()
        report("3 x 1000 at once", baseline, afterConcurrent, sanitizer)
        #expect(afterConcurrent.fileDescriptors <= baseline.fileDescriptors + Self.fileDescriptorSlack)
        if sanitizer == nil {
            #expect(afterConcurrent.residentBytes <= baseline.residentBytes + Self.residentSlackBytes)
        }
    }

    /// Creates, starts, uses (one fire-and-forget item, one waited-for item) and stops `count`
    /// workers — one after another, or all alive at the same time.
    private func useWorkers(count: Int, concurrently: Bool) throws {
        if concurrently {
            let workers = (0..<count).map { _ in EvWorkerThread(stackSize: 256 << 10) }
            for worker in workers { try worker.start() }
            for worker in workers { try worker.execute {} }
            for (index, worker) in workers.enumerated() { #expect(try worker.submitAndWait { index } == index) }
            for worker in workers { worker.stop() }
        } else {
            for index in 0..<count {
                let worker = EvWorkerThread(stackSize: 256 << 10)
                try worker.start()
                try worker.execute {}
                let echoed = try worker.submitAndWait { index }
                if echoed != index { Issue.record("worker \(index) answered \(echoed)") }
                worker.stop()
            }
        }
    }

    private func report(_ scenario: String, _ before: Footprint, _ after: Footprint, _ sanitizer: String?) {
        let memory = sanitizer == nil
            ? "rss \(before.residentBytes >> 10) KiB -> \(after.residentBytes >> 10) KiB"
            : "rss not compared under \(sanitizer!)"
        print("\(Self.marker) \(scenario): fds \(before.fileDescriptors) -> \(after.fileDescriptors), \(memory)")
    }

    /// The 1,000 concurrent workers hold three descriptors each.
    private func raiseFileDescriptorLimit() {
        var limit = rlimit()
        getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        limit.rlim_cur = limit.rlim_max
        setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
    }
}

/// Open descriptors and resident memory of this process, from /proc/self.
private struct Footprint {
    let fileDescriptors: Int
    let residentBytes: Int

    static func now() -> Footprint {
        // Memory freed but kept by malloc is not a leak: hand it back first, so only what is
        // still allocated counts.
        if let trim = dlsym(nil, "malloc_trim") {
            _ = unsafeBitCast(trim, to: (@convention(c) (Int) -> Int32).self)(0)
        }
        let statm = (try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8)) ?? ""
        let residentPages = statm.split(separator: " ").dropFirst().first.flatMap { Int($0) } ?? -1
        return Footprint(
            fileDescriptors: openFileDescriptorCount(),
            residentBytes: residentPages * Int(sysconf(Int32(_SC_PAGESIZE))))
    }
}
