// A product is not switched off with its trait, so its absence must say what to enable.
#if !Metrics
#error("RunLoopKitMetrics needs the package trait \"Metrics\": in Package.swift, .package(url: \"…RunLoopKit…\", from: \"…\", traits: [\"Metrics\"]); in a RunLoopKit checkout, swift build --enable-all-traits (make test)")
#endif
