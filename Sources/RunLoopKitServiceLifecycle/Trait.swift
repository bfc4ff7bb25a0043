// A product is not switched off with its trait, so its absence must say what to enable.
#if !ServiceLifecycle
#error("RunLoopKitServiceLifecycle needs the package trait \"ServiceLifecycle\": add traits: [\"ServiceLifecycle\"] to RunLoopKit's .package(url: …) line in Package.swift (building RunLoopKit itself: swift build --enable-all-traits)")
#endif
