// swift-tools-version:6.1
import PackageDescription

let package = Package(
    name: "RunLoopKit",
    products: [
        .library(name: "RunLoopKit", targets: ["RunLoopKit"]),
        // Each needs its package trait; built without it, the module stops with an error naming it.
        .library(name: "RunLoopKitLogging", targets: ["RunLoopKitLogging"]),
        .library(name: "RunLoopKitMetrics", targets: ["RunLoopKitMetrics"]),
        .library(name: "RunLoopKitServiceLifecycle", targets: ["RunLoopKitServiceLifecycle"]),
    ],
    // Off by default: an application that enables none fetches and builds nothing but RunLoopKit,
    // since SwiftPM leaves out a dependency that only disabled traits use. A build of this
    // repository itself compiles every target, so it needs them all: --enable-all-traits (make).
    traits: [
        .trait(name: "Logging", description: "RunLoopKitLogging: stall reports as swift-log records."),
        .trait(name: "Metrics", description: "RunLoopKitMetrics: a run loop's metrics through swift-metrics."),
        .trait(
            name: "ServiceLifecycle",
            description: "RunLoopKitServiceLifecycle: worker threads and loop groups as swift-service-lifecycle services."),
        .default(enabledTraits: []),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
    ],
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
            // CLibev: the EvLibevSource tests start libev watchers as a libev library would.
            dependencies: ["RunLoopKit", "CEpoll", "CLibev", "MainLoopHarness", "AsyncMainHarness", "FaultHarness", "TestSupport"],
            path: "Tests/RunLoopKitTests"
        ),
        // Fault injection: wrappers of epoll_ctl, epoll_wait, eventfd, timerfd_create,
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
        // Runnable examples of the components: `swift run KeepAliveWorker` etc.
        .executableTarget(name: "KeepAliveWorker", dependencies: ["RunLoopKit"], path: "Examples/KeepAliveWorker"),
        .executableTarget(name: "CommonModeTimer", dependencies: ["RunLoopKit"], path: "Examples/CommonModeTimer"),
        .executableTarget(name: "StallMonitorDemo", dependencies: ["RunLoopKit"], path: "Examples/StallMonitorDemo"),
        // The integrations, one module per trait; every dependency outside RunLoopKit is the trait's.
        .target(
            name: "RunLoopKitLogging",
            dependencies: ["RunLoopKit", .product(name: "Logging", package: "swift-log", condition: .when(traits: ["Logging"]))],
            path: "Sources/RunLoopKitLogging"
        ),
        .target(
            name: "RunLoopKitMetrics",
            dependencies: [
                "RunLoopKit", .product(name: "CoreMetrics", package: "swift-metrics", condition: .when(traits: ["Metrics"])),
            ],
            path: "Sources/RunLoopKitMetrics"
        ),
        .target(
            name: "RunLoopKitServiceLifecycle",
            dependencies: [
                "RunLoopKit",
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle", condition: .when(traits: ["ServiceLifecycle"])),
            ],
            path: "Sources/RunLoopKitServiceLifecycle"
        ),
        // `swift run --enable-all-traits AsyncMainService`: an async program on the main run loop
        // with a ServiceGroup, a worker-thread service and graceful shutdown on SIGTERM.
        .executableTarget(
            name: "AsyncMainService",
            dependencies: [
                "RunLoopKit",
                .target(name: "RunLoopKitLogging", condition: .when(traits: ["Logging"])),
                .target(name: "RunLoopKitServiceLifecycle", condition: .when(traits: ["ServiceLifecycle"])),
                .product(name: "Logging", package: "swift-log", condition: .when(traits: ["Logging"])),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle", condition: .when(traits: ["ServiceLifecycle"])),
            ],
            path: "Examples/AsyncMainService"
        ),
        // The integrations' tests; each file is compiled with its trait only.
        .testTarget(
            name: "RunLoopKitIntegrationsTests",
            dependencies: [
                "RunLoopKit",
                .target(name: "RunLoopKitLogging", condition: .when(traits: ["Logging"])),
                .target(name: "RunLoopKitMetrics", condition: .when(traits: ["Metrics"])),
                .target(name: "RunLoopKitServiceLifecycle", condition: .when(traits: ["ServiceLifecycle"])),
                // Built with the tests, so that they can run it as a child process.
                .target(name: "AsyncMainService", condition: .when(traits: ["Logging", "ServiceLifecycle"])),
                .product(name: "Logging", package: "swift-log", condition: .when(traits: ["Logging"])),
                .product(name: "MetricsTestKit", package: "swift-metrics", condition: .when(traits: ["Metrics"])),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle", condition: .when(traits: ["ServiceLifecycle"])),
                .product(
                    name: "ServiceLifecycleTestKit", package: "swift-service-lifecycle", condition: .when(traits: ["ServiceLifecycle"])),
            ],
            path: "Tests/RunLoopKitIntegrationsTests"
        ),
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
