// swift-tools-version:6.1
import PackageDescription

// RunLoopKit's integrations with the server ecosystem: swift-log (stall reports as structured
// log records), swift-metrics (loop metrics) and swift-service-lifecycle (worker threads as
// services, graceful shutdown). A package of its own so that an application depending on the
// RunLoopKit library fetches and builds none of these; one that wants them depends on this
// package's products. `make test` builds and tests it (`swift test --package-path Integrations`).
let package = Package(
    name: "RunLoopKitIntegrations",
    products: [
        .library(name: "RunLoopKitLogging", targets: ["RunLoopKitLogging"]),
        .library(name: "RunLoopKitMetrics", targets: ["RunLoopKitMetrics"]),
        .library(name: "RunLoopKitServiceLifecycle", targets: ["RunLoopKitServiceLifecycle"]),
        .executable(name: "AsyncMainService", targets: ["AsyncMainService"]),
    ],
    dependencies: [
        .package(name: "RunLoopKit", path: ".."),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
    ],
    targets: [
        .target(
            name: "RunLoopKitLogging",
            dependencies: [
                .product(name: "RunLoopKit", package: "RunLoopKit"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Sources/RunLoopKitLogging"
        ),
        .target(
            name: "RunLoopKitMetrics",
            dependencies: [
                .product(name: "RunLoopKit", package: "RunLoopKit"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
            ],
            path: "Sources/RunLoopKitMetrics"
        ),
        .target(
            name: "RunLoopKitServiceLifecycle",
            dependencies: [
                .product(name: "RunLoopKit", package: "RunLoopKit"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            path: "Sources/RunLoopKitServiceLifecycle"
        ),
        // `swift run --package-path Integrations AsyncMainService`: an async program on the main
        // run loop with a ServiceGroup, a worker-thread service and graceful shutdown on SIGTERM.
        .executableTarget(
            name: "AsyncMainService",
            dependencies: [
                .product(name: "RunLoopKit", package: "RunLoopKit"),
                "RunLoopKitServiceLifecycle",
                "RunLoopKitLogging",
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Examples/AsyncMainService"
        ),
        .testTarget(
            name: "RunLoopKitIntegrationsTests",
            dependencies: [
                .product(name: "RunLoopKit", package: "RunLoopKit"),
                "RunLoopKitLogging",
                "RunLoopKitMetrics",
                "RunLoopKitServiceLifecycle",
                // Built with the tests, so that they can run it as a child process.
                "AsyncMainService",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "MetricsTestKit", package: "swift-metrics"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "ServiceLifecycleTestKit", package: "swift-service-lifecycle"),
            ],
            path: "Tests/RunLoopKitIntegrationsTests"
        ),
    ],
    swiftLanguageModes: [.v6]
)
