// swift-tools-version:6.1
import PackageDescription

// runloop-bench: RunLoopKit side by side with raw libev, the real CFRunLoop, SwiftNIO and
// libdispatch. A package of its own so that what only the benchmark needs (argument parsing,
// histograms, SwiftNIO) never reaches an application that depends on RunLoopKit.
// Run it from the repository root with `make bench` (or `swift run --package-path Benchmarks
// -c release runloop-bench`).
let package = Package(
    name: "RunLoopBench",
    products: [
        .executable(name: "runloop-bench", targets: ["RunLoopBench"]),
    ],
    dependencies: [
        .package(name: "RunLoopKit", path: ".."),
        // hiredis with its libev adapter and a redis-server, for scenario hiredis (make
        // bench-deps installs libhiredis-dev and redis-server).
        .package(name: "HiredisOnRunLoop", path: "../Examples/HiredisOnRunLoop"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/HdrHistogram/hdrhistogram-swift", from: "0.1.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.65.0"),
    ],
    targets: [
        // libev for the raw-libev backend: includes the root's Sources/CLibev/shim.h under a
        // module name of this package's own (CLibev is RunLoopKit's target).
        .systemLibrary(
            name: "BenchLibev",
            path: "BenchLibev",
            providers: [.apt(["libev-dev"])]
        ),
        // The CF run-loop declarations (the root's Tests/CFConformanceSupport/include/
        // CFRunLoopAPI.h) and the benchmark's C helpers (clock, CPU pinning).
        .target(
            name: "CCFRunLoop",
            path: "CCFRunLoop"
        ),
        // Scenario hiredis's client, on both loops. A target of its own: hiredis's libev adapter
        // brings libev's header into a second C module, which BenchLibev's users must not see.
        .target(
            name: "HiredisBench",
            dependencies: [
                .product(name: "RunLoopKit", package: "RunLoopKit"),
                .product(name: "CHiredis", package: "HiredisOnRunLoop"),
            ],
            path: "HiredisBench"
        ),
        .executableTarget(
            name: "RunLoopBench",
            dependencies: [
                .product(name: "RunLoopKit", package: "RunLoopKit"),
                "BenchLibev",
                "CCFRunLoop",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Histogram", package: "hdrhistogram-swift"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                "HiredisBench",
                .product(name: "RedisServer", package: "HiredisOnRunLoop"),
            ],
            path: "RunLoopBench"
        ),
    ],
    swiftLanguageModes: [.v6]
)
