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
///
/// ``frames`` holds every frame; ``relevantFrames`` and ``description`` keep those a reader needs.
public struct EvStallBacktrace: Sendable, CustomStringConvertible {
    /// One frame.
    public struct Frame: Sendable, CustomStringConvertible {
        /// Whose code a frame runs, as far as its image and symbol tell.
        public enum Origin: Sendable, Equatable {
            /// The application's code, or a library's other than those below: the frames that matter.
            case application
            /// RunLoopKit's own: the run loop's machinery around the callout.
            case runLoopKit
            /// The Swift runtime and standard libraries (`libswift…`), libdispatch, compiler thunks.
            case swiftRuntime
            /// The C library, the dynamic loader, and the code that starts processes and threads.
            case system
        }

        /// The frame's position in ``EvStallBacktrace/frames``: 0 is the innermost.
        public let index: Int
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
        /// Whose code this is; only symbolicated frames can be told to be RunLoopKit's.
        public let origin: Origin
    }

    /// The frames, innermost first.
    public let frames: [Frame]

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
                // Skips the "truncated"/"omitted" markers the Runtime may add.
                let captured = symbolicated.frames.filter { (UInt($0.captured.originalProgramCounter) ?? 0) != 0 }
                return EvStallBacktrace(frames: captured.enumerated().map { index, frame in
                    let address = UInt(frame.captured.originalProgramCounter)!
                    let image = frame.symbol?.imageName ?? imageName(address)
                    return Frame(
                        index: index, address: address, symbol: frame.symbol?.name, image: image,
                        sourceLocation: frame.symbol?.sourceLocation.map { "\($0.path):\($0.line):\($0.column)" },
                        isInlined: frame.inlined, isFromStackScan: scanned.contains(address),
                        origin: Frame.origin(
                            image: image, rawName: frame.symbol?.rawName, isThunk: frame.isSwiftThunk,
                            sourcePath: frame.symbol?.sourceLocation?.path))
                })
            }
        }
        return EvStallBacktrace(frames: raw.enumerated().map { index, frame in
            let image = imageName(frame.address)
            return Frame(
                index: index, address: frame.address, symbol: nil, image: image, sourceLocation: nil,
                isInlined: false, isFromStackScan: frame.scanned,
                origin: Frame.origin(image: image, rawName: nil, isThunk: false, sourcePath: nil))
        })
        #else
        let raw = StackCapture.unwind(stack) { _ in true }
        return EvStallBacktrace(frames: raw.enumerated().map { index, frame in
            Frame(
                index: index, address: frame.address, symbol: nil, image: nil, sourceLocation: nil, isInlined: false,
                isFromStackScan: frame.scanned, origin: .application)
        })
        #endif
    }

    #if canImport(Runtime)
    /// The images loaded in this process, read so that no change to its mappings can crash it.
    ///
    /// `ImageMap.capture()` lists the file mappings of `/proc/self/maps`, then reads each one's
    /// ELF header straight from memory: a mapping unmapped in between — a library `dlclose`d by
    /// any thread, or the image cache another watchdog thread frees as it exits — is a SIGSEGV
    /// on the watchdog. Capturing with a ``ProcessMemoryReader`` reads
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
