// A product is not switched off with its trait, so its absence must say what to enable.
#if !ServiceLifecycle
#error("RunLoopKitServiceLifecycle needs the package trait \"ServiceLifecycle\": in Package.swift, .package(url: \"…RunLoopKit…\", from: \"…\", traits: [\"ServiceLifecycle\"]); in a RunLoopKit checkout, swift build --enable-all-traits (make test)")
#endif
