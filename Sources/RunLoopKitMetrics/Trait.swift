// A product is not switched off with its trait, so its absence must say what to enable.
#if !Metrics
#error("RunLoopKitMetrics needs the package trait \"Metrics\": add traits: [\"Metrics\"] to RunLoopKit's .package(url: …) line in Package.swift (building RunLoopKit itself: swift build --enable-all-traits)")
#endif
