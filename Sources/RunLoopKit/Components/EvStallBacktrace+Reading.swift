extension EvStallBacktrace {
    /// The frames a person reading a stall report needs, innermost first: the application's
    /// (``Frame/Origin/application``), from the innermost frame to the thread's or process's
    /// start. RunLoopKit's run-loop machinery, the Swift runtime, compiler thunks, the C library,
    /// and whatever a scan found beyond the thread's start are left out; frames found by scanning
    /// stay, marked (``Frame/isFromStackScan``).
    ///
    /// When no frame is the application's (the loop stalled in RunLoopKit's own work, or the
    /// backtrace has addresses only and nothing could be told apart), every frame up to the
    /// thread's start is kept instead.
    public var relevantFrames: [Frame] {
        let live = frames.prefix { !$0.isThreadStart }
        let application = live.filter { $0.origin == .application }
        return application.isEmpty ? Array(live) : application
    }

    /// The ``relevantFrames``, one numbered line each (the number is the frame's place in
    /// ``frames``, so gaps show where frames were left out), then how many were left out:
    ///
    ///     #5 decodeHugeImage(for:) at /src/App/main.swift:16:27
    ///     #6 closure #3 in App.main() at /src/App/main.swift:39:9
    ///     #9 0x55d1c2a0b1f0 in App [scanned: may be stale]
    ///     … 14 more frames left out: RunLoopKit, the Swift runtime, the C library, the thread's start
    public var description: String {
        let shown = relevantFrames
        var lines = shown.map { "  #\($0.index) \($0.readable)" }
        if shown.count < frames.count {
            lines.append(
                "  … \(frames.count - shown.count) more frames left out: RunLoopKit, the Swift runtime, the C library, the thread's start")
        }
        return lines.joined(separator: "\n")
    }

    /// Every frame, one numbered line each with its address and image: for looking into
    /// RunLoopKit itself.
    public var fullDescription: String {
        frames.map { "  #\($0.index) \($0)" }.joined(separator: "\n")
    }
}

extension EvStallBacktrace.Frame {
    /// The address, then whatever is known: symbol, source location, image, flags.
    public var description: String {
        var text = "0x" + String(address, radix: 16)
        if let symbol { text += " \(symbol)" }
        if let sourceLocation { text += " at \(sourceLocation)" }
        if let image { text += " (\(image))" }
        if isInlined { text += " [inlined]" }
        if isFromStackScan { text += " [scanned: may be stale]" }
        return text
    }

    /// The symbol and where it is, else the address and its image; then the flags.
    var readable: String {
        var text: String
        if let symbol {
            text = symbol
            if let sourceLocation {
                text += " at \(sourceLocation)"
            } else if let image {
                text += " in \(image)"
            }
        } else {
            text = "0x" + String(address, radix: 16) + (image.map { " in \($0)" } ?? "")
        }
        if isInlined { text += " [inlined]" }
        if isFromStackScan { text += " [scanned: may be stale]" }
        return text
    }

    /// Where a thread's or the process's life begins: frames further out are start-up code, or
    /// stale words a scan took for return addresses.
    var isThreadStart: Bool {
        guard let symbol else { return false }
        return ["start_thread", "__libc_start_call_main", "__libc_start_main", "__clone", "clone3", "_start"]
            .contains { symbol == $0 || symbol.hasPrefix($0 + "@") }
    }

    /// Whose code a frame runs: by its symbol's mangled name where it has one (Swift names carry
    /// their module), else by the image that holds it, or the source file for a sanitizer's
    /// runtime linked into the executable. An address in no image is the kernel's (the vDSO's
    /// `clock_gettime`, say).
    static func origin(image: String?, rawName: String?, isThunk: Bool, sourcePath: String?) -> Origin {
        guard let image else { return .system }
        let systemImages = ["libc.so", "libc-", "ld-linux", "libpthread", "libdl.", "libm.so", "librt.", "libgcc_s", "libstdc++"]
        if systemImages.contains(where: image.hasPrefix) { return .system }
        if image.hasPrefix("libswift") || image.hasPrefix("libdispatch") || image.hasPrefix("libBlocksRuntime") {
            return .swiftRuntime
        }
        if let sourcePath {
            if sourcePath.contains("/compiler-rt/") { return .system }
            if sourcePath.hasSuffix("<compiler-generated>") { return .swiftRuntime }
        }
        guard let rawName else { return .application }
        if isThunk { return .swiftRuntime }
        // "$s" then the module's name with its length: 10RunLoopKit, or "s" for the standard library.
        if rawName.hasPrefix("$s10RunLoopKit") { return .runLoopKit }
        if rawName.hasPrefix("$ss") { return .swiftRuntime }
        return .application
    }
}
