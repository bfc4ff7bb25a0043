import Foundation
import Testing

/// Failing system calls. Each scenario runs in the FaultHarness program, into which the
/// FaultInjection target is linked: its epoll_ctl, epoll_wait, eventfd, timerfd_create,
/// timerfd_settime, read and write fail chosen calls with EINTR, EMFILE, ENOMEM or ENOSPC
/// (see Tests/FaultInjection/include/FaultInjection.h). Under it
/// the library retries EINTR, throws typed errors or reports `.error`, never aborts inside
/// libev, never sleeps past a deadline and never loses a signal or a message. The harness's own
/// watchdog fails a scenario that hangs (exit 3) after 30 s; each takes well under a second.
@Suite struct FaultInjectionTests {
    /// Runs a harness scenario; returns its exit status, standard output and standard error.
    private func harness(_ scenario: String) throws -> (status: Int32, output: String, errors: String) {
        let products = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
        let process = Process()
        process.executableURL = products.appendingPathComponent("FaultHarness")
        process.arguments = [scenario]
        // A deliberate crash should end at once, not wait for Swift's backtracer.
        process.environment = ProcessInfo.processInfo.environment.merging(["SWIFT_BACKTRACE": "enable=no"]) { $1 }
        let output = Pipe()
        let errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        let errorData = Box<Data>(Data())
        let errorReader = Thread { errorData.set(errors.fileHandleForReading.readDataToEndOfFile()) }
        errorReader.start()
        let outputData = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        while !errorReader.isFinished { usleep(1000) }
        return (process.terminationStatus, String(decoding: outputData, as: UTF8.self), String(decoding: errorData.get, as: UTF8.self))
    }

    private func expectPass(_ scenario: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let (status, output, errors) = try harness(scenario)
        #expect(status == 0 && output.hasSuffix("PASS\n"), "\(scenario): exit \(status)\n\(output)\(errors)", sourceLocation: sourceLocation)
    }

    /// A loop's creation with `eventfd` or libev's `epoll_ctl` failing throws
    /// `outOfFileDescriptors` (EMFILE) or `backendUnavailable` naming the call (ENOMEM, ENOSPC);
    /// EINTR and a passing ENOMEM are retried.
    @Test func creationFailuresThrowTypedErrorsAndEINTRIsRetried() throws {
        try expectPass("creation")
    }

    /// The timerfd is made at the loop's first sleep with a deadline. When `timerfd_create`
    /// fails then (EMFILE, ENOMEM, on every call), the timer still fires on time: the loop stands
    /// in for the timerfd as for one that cannot be armed; EINTR is retried.
    @Test func aTimerfdThatCannotBeMadeNeverSleepsPastTheDeadline() throws {
        try expectPass("timerfd-create")
        try expectPass("timerfd-create-enomem")
        try expectPass("timerfd-create-eintr")
    }

    /// libev's `epoll_ctl` for the loop's timerfd fails once (ENOMEM), or for the wake-up eventfd
    /// (ENOSPC): the registration is retried, so the timerfd's `EV_ERROR` is not taken for a
    /// deadline (timers would never fire again) and libev does not abort ("pipe_w not active").
    @Test func aFailedEpollCtlOnTheTimerfdOrEventfdIsRetried() throws {
        try expectPass("deadline-epoll-ctl")
        try expectPass("wake-epoll-ctl")
    }

    /// libev's `epoll_ctl` for the loop's own epoll set fails (ENOMEM); libev stops the watcher
    /// with `EV_ERROR`, and the loop re-arms it: the caller's descriptor still reports, also when
    /// nothing else would end the sleep libev made that call in.
    @Test func aFailedEpollCtlOnAnInternalDescriptorIsReArmed() throws {
        try expectPass("internal-watcher")
        try expectPass("internal-watcher-asleep")
    }

    /// `timerfd_settime` fails on every call; a timer still fires on time (the loop stands in for
    /// the timerfd) instead of the loop sleeping past its deadline.
    @Test func aFailingTimerfdSettimeNeverSleepsPastTheDeadline() throws {
        try expectPass("timerfd-settime")
        try expectPass("timerfd-settime-eintr")
    }

    /// `epoll_wait` failing a few times (ENOMEM, EINTR) in libev is retried: before, libev's
    /// `ev_syserr` aborted the process ("(libev) epoll_wait").
    @Test func aFailingEpollWaitIsRetried() throws {
        try expectPass("epoll-wait")
        try expectPass("epoll-wait-eintr")
        try expectPass("timer-read")
    }

    /// `epoll_wait` failing for good stops the process with a message naming RunLoopKit's call.
    @Test func anEpollWaitThatAlwaysFailsStopsWithAMessageNamingTheCall() throws {
        let (status, _, errors) = try harness("epoll-wait-forever")
        #expect(status != 0)
        #expect(errors.contains("EvRunLoop.run(mode:timeout:returnAfterSourceHandled:): epoll_wait keeps failing"), "\(errors)")
    }

