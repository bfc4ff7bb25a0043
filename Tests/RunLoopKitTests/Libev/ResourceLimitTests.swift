import Foundation
import RunLoopKit
import Testing

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
}
