// swift-tools-version:6.1
import PackageDescription

// hiredis's async client on a RunLoopKit loop, through hiredis's own libev adapter
// (`redisLibevAttach`) and an `EvLibevSource`: the example of the README's "Using libev
// libraries", its tests against a real redis-server, and what the benchmark's hiredis scenario
// shares with them. A package of its own, so that RunLoopKit and its dependants need neither
// hiredis nor Redis. `make test` builds and tests it (`swift test --package-path
// Examples/HiredisOnRunLoop`) after installing libhiredis-dev and redis-server.
let package = Package(
    name: "HiredisOnRunLoop",
    products: [
        .executable(name: "hiredis-on-runloop", targets: ["hiredis-on-runloop"]),
        // For the benchmark: hiredis with its libev adapter, and a redis-server to talk to.
        .library(name: "CHiredis", targets: ["CHiredis"]),
        .library(name: "RedisServer", targets: ["RedisServer"]),
    ],
    dependencies: [
        .package(name: "RunLoopKit", path: "../.."),
    ],
    targets: [
        // Debian's hiredis (libhiredis-dev) with its libev adapter, hiredis/adapters/libev.h.
        .systemLibrary(
            name: "CHiredis",
            path: "Sources/CHiredis",
            providers: [.apt(["libhiredis-dev", "libev-dev"])]
        ),
        // Starts a redis-server on 127.0.0.1, on a free port, with persistence off.
        .target(name: "RedisServer", path: "Sources/RedisServer"),
        // The README's code: SET and GET through hiredis on the calling thread's run loop.
        .target(
            name: "HiredisExample",
            dependencies: [.product(name: "RunLoopKit", package: "RunLoopKit"), "CHiredis"],
            path: "Sources/HiredisExample"
        ),
        // `swift run --package-path Examples/HiredisOnRunLoop hiredis-on-runloop`
        .executableTarget(
            name: "hiredis-on-runloop",
            dependencies: ["HiredisExample", "RedisServer"],
            path: "Sources/hiredis-on-runloop"
        ),
        .testTarget(
            name: "HiredisOnRunLoopTests",
            dependencies: [
                .product(name: "RunLoopKit", package: "RunLoopKit"), "CHiredis", "RedisServer", "HiredisExample",
                // Built with the tests, so that they can run it as a child process.
                "hiredis-on-runloop",
            ],
            path: "Tests/HiredisOnRunLoopTests"
        ),
    ],
    swiftLanguageModes: [.v6]
)