    /// `epoll_ctl` refusing one of the loop's own descriptors with `EBADF`, which libev asserts
    /// on, ends in RunLoopKit's message naming its call: a thrown error when the loop is made,
    /// a stop with the message later (the timerfd's registration). Before, libev's assertion.
    @Test func anEBADFOnTheLoopsOwnDescriptorEndsInRunLoopKitsMessage() throws {
        try expectPass("own-descriptor-ebadf-creation")
        let (status, _, errors) = try harness("own-descriptor-ebadf")
        #expect(status != 0)
        #expect(errors.contains("EvRunLoop.run(mode:timeout:returnAfterSourceHandled:): epoll_ctl refused the loop's own descriptor"), "\(errors)")
        #expect(!errors.contains("libev:"), "\(errors)")
    }

    /// A wake-up whose eventfd `write` fails (ENOMEM, EINTR), and a loop whose `read` of it
    /// fails, lose no message: 100 sends to a sleeping loop, 100 deliveries in order.
    @Test func failingWakeUpWritesAndReadsLoseNoMessage() throws {
        try expectPass("wake-write")
        try expectPass("wake-write-eintr")
    }

    /// A signal whose handler's eventfd write fails is still handled.
    @Test func aSignalIsHandledWhenItsWakeUpWriteFails() throws {
        try expectPass("signal-write")
    }

    /// EINTR on every other wrapped call of the loop's thread while timers, 1,000 port
    /// messages, a signal and a pipe keep it busy: everything arrives, exactly once, in order.
    @Test func eintrOnEveryOtherCallLosesNothing() throws {
        try expectPass("eintr-everywhere")
    }

    /// A wake-up cycle makes no `timerfd_settime` for a deadline that did not change (none with
    /// no timer, one for a far-off timer, over 100 cycles), one `epoll_wait` (libev's sleep, as
    /// raw libev's), and its poll after a handled source none when nothing it watches could be
    /// ready.
    @Test func aWakeUpCycleMakesNoSystemCallLibevWouldNot() throws {
        try expectPass("quiet-wakeups")
        try expectPass("quiet-wakeups-timer")
    }

    /// Many descriptors ready at once cost a few `epoll_ctl`s each, not one per iteration each
    /// waits for its turn (R38 handles one per iteration).
    @Test func manyReadyDescriptorsCostAFewEpollCtlEach() throws {
        try expectPass("many-ready-descriptors")
    }

    /// Descriptors ready together round after round, as a busy server's connections, cost one
    /// `epoll_ctl` per handled readiness: none at the report, one as its handler is about to run.
    @Test func descriptorsReadyTogetherCostOneEpollCtlPerHandledReadiness() throws {
        try expectPass("ready-together")
    }

    /// A descriptor number reused connection after connection, each source invalidated on the
    /// loop's thread before its descriptor is closed, costs the same few `epoll_ctl`s per turn.
    @Test func aNumberReusedAfterEachSourceIsInvalidatedThenClosedCostsNoChecks() throws {
        try expectPass("reused-number")
    }

    /// A nested run of another mode beside many watched descriptors costs one `epoll_ctl` per
    /// descriptor, the re-arm as their mode runs again, and loses no readiness.
    @Test func aModeSwitchBesideManyDescriptorsCostsOneEpollCtlEach() throws {
        try expectPass("mode-switch")
    }

    /// A nested run of another mode while readiness of many descriptors waits its turn makes no
    /// `epoll_ctl` for those entries before it sleeps: each readiness costs two, the re-arm as
    /// its mode runs again and the one as its handler is about to run.
    @Test func aNestedRunBesideWaitingReadinessReArmsNothingBeforeItSleeps() throws {
        try expectPass("nested-run-beside-readiness")
    }

    /// A source whose watch a nested run of another mode parked, invalidated on the loop's thread
    /// and then closed, leaves no kernel entry behind: the next file under its number costs one
    /// `epoll_ctl` per readiness, with no check against the file register.
    @Test func aParkedSourceEndedThenClosedLeavesNoEntryToCheckAgainst() throws {
        try expectPass("parked-number")
    }

    /// A source whose descriptor was closed before it was invalidated leaves a number whose
    /// next file's re-arms are checked only until the kernel shows no other entry under it: 40
    /// readinesses cost about one `epoll_ctl` each, not two.
    @Test func aNumberClosedBeforeItsSourceEndedIsCheckedOnlyUntilClear() throws {
        try expectPass("closed-first-number")
    }

    /// The main loop's switches into a mode that is not common and back cost no `epoll_ctl` for
    /// the main queue's watcher, and main-queue work queued meanwhile runs once a common mode runs.
    @Test func aMainLoopModeSwitchCostsNoEpollCtlForTheMainQueue() throws {
        try expectPass("main-mode-switch")
    }

    /// The main loop makes the main-queue shortcut's look only where an observer of the wait
    /// could tell it from the sleep, and main-queue work runs either way.
    @Test func theMainLoopLooksAtTheMainQueueOnlyWhenAnObserverCouldTell() throws {
        try expectPass("main-handled-sources")
    }

    /// A repeating timer's kernel timer repeats by itself: per fire one `epoll_wait` and one
    /// `read`, no `timerfd_settime` after the first.
    @Test func aRepeatingTimerIsNotReArmedEveryPeriod() throws {
        try expectPass("periodic-timer-syscalls")
    }
}
