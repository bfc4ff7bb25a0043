import Foundation
import RunLoopKit
import Testing
import TestSupport

@Suite struct ResourceLimitTests {
    /// Out of file descriptors, creating a loop throws `outOfFileDescriptors` (nothing crashes or
    /// hangs), and a loop made before keeps working. Runs in a child process, whose descriptor
    /// limit it lowers.
    @Test func outOfDescriptorsCreatingALoopThrowsAndExistingLoopsKeepWorking() async {
        let outcome = await #expect(processExitsWith: .success) {
            // A loop made while descriptors are plentiful, on a thread of its own.
            let survivor = EvMessagePort<Int> { value in
                if value == 42 { EvRunLoop.current.stop() }
            }
            let survivorLoop = Box<EvRunLoop?>(nil)
            let survivorResult = Box<EvRunLoop.RunResult?>(nil)
            let ready = Latch()
            let finished = Latch()
            let thread = Thread {
                let loop = EvRunLoop.current
                loop.add(survivor, forMode: .default)
                survivorLoop.set(loop)
                ready.open()
                survivorResult.set(loop.run(mode: .default, timeout: .seconds(60)))
                finished.open()
            }
            thread.start()
            guard ready.wait() else { exit(10) }

            // Fill the descriptor table, leaving none free.
            var limit = rlimit()
            getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit)
            limit.rlim_cur = rlim_t(openFileDescriptorCount() + 16)
            guard setrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0 else { exit(11) }
            var hoard: [Int32] = []
            while true {
                let fd = dup(0)
                if fd < 0 { break }
                hoard.append(fd)
            }

            // Creating a loop now fails with the typed error, on a fresh thread.
            let failure = Box<EvRunLoopError?>(nil)
            let tried = Latch()
            Thread {
                do throws(EvRunLoopError) {
                    _ = try EvRunLoop.forCurrentThread()
                } catch {
                    failure.set(error)
                }
                tried.open()
            }.start()
            guard tried.wait() else { exit(12) }
            guard failure.get == .outOfFileDescriptors else { exit(13) }
            guard failure.get!.description.contains("out of file descriptors") else { exit(14) }

            // Give descriptors back and check the older loop still works.
            hoard.forEach { close($0) }
            try? survivor.send(42)
            guard finished.wait(), survivorResult.get == .stopped else { exit(15) }
        }
        #expect(outcome?.exitStatus == .exitCode(0))
    }

    /// At every level of exhaustion — 0, 1, 2 … free descriptors — creating a loop and starting
    /// a worker throw `outOfFileDescriptors`, and with enough free they work.
    /// Before, with one or two free, libev's lazily created eventfd fell back to a pipe and
    /// `ev_syserr` aborted the process ("error creating signal/async pipe"). In a child process.
    @Test func everyLevelOfDescriptorExhaustionThrowsInsteadOfAborting() async {
        await #expect(processExitsWith: .success) {
            var limit = rlimit()
            getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit)
            limit.rlim_cur = rlim_t(openFileDescriptorCount() + 32)
            guard setrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0 else { exit(11) }
            for free in 0...6 {
                var hoard: [Int32] = []
                while true {
                    let fd = dup(2)
                    if fd < 0 { break }
                    hoard.append(fd)
                }
                for _ in 0..<free { close(hoard.removeLast()) }

                // A loop on a fresh thread (torn down when the thread exits).
                let loopOutcome = Box<String>("")
                let thread = spawnThread {
                    do throws(EvRunLoopError) {
                        let loop = try EvRunLoop.forCurrentThread()
                        loopOutcome.set(loop.run(mode: .default, timeout: .zero) == .finished ? "ok" : "bad run")
                    } catch {
                        loopOutcome.set("\(error)")
                    }
                }
                pthread_join(thread, nil)

                // A worker, whose thread makes its loop.
                let worker = EvWorkerThread()
                var workerOutcome = "ok"
                do throws(EvWorkerThreadError) {
                    try worker.start()
                    worker.stop()
                } catch {
                    workerOutcome = "\(error)"
                }
                hoard.forEach { close($0) }

                // A loop needs two descriptors to be made: its epoll set and its eventfd (its
                // timerfd comes at its first sleep with a deadline).
                let expected = free >= 2 ? "ok" : EvRunLoopError.outOfFileDescriptors.description
                let expectedWorker = free >= 2 ? "ok" : EvWorkerThreadError.runLoopUnavailable(.outOfFileDescriptors).description
                guard loopOutcome.get == expected, workerOutcome == expectedWorker else {
                    print("free \(free): loop \(loopOutcome.get), worker \(workerOutcome)")
                    exit(Int32(20 + free))
                }
            }
        }
    }
}
