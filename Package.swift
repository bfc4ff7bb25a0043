// swift-tools-version:6.1
import PackageDescription

let package = Package(
    name: "RunLoopKit",
    products: [
        .library(name: "RunLoopKit", targets: ["RunLoopKit"]),
    ],
    // No package dependencies: an application that depends on RunLoopKit fetches and builds
    // nothing else. The benchmark (and what only it needs) is the nested package Benchmarks/.
    targets: [
        // libev, from Debian's libev-dev. Only RunLoopKit's libev layer imports it (the
        // benchmark's raw-libev backend includes the same shim as its own BenchLibev module).
        .systemLibrary(
            name: "CLibev",
            path: "Sources/CLibev",
            providers: [.apt(["libev-dev"])]
        ),
        // Linux's epoll header, which the Glibc module leaves out (RunLoopKit's DescriptorSet).
        .systemLibrary(
            name: "CEpoll",
            path: "Sources/CEpoll"
        ),
        .target(
            name: "RunLoopKit",
            dependencies: ["CLibev", "CEpoll"],
            path: "Sources/RunLoopKit"
        ),
        // What the test targets share: a TSan-visible lock, named threads, a seeded generator.
        .target(
            name: "TestSupport",
            path: "Tests/TestSupport"
        ),
        .testTarget(
            name: "RunLoopKitTests",
            dependencies: ["RunLoopKit", "CEpoll", "MainLoopHarness", "AsyncMainHarness", "FaultHarness", "TestSupport"],
            path: "Tests/RunLoopKitTests"
        ),
        // Fault injection (issue 10): wrappers of epoll_ctl, epoll_wait, eventfd, timerfd_create,
        // timerfd_settime, read and write that fail chosen calls with a chosen errno. Linked into
        // FaultHarness only, whose definitions then stand in for libc's, libev's calls included.
        .target(
            name: "FaultInjection",
            path: "Tests/FaultInjection"
        ),
        // Runs one fault scenario per process for FaultInjectionTests.
        .executableTarget(
            name: "FaultHarness",
            dependencies: ["RunLoopKit", "FaultInjection"],
            path: "Tests/FaultHarness"
        ),
        // Owns a real main thread for the main-loop tests (Swift Testing gives the main thread up);
        // drives CF's main loop too, for the scenarios compared with CF.
        .executableTarget(
            name: "MainLoopHarness",
            dependencies: ["RunLoopKit", "CFConformanceSupport", "TestSupport"],
            path: "Tests/MainLoopHarness"
        ),
        // A program with an async main, for the shapes of async code that must either work or
        // stop with a message naming the fix (AsyncMisuseTests).
        .executableTarget(
            name: "AsyncMainHarness",
            dependencies: ["RunLoopKit"],
            path: "Tests/AsyncMainHarness"
        ),
        // Runnable examples of the components (issue #5): `swift run KeepAliveWorker` etc.
        .executableTarget(name: "KeepAliveWorker", dependencies: ["RunLoopKit"], path: "Examples/KeepAliveWorker"),
        .executableTarget(name: "CommonModeTimer", dependencies: ["RunLoopKit"], path: "Examples/CommonModeTimer"),
        .executableTarget(name: "StallMonitorDemo", dependencies: ["RunLoopKit"], path: "Examples/StallMonitorDemo"),
        // Declarations of the CoreFoundation run-loop C API exported by Swift's libFoundation.so
        // (CFRunLoopAPI.h, which the benchmark's CCFRunLoop includes too) and of the CF calls only
        // the conformance suite needs (observers, removal, mode lists, the current mode).
        .target(
            name: "CFConformanceSupport",
            path: "Tests/CFConformanceSupport"
        ),
        // Differential conformance: the same operations on the real CFRunLoop and on RunLoopKit.
        .testTarget(
            name: "ConformanceTests",
            dependencies: ["RunLoopKit", "CFConformanceSupport", "TestSupport"],
            path: "Tests/ConformanceTests"
        ),
        // Many threads adding, removing, signalling, performing and waking while loops run.
        .testTarget(
            name: "StressTests",
            dependencies: ["RunLoopKit", "TestSupport"],
            path: "Tests/StressTests"
        ),
    ],
    swiftLanguageModes: [.v6]
)
