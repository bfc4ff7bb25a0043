import Dispatch
import Foundation

/// Scenario 6: footprint. In a fresh child process per backend (so no backend inherits
/// another's freed memory), `loops` threads each create and touch a loop, then park; file
/// descriptors (/proc/self/fd) and resident memory (/proc/self/statm) are read before and
/// while they are parked, and fds again after every thread has exited. A child with bare
/// parked threads gives the cost of the threads themselves, subtracted from each backend.
/// Each child makes and discards one loop before its baseline, so that one-time costs (the code
/// pages the first loop touches: about 380 KiB of RunLoopKit's text, 3.8 KiB a loop at 100
/// loops) are not counted as per-loop memory.
///
/// Each child is run ``childRuns`` times and each figure is the median of its runs: the kernel
/// maps code pages 64 KiB at a time, so a page of a shared library touched first after the
/// baseline moves one child's resident memory by 64 KiB, in any child (0.64 KiB a loop at 100
/// loops), and a single child per backend made the 100-loop ratio swing by up to 0.1.
///
/// Measured at several loop counts because the cost per loop grows with the count: libev sizes
/// each loop's descriptor table by the highest descriptor number it watches, and with N loops
/// alive the last loop's descriptors are numbered near 2 N, so the tables add up to O(N²).
struct FootprintScenario {
    var loopCounts: [Int]
    /// Children per backend and loop count (odd: the median is one of them).
    var childRuns = 5

    func run(_ backends: [any Backend]) -> [Figure] {
        let backends = backends.filter { $0.id != .libevIOURing }
        var figures: [Figure] = []
        let steps = loopCounts.count * (backends.count + 1)
        for (index, loops) in loopCounts.enumerated() {
            let first = index * (backends.count + 1)
            Progress.shared.step(first, of: steps, "\(loops) threads with no loop")
            guard let bare = medianChild(backend: nil, loops: loops) else { continue }
            var fds = Figure(id: "footprint.fds.\(loops)", scenario: "footprint",
                             label: "file descriptors per loop, \(loops) loops",
                             unit: "fds", better: .lower, goal: .atMost(3))
            var rss = Figure(id: "footprint.rss.\(loops)", scenario: "footprint",
                             label: "resident memory per loop, \(loops) loops",
                             unit: "KiB", better: .lower, goal: .ratioAtMost(1.2, against: .libev))
            var left = Figure(id: "footprint.fdsAfterExit.\(loops)", scenario: "footprint",
                              label: "fds left open after \(loops) threads exit", unit: "fds", better: .lower)
            for (k, backend) in backends.enumerated() {
                Progress.shared.step(first + k + 1, of: steps, "\(loops) threads with a \(backend.id.title) loop each")
                guard let sample = medianChild(backend: backend.id, loops: loops) else { continue }
                fds.values[backend.id] = Double(sample.fds - bare.fds) / Double(loops)
                rss.values[backend.id] = Double(sample.rssKiB - bare.rssKiB) / Double(loops)
                left.values[backend.id] = Double(sample.fdsAfterExit - bare.fdsAfterExit)
            }
            figures += [fds, rss]
            if loops == loopCounts.max() { figures.append(left) }
        }
        return figures
    }

    /// What one child process reports: growth while the threads are parked, and the fds still
    /// open once they have all exited, relative to the child's own start.
    struct Sample: Codable, Sendable {
        var fds: Int
        var rssKiB: Int
        var fdsAfterExit: Int
    }

    /// ``childRuns`` children for `backend` (nil: bare threads); each field is the median of its
    /// runs. Nil if any child fails.
    private func medianChild(backend: BackendID?, loops: Int) -> Sample? {
        var samples: [Sample] = []
        for _ in 0..<childRuns {
            guard let sample = Self.child(backend: backend, loops: loops) else { return nil }
            samples.append(sample)
        }
        func median(_ field: (Sample) -> Int) -> Int { samples.map(field).sorted()[samples.count / 2] }
        return Sample(fds: median(\.fds), rssKiB: median(\.rssKiB), fdsAfterExit: median(\.fdsAfterExit))
    }

    /// Runs `runloop-bench footprint-child` for `backend` (nil: bare threads) and decodes its
    /// report; nil (and a log line) if the child fails.
    private static func child(backend: BackendID?, loops: Int) -> Sample? {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executablePath())
        process.arguments = ["footprint-child", "--loops", String(loops)]
            + (backend.map { ["--backend", $0.rawValue] } ?? [])
        let output = Pipe()
        process.standardOutput = output
        do {
            try process.run()
        } catch {
            log("footprint: cannot start child: \(error)")
            return nil
        }
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0,
              let sample = try? JSONDecoder().decode(Sample.self, from: data) else {
            let what = backend?.rawValue ?? "bare threads"
            log("footprint: child for \(what) failed (status \(process.terminationStatus))")
            return nil
        }
        return sample
    }

    private static func executablePath() -> String {
        (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
            ?? CommandLine.arguments[0]
    }

    /// The child's side: starts `loops` threads that each touch a loop of `backend` (none if
    /// nil) and park, measures, releases them, joins them, measures again.
    static func measureInThisProcess(backend: (any Backend)?, loops: Int) -> Sample {
        // One loop made and torn down first, on a thread of its own (bare threads: a bare
        // thread), so that what the first loop costs once per process — the backend's code
        // pages, libdispatch's and the runtime's lazily made state — is in the baseline and the
        // figure is what each further loop costs.
        BenchThread(stackSize: 256 << 10) { _ = backend?.touchLoop() }.join()
        let fds0 = openFileDescriptors()
        let rss0 = residentKiB()
        let ready = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let threads = (0..<loops).map { _ in
            BenchThread(stackSize: 256 << 10) {
                let keep = backend?.touchLoop()
                ready.signal()
                release.wait()
                withExtendedLifetime(keep) {}
            }
        }
        for _ in 0..<loops { ready.wait() }
        let fds1 = openFileDescriptors()
        let rss1 = residentKiB()
        for _ in 0..<loops { release.signal() }
        threads.forEach { $0.join() }
        let fds2 = openFileDescriptors()
        return Sample(fds: fds1 - fds0, rssKiB: rss1 - rss0, fdsAfterExit: fds2 - fds0)
    }

    private static func openFileDescriptors() -> Int {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count) ?? -1
    }

    private static func residentKiB() -> Int {
        guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return -1 }
        let fields = text.split(separator: " ")
        guard fields.count > 1, let pages = Int(fields[1]) else { return -1 }
        return pages * sysconf(Int32(_SC_PAGESIZE)) / 1024
    }
}
