// A product is not switched off with its trait, so its absence must say what to enable.
#if !Logging
#error("RunLoopKitLogging needs the package trait \"Logging\": add traits: [\"Logging\"] to RunLoopKit's .package(url: …) line in Package.swift (building RunLoopKit itself: swift build --enable-all-traits)")
#endif
