// A product is not switched off with its trait, so its absence must say what to enable.
#if !Logging
#error("RunLoopKitLogging needs the package trait \"Logging\": in Package.swift, .package(url: \"…RunLoopKit…\", from: \"…\", traits: [\"Logging\"]); in a RunLoopKit checkout, swift build --enable-all-traits (make test)")
#endif
