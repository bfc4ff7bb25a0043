import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Captures the stack of ANOTHER thread — the stalled loop's — for ``EvStallMonitor``.
///
/// Swift's `Runtime` module can only capture the calling thread (`Backtrace.capture()`), and
/// calling it from a signal handler is not safe (it allocates; the interrupted code may hold the
/// allocator's lock). So: the watchdog sends a real-time signal to the loop's thread with
/// `pthread_sigqueue`, carrying a pointer to a ``CaptureRequest``. The handler, running on the
/// stalled thread, does only async-signal-safe work — it reads the program counter, stack and
/// frame pointers from the signal context, copies the top of the stack into the request's
/// preallocated buffer and posts a semaphore. The watchdog then walks the copied frames
/// (``unwind(_:isText:)``) and symbolicates them off the signal path.
///
/// Limits, stated honestly:
/// - The walk follows frame pointers. Swift code keeps them; C code built without them (parts of
///   glibc, libdispatch) is bridged by scanning the stack for return addresses, which can add
///   stale frames (marked ``EvStallBacktrace/Frame/isFromStackScan``) or miss some.
/// - Only the top ``snapshotCapacity`` bytes of the stack are copied: deeper frames are cut.
/// - The loop's thread must let the signal through: the monitor unblocks it on that thread at its
///   first observer callout (threads inherit masks that often block everything). A thread that
///   blocks it again never answers: after a timeout the capture is given up, and its request is
///   deliberately leaked (a late handler would write into it).
/// - The signal interrupts the stalled code: a `nanosleep`/`usleep` in it returns early with
///   `EINTR` (like under a profiler); `SA_RESTART` restarts most other system calls.
/// - x86_64 and arm64 Linux only; elsewhere there is no backtrace.
enum StackCapture {
    /// How much of the stalled thread's stack is copied, from its stack pointer up.
    static let snapshotCapacity = 256 << 10

    /// What the handler fills in. A trivial type, handled through raw pointers only.
    struct CaptureRequest {
        static var expectedMagic: UInt64 { 0x4576_5374_616C_6C21 }  // "EvStall!", a literal: no global
        var magic: UInt64
        var pcOffset: Int
        var spOffset: Int
        var fpOffset: Int
        var stackLow: UInt
        var stackHigh: UInt
        var capacity: Int
        var snapshot: UnsafeMutableRawPointer
        var copy: CopyFunction
        var done: UnsafeMutablePointer<sem_t>
        var pc: UInt = 0
        var sp: UInt = 0
        var fp: UInt = 0
        var copied = 0
    }

    typealias CopyFunction = @convention(c) (UnsafeMutableRawPointer?, UnsafeRawPointer?, Int) -> UnsafeMutableRawPointer?

