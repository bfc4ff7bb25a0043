@testable import RunLoopKit
import Testing

/// How a stall report reads: the summary first, the loop by name, and only the frames a reader
/// needs, scanned ones marked. Built from made-up frames, so every kind of frame is there.
@Suite struct StallReportFormatTests {
    typealias Frame = EvStallBacktrace.Frame

    private static func frame(
        _ index: Int, _ symbol: String?, image: String?, at location: String? = nil, scanned: Bool = false,
        _ origin: Frame.Origin
    ) -> Frame {
        Frame(
            index: index, address: 0x1000 + UInt(index), symbol: symbol, image: image, sourceLocation: location,
            isInlined: false, isFromStackScan: scanned, origin: origin)
    }

    /// A stall in application code called from a timer on a worker thread, with the frames a
    /// real capture has around it.
    static let stalledInTheApplication = EvStallBacktrace(frames: [
        frame(0, "__clock_gettime", image: "libc.so.6", .system),
        frame(1, "swift_get_time", image: "libswift_Concurrency.so", scanned: true, .swiftRuntime),
        frame(2, "decodeHugeImage(for:)", image: "App", at: "/src/App/main.swift:16:27", .application),
        frame(3, "helper()", image: "App", scanned: true, .application),
        frame(4, "static Callout.timer(_:on:)", image: "App", at: "/src/RunLoopKit/Engine/Callouts.swift:13:15", .runLoopKit),
        frame(5, "EvRunLoop.run(mode:timeout:returnAfterSourceHandled:)", image: "App", .runLoopKit),
        frame(6, "start_thread", image: "libc.so.6", .system),
        frame(7, "_init", image: "App", scanned: true, .application),
    ])

    @Test func onlyTheApplicationsFramesUpToTheThreadsStartAreKept() {
        #expect(Self.stalledInTheApplication.relevantFrames.map(\.index) == [2, 3])
    }

    @Test func theBacktraceReadsOneFrameALineWithScannedFramesMarked() {
        #expect(
            Self.stalledInTheApplication.description == """
                  #2 decodeHugeImage(for:) at /src/App/main.swift:16:27
                  #3 helper() in App [scanned: may be stale]
                  … 6 more frames left out: RunLoopKit, the Swift runtime, the C library, the thread's start
                """)
        #expect(Self.stalledInTheApplication.fullDescription.split(separator: "\n").count == 8, "every frame, for RunLoopKit itself")
    }

    @Test func withNoApplicationFrameEveryFrameUpToTheThreadsStartIsKept() {
        let backtrace = EvStallBacktrace(frames: [
            Self.frame(0, "EvRunLoop.fireDueTimers(_:_:)", image: "App", .runLoopKit),
            Self.frame(1, "EvRunLoop.iterate(_:)", image: "App", .runLoopKit),
            Self.frame(2, "start_thread@GLIBC_2.34", image: "libc.so.6", .system),
        ])
        #expect(backtrace.relevantFrames.map(\.index) == [0, 1])
    }

    @Test func aFramesOriginComesFromItsMangledNameOrItsImage() {
        #expect(Frame.origin(image: "libc.so.6", rawName: "clock_gettime", isThunk: false, sourcePath: nil) == .system)
        #expect(Frame.origin(image: "ld-linux-x86-64.so.2", rawName: nil, isThunk: false, sourcePath: nil) == .system)
        #expect(
            Frame.origin(image: "App", rawName: "__interceptor_memcpy", isThunk: false, sourcePath: "/b/llvm-project/compiler-rt/lib/asan/x.inc")
                == .system, "a sanitizer's runtime in the executable")
        #expect(
            Frame.origin(image: "App", rawName: "$s3App3fooyyFTo", isThunk: false, sourcePath: "/<compiler-generated>") == .swiftRuntime)
        #expect(
            Frame.origin(image: "App", rawName: "$s3App5stallyyF", isThunk: false, sourcePath: "/src/App/main.swift") == .application,
            "a frame without line information is still the application's")
        #expect(Frame.origin(image: "libswiftCore.so", rawName: "$sSS6appendyySSF", isThunk: false, sourcePath: nil) == .swiftRuntime)
        #expect(Frame.origin(image: "libdispatch.so", rawName: nil, isThunk: false, sourcePath: nil) == .swiftRuntime)
        #expect(Frame.origin(image: "App", rawName: "$sIeg_IeyB_TR", isThunk: true, sourcePath: nil) == .swiftRuntime)
        #expect(Frame.origin(image: "App", rawName: "$ss5print_9separator10terminatoryypd_S2StF", isThunk: false, sourcePath: nil) == .swiftRuntime)
        #expect(Frame.origin(image: "App", rawName: "$s10RunLoopKit7CalloutO5timer_2onyAA7EvTimerC_AA0aB0CtFZ", isThunk: false, sourcePath: nil) == .runLoopKit)
        #expect(Frame.origin(image: "App", rawName: "$s3App15decodeHugeImage3fors6UInt64Vs8DurationV_tF", isThunk: false, sourcePath: nil) == .application)
        #expect(Frame.origin(image: "libFoundation.so", rawName: "$s10Foundation6ThreadC5sleep", isThunk: false, sourcePath: nil) == .application)
        #expect(Frame.origin(image: "App", rawName: nil, isThunk: false, sourcePath: nil) == .application, "addresses only: kept")
        #expect(Frame.origin(image: nil, rawName: nil, isThunk: false, sourcePath: nil) == .system, "in no image: the vDSO")
    }

    @Test func theReportSaysWhatStalledAndWhereBeforeTheFrames() {
        let description = onLoopThread { loop in
            EvStallMonitor.Report(
                loop: loop, loopName: "line-w1", threadID: 4242, mode: .default, phase: .afterWaiting, callout: .timer,
                duration: .milliseconds(312), thresholdsExceeded: 3, backtrace: Self.stalledInTheApplication,
                backtraceUnavailableReason: nil
            ).description
        }
        let lines = description.split(separator: "\n", omittingEmptySubsequences: false)
        #expect(
            lines.first == """
                EvStallMonitor: run loop "line-w1" stalled 312 ms running a timer (phase afterWaiting, \
                mode \(EvRunLoop.Mode.default.name)), thread 4242, 3 thresholds; stalled thread:
                """)
        #expect(lines.dropFirst().first == "  #2 decodeHugeImage(for:) at /src/App/main.swift:16:27")
    }

    @Test func theSummaryIsOneShortLine() {
        let summary = onLoopThread { loop in
            EvStallMonitor.Report(
                loop: loop, loopName: "main", threadID: nil, mode: nil, phase: .beforeSources, callout: nil,
                duration: .milliseconds(240), thresholdsExceeded: 3, backtrace: nil, backtraceUnavailableReason: "off"
            ).summary
        }
        #expect(summary == #"run loop "main" stalled 240 ms running no callout"#)
    }
}
