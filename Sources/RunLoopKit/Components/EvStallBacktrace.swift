#if canImport(Runtime)
// `Backtrace(architecture:frames:images:)` — building a backtrace from addresses captured
// elsewhere, here on another thread — is SPI of the Runtime module; its public API can only
// capture the calling thread. Symbolication itself (`symbolicated()`) is public. The memory
// readers are SPI too (see `safeImageMap()`).
@_spi(Internal) @_spi(MemoryReaders) import Runtime
#endif

/// The stack of a stalled run-loop thread, as ``EvStallMonitor`` captured it.
///
/// Frames are innermost first. They were recovered by following frame pointers in a copy of the
/// stalled thread's stack taken by a signal handler on that thread; where code without frame
/// pointers broke the chain, return addresses were found by scanning the stack
/// (``Frame/isFromStackScan``; such frames can be stale). See ``EvStallMonitor`` for the limits.
public struct EvStallBacktrace: Sendable, CustomStringConvertible {
    /// One frame.
    public struct Frame: Sendable, CustomStringConvertible {
        /// The program counter (first frame) or return address.
        public let address: UInt
        /// The demangled function name, when symbolicated and known.
        public let symbol: String?
        /// The name of the image (executable or shared library) holding `address`.
        public let image: String?
        /// `file:line:column`, when debug information says.
        public let sourceLocation: String?
        /// Whether this is an inlined call inside the frame that follows it.
        public let isInlined: Bool
        /// Whether the address was found by scanning the stack rather than by the frame chain.
        public let isFromStackScan: Bool

        /// The address, then whatever is known: symbol, source location, image, flags.
        public var description: String {
            var text = "0x" + String(address, radix: 16)
            if let symbol { text += " \(symbol)" }
            if let sourceLocation { text += " at \(sourceLocation)" }
            if let image { text += " (\(image))" }
            if isInlined { text += " [inlined]" }
            if isFromStackScan { text += " [scanned]" }
            return text
        }
    }

    /// The frames, innermost first.
    public let frames: [Frame]

    /// One numbered line per frame, innermost first.
    public var description: String {
        frames.enumerated().map { "  #\($0.offset) \($0.element)" }.joined(separator: "\n")
    }

    /// Turns the raw addresses of a capture into frames: symbolicated with the Runtime module
    /// when `symbolicate` is set and the toolchain offers it; otherwise image names only.
    static func make(from stack: StackCapture.RawStack, symbolicate: Bool) -> EvStallBacktrace {
        #if canImport(Runtime)
        let images = safeImageMap()
        let code = images.compactMap { image -> ClosedRange<UInt>? in
            guard let low = UInt(image.baseAddress), let high = UInt(image.endOfText), low <= high else { return nil }
            return low...high
        }
        let raw = StackCapture.unwind(stack) { address in code.contains { $0.contains(address) } }
        let scanned = Set(raw.filter(\.scanned).map(\.address))
        func imageName(_ address: UInt) -> String? {
            images.indexOfImage(at: Backtrace.Address(UInt64(address))).flatMap { images[$0].name }
        }
        if symbolicate {
            let frames: [RichFrame<UInt>] = raw.enumerated().map {
                $0.offset == 0 ? .programCounter($0.element.address) : .returnAddress($0.element.address)
            }
            let backtrace = Backtrace(architecture: architecture, frames: frames, images: images)
            if let symbolicated = backtrace.symbolicated(with: images) {
                return EvStallBacktrace(frames: symbolicated.frames.compactMap { frame in
                    // Skips the "truncated"/"omitted" markers the Runtime may add.
                    guard let address = UInt(frame.captured.originalProgramCounter), address != 0 else { return nil }
                    return Frame(
                        address: address, symbol: frame.symbol?.name,
                        image: frame.symbol?.imageName ?? imageName(address),
                        sourceLocation: frame.symbol?.sourceLocation.map { "\($0.path):\($0.line):\($0.column)" },
                        isInlined: frame.inlined, isFromStackScan: scanned.contains(address))
                })
            }
        }
        return EvStallBacktrace(frames: raw.map {
            Frame(
                address: $0.address, symbol: nil, image: imageName($0.address), sourceLocation: nil,
                isInlined: false, isFromStackScan: $0.scanned)
        })
        #else
        let raw = StackCapture.unwind(stack) { _ in true }
        return EvStallBacktrace(frames: raw.map {
            Frame(address: $0.address, symbol: nil, image: nil, sourceLocation: nil, isInlined: false, isFromStackScan: $0.scanned)
        })
        #endif
    }

    #if canImport(Runtime)
    /// The images loaded in this process, read so that no change to its mappings can crash it.
    ///
    /// `ImageMap.capture()` lists the file mappings of `/proc/self/maps`, then reads each one's
    /// ELF header straight from memory: a mapping unmapped in between — a library `dlclose`d by
    /// any thread, or the image cache another watchdog thread frees as it exits — is a SIGSEGV
    /// on the watchdog (issue 10, point 6). Capturing with a ``ProcessMemoryReader`` reads
    /// through `process_vm_readv` instead, which fails with `EFAULT` on an unmapped address: the
    /// vanished image is then left out (its frames get no image name) and the capture goes on.
    /// Where `process_vm_readv` is forbidden (a seccomp filter) every read fails the same way and
    /// the backtrace has addresses only — never a crash.
    static func safeImageMap() -> ImageMap {
        ImageMap.capture(using: ProcessMemoryReader(), forProcess: nil)
    }

    /// The Runtime module's name for this machine's architecture (its `X86_64Context` and
    /// `ARM64Context` say these). Not taken from `Backtrace.capture()`, which captures an
    /// `ImageMap` by reading every mapped image's ELF header straight from memory: a library
    /// unmapped meanwhile made that a SIGSEGV on the watchdog's first symbolicated capture.
    #if arch(x86_64)
    private static let architecture = "x86_64"
    #elseif arch(arm64)
    private static let architecture = "arm64"
    #else
    private static let architecture = "unknown"
    #endif
    #endif
}