    /// The C library's own `memcpy`, looked up directly in libc. Under AddressSanitizer (`make
    /// test-asan`) a plain `memcpy` is the sanitizer's checked copy, which would report the
    /// poisoned redzones between the stalled thread's stack frames; the stack is raw data here.
    static let rawCopy: CopyFunction = {
        if let libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD), let function = dlsym(libc, "memcpy") {
            return unsafeBitCast(function, to: CopyFunction.self)
        }
        return { destination, source, count in memcpy(destination!, source!, count) }
    }()

    /// The registers of an interrupted thread, and the copied top of its stack.
    struct RawStack: Sendable {
        let pc: UInt
        let sp: UInt
        let fp: UInt
        /// The stack from `sp` up, word by word.
        let words: [UInt]

        func word(at address: UInt) -> UInt? {
            guard address >= sp, address % UInt(MemoryLayout<UInt>.size) == 0 else { return nil }
            let index = Int((address - sp) / UInt(MemoryLayout<UInt>.size))
            return index < words.count ? words[index] : nil
        }
    }

    enum Failure: Error, CustomStringConvertible {
        case unsupportedPlatform
        case signalUnavailable(Int32, String)
        case sendFailed(Int32)
        case timedOut

        var description: String {
            switch self {
            case .unsupportedPlatform: "capturing another thread's stack is not supported on this platform"
            case .signalUnavailable(let signal, let why): "signal \(signal) is unavailable: \(why)"
            case .sendFailed(let errno): "pthread_sigqueue failed (errno \(errno))"
            case .timedOut: "the stalled thread did not answer the capture signal (is it blocked?)"
            }
        }
    }

    /// Byte offsets of the program counter, stack pointer and frame pointer inside `ucontext_t`.
    static let registerOffsets: (pc: Int, sp: Int, fp: Int)? = {
        #if arch(x86_64) && os(Linux)
        guard let context = MemoryLayout<ucontext_t>.offset(of: \.uc_mcontext),
            let gregs = MemoryLayout<mcontext_t>.offset(of: \.gregs)
        else { return nil }
        let word = MemoryLayout<Int64>.size  // glibc's REG_RIP 16, REG_RSP 15, REG_RBP 10
        return (context + gregs + 16 * word, context + gregs + 15 * word, context + gregs + 10 * word)
        #elseif arch(arm64) && os(Linux)
        guard let context = MemoryLayout<ucontext_t>.offset(of: \.uc_mcontext),
            let pc = MemoryLayout<mcontext_t>.offset(of: \.pc), let sp = MemoryLayout<mcontext_t>.offset(of: \.sp),
            let regs = MemoryLayout<mcontext_t>.offset(of: \.regs)
        else { return nil }
        return (context + pc, context + sp, context + regs + 29 * MemoryLayout<UInt64>.size)  // x29 = fp
        #else
        return nil
        #endif
    }()

    /// The default capture signal: a real-time signal near the top, away from glibc's own
    /// (which sit at the bottom of the range).
    static var defaultSignal: Int32 { __libc_current_sigrtmax() - 3 }

    private static let installed = Locked<Set<Int32>>([])

    /// Whether `signal` carries stack captures in this process (its handler stays for good).
    static func isCaptureSignal(_ signal: Int32) -> Bool {
        installed.withLock { $0.contains(signal) }
    }

    /// Installs the handler for `signal` once per process.
    ///
    /// - Throws: ``Failure/signalUnavailable(_:_:)`` if something else already handles it.
    static func install(signal: Int32) throws(Failure) {
        guard registerOffsets != nil, GNUExtensions.signalQueue != nil else { throw .unsupportedPlatform }
        // Its handler ignores every delivery that is not a capture request, so it may only
        // take a signal nothing else needs: a real-time one.
        guard (__libc_current_sigrtmin()...__libc_current_sigrtmax()).contains(signal) else {
            throw .signalUnavailable(signal, "not a real-time signal (SIGRTMIN...SIGRTMAX)")
        }
        try installed.withLock { (installed: inout Set<Int32>) throws(Failure) in
            guard !installed.contains(signal) else { return }
            var previous = sigaction()
            guard sigaction(signal, nil, &previous) == 0 else { throw .signalUnavailable(signal, "sigaction failed (errno \(errno))") }
            let handler = unsafeBitCast(previous.__sigaction_handler.sa_handler, to: Int.self)
            guard handler == unsafeBitCast(SIG_DFL, to: Int.self) || handler == unsafeBitCast(SIG_IGN, to: Int.self) else {
                throw .signalUnavailable(signal, "another handler is installed for it")
            }
            var action = sigaction()
            action.__sigaction_handler.sa_sigaction = { _, info, context in StackCapture.handle(info, context) }
            action.sa_flags = SA_SIGINFO | SA_RESTART
            sigemptyset(&action.sa_mask)
            guard sigaction(signal, &action, nil) == 0 else { throw .signalUnavailable(signal, "sigaction failed (errno \(errno))") }
            installed.insert(signal)
            // Warm-up: one capture of the calling thread runs the handler's code once outside any
            // stall, so nothing in it is done for the first time on a stalled thread.
            if !isBlocked(signal), let stack = GNUExtensions.stackBounds(of: pthread_self()) {
                _ = try? capture(thread: pthread_self(), stack: stack, signal: signal)
            }
        }
    }

    /// Lets `signal` reach the calling thread. Threads inherit their creator's signal mask, and
    /// many block every signal (libdispatch's workers, Swift Testing's threads, and every thread
    /// they create); a loop thread that blocks the capture signal could never answer it. Only this
    /// private real-time signal is touched.
    static func unblock(_ signal: Int32) {
        var set = sigset_t()
        sigemptyset(&set)
        sigaddset(&set, signal)
        pthread_sigmask(SIG_UNBLOCK, &set, nil)
    }

    private static func isBlocked(_ signal: Int32) -> Bool {
        var current = sigset_t()
        pthread_sigmask(SIG_BLOCK, nil, &current)
        return sigismember(&current, signal) == 1
    }

    /// The signal handler, on the interrupted thread. Async-signal-safe: no allocation, no lock,
    /// no reference counting, no global — only raw-pointer reads and writes, libc's `memcpy`
    /// (handed over in the request), `sem_post`.
    @inline(never)
    static func handle(_ info: UnsafeMutablePointer<siginfo_t>?, _ context: UnsafeMutableRawPointer?) {
        guard let info, let context, info.pointee.si_code == SI_QUEUE,
            let raw = info.pointee._sifields._rt.si_sigval.sival_ptr
        else { return }
        let request = raw.assumingMemoryBound(to: CaptureRequest.self)
        guard request.pointee.magic == CaptureRequest.expectedMagic else { return }
        let registers = UnsafeRawPointer(context)
        let sp = registers.load(fromByteOffset: request.pointee.spOffset, as: UInt.self)
        request.pointee.pc = registers.load(fromByteOffset: request.pointee.pcOffset, as: UInt.self)
        request.pointee.fp = registers.load(fromByteOffset: request.pointee.fpOffset, as: UInt.self)
        request.pointee.sp = sp
        var length = 0
        if sp >= request.pointee.stackLow, sp < request.pointee.stackHigh {
            length = Int(request.pointee.stackHigh - sp)
            if length > request.pointee.capacity { length = request.pointee.capacity }
            length &= ~(MemoryLayout<UInt>.size - 1)
            if let source = UnsafeRawPointer(bitPattern: sp) { _ = request.pointee.copy(request.pointee.snapshot, source, length) }
        }
        request.pointee.copied = length
        sem_post(request.pointee.done)
    }

    /// Interrupts `thread` and copies its registers and the top of its stack.
    ///
    /// - Parameters:
    ///   - stack: the thread's stack bounds; only memory inside them is read.
    ///   - timeout: how long to wait for the handler to answer.
    static func capture(
        thread: pthread_t, stack: (low: UInt, high: UInt), signal: Int32, timeout: Duration = .milliseconds(500)
    ) throws(Failure) -> RawStack {
        guard let offsets = registerOffsets, let signalQueue = GNUExtensions.signalQueue else { throw .unsupportedPlatform }
        let done = UnsafeMutablePointer<sem_t>.allocate(capacity: 1)
        sem_init(done, 0, 0)
        let snapshot = UnsafeMutableRawPointer.allocate(byteCount: snapshotCapacity, alignment: 16)
        let request = UnsafeMutablePointer<CaptureRequest>.allocate(capacity: 1)
        request.initialize(to: CaptureRequest(
            magic: CaptureRequest.expectedMagic, pcOffset: offsets.pc, spOffset: offsets.sp, fpOffset: offsets.fp,
            stackLow: stack.low, stackHigh: stack.high, capacity: snapshotCapacity, snapshot: snapshot, copy: rawCopy,
            done: done))
        func release() {
            sem_destroy(done)
            done.deallocate()
            snapshot.deallocate()
            request.deallocate()
        }
        var value = sigval()
        value.sival_ptr = UnsafeMutableRawPointer(request)
        let status = signalQueue(thread, signal, value)
        guard status == 0 else {
            release()
            throw .sendFailed(status)
        }
        guard wait(done, timeout: timeout) else {
            // The handler may still run later and write into the request: leave it allocated.
            throw .timedOut
        }
        let count = request.pointee.copied / MemoryLayout<UInt>.size
        let words = Array(UnsafeBufferPointer(start: snapshot.assumingMemoryBound(to: UInt.self), count: count))
        let stack = RawStack(pc: request.pointee.pc, sp: request.pointee.sp, fp: request.pointee.fp, words: words)
        release()
        return stack
    }

    private static func wait(_ semaphore: UnsafeMutablePointer<sem_t>, timeout: Duration) -> Bool {
        var deadline = timespec()
        clock_gettime(CLOCK_REALTIME, &deadline)
        let nanoseconds = Int(deadline.tv_nsec) + Int(timeout.saturatingNanoseconds)
        deadline.tv_sec += nanoseconds / 1_000_000_000
        deadline.tv_nsec = nanoseconds % 1_000_000_000
        while sem_timedwait(semaphore, &deadline) != 0 {
            if errno != EINTR { return false }
        }
        return true
    }

    /// Recovers return addresses from a copied stack: the frame-pointer chain, with a scan for
    /// return addresses wherever code without frame pointers breaks it.
    ///
    /// - Parameter isText: whether an address lies in some image's code.
    /// - Returns: addresses, innermost first (the first is the interrupted program counter), each
    ///   with whether it was found by scanning rather than by the chain.
    static func unwind(_ stack: RawStack, limit: Int = 128, isText: (UInt) -> Bool) -> [(address: UInt, scanned: Bool)] {
        var frames: [(address: UInt, scanned: Bool)] = [(stack.pc, false)]
        let word = UInt(MemoryLayout<UInt>.size)
        // A frame record is (saved caller frame pointer, return address), callers further up.
        func isFrameRecord(_ fp: UInt) -> Bool {
            guard fp % word == 0, let saved = stack.word(at: fp), let returnAddress = stack.word(at: fp + word) else { return false }
            return isText(returnAddress) && (saved == 0 || saved > fp)
        }
        // Where a scan may resume the chain: a record whose caller's record is valid too.
        func isAnchor(_ fp: UInt) -> Bool {
            guard isFrameRecord(fp), let saved = stack.word(at: fp) else { return false }
            return saved == 0 || isFrameRecord(saved)
        }
        var record: UInt? = isFrameRecord(stack.fp) ? stack.fp : nil
        var address = stack.sp
        while frames.count < limit {
            if var current = record {
                // Return addresses below the record belong to callees without frame pointers
                // (or are stale): taken, marked as scanned.
                while address < current, frames.count < limit, let value = stack.word(at: address) {
                    if isText(value) { frames.append((value, true)) }
                    address += word
                }
                while frames.count < limit, isFrameRecord(current) {
                    frames.append((stack.word(at: current + word)!, false))
                    address = current + 2 * word
                    current = stack.word(at: current)!
                }
                // The chain ended — the outermost frame, or code that uses the frame-pointer
                // register for something else: scan on from above the last good record.
                record = nil
            } else {
                while frames.count < limit, let value = stack.word(at: address) {
                    if address >= stack.sp + word, isAnchor(address - word) {
                        record = address - word
                        break
                    }
                    if isText(value) { frames.append((value, true)) }
                    address += word
                }
                if record == nil { return frames }
            }
        }
        return frames
    }
}
