// swift-tools-version:6.1
import PackageDescription

// libcurl's multi_socket API on a RunLoopKit loop, driven by ev_io and ev_timer watchers on an
// EvLibevSource's libev loop as a C program drives them on a plain libev loop,
// with tests against a local HTTP server. A package of its own, so that RunLoopKit needs
// neither libcurl nor Python. Needs libcurl4-openssl-dev (or another libcurl -dev), libev-dev
// and python3: `swift test --package-path Examples/CurlOnRunLoop`.
let package = Package(
    name: "CurlOnRunLoop",
    dependencies: [
        .package(name: "RunLoopKit", path: "../.."),
    ],
    targets: [
        // The glue between curl's multi_socket callbacks and libev, as a C program writes it.
        .target(
            name: "CCurlEv",
            path: "Sources/CCurlEv",
            linkerSettings: [.linkedLibrary("curl"), .linkedLibrary("ev")]
        ),
        // python3's http.server on 127.0.0.1, on a port the kernel chose, serving a directory.
        .target(name: "HTTPTestServer", path: "Sources/HTTPTestServer"),
        .testTarget(
            name: "CurlOnRunLoopTests",
            dependencies: [.product(name: "RunLoopKit", package: "RunLoopKit"), "CCurlEv", "HTTPTestServer"],
            path: "Tests/CurlOnRunLoopTests"
        ),
    ],
    swiftLanguageModes: [.v6]
)
