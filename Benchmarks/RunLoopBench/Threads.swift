import CCFRunLoop
import Foundation
import Synchronization

/// A dedicated POSIX thread that runs one closure and can be joined. Every loop in the
/// benchmark runs on one of these, so each backend gets a fresh thread that owns its loop.
final class BenchThread: Sendable {
    /// The closure, handed to the new thread as a retained opaque pointer.
    private final class Job: @unchecked Sendable {
        let body: @Sendable () -> Void
        init(_ body: @escaping @Sendable () -> Void) { self.body = body }
    }

    private let handle: pthread_t

    /// Starts `body` on a new thread with the given stack size, pinned to `cpu` if given.
    init(stackSize: Int = 1 << 20, cpu: Int32? = nil, _ body: @escaping @Sendable () -> Void) {
        var attr = pthread_attr_t()
        pthread_attr_init(&attr)
        defer { pthread_attr_destroy(&attr) }
        pthread_attr_setstacksize(&attr, stackSize)
        let job = Unmanaged.passRetained(Job {
            if let cpu { _ = bench_pin_current_thread(cpu) }
            body()
        }).toOpaque()
        var thread = pthread_t()
        let rc = pthread_create(&thread, &attr, { raw in
            let job = Unmanaged<Job>.fromOpaque(raw!).takeRetainedValue()
            job.body()
            return nil
        }, job)
        precondition(rc == 0, "pthread_create failed: \(rc)")
        handle = thread
    }

    /// Waits until the thread's closure has returned.
    func join() {
        pthread_join(handle, nil)
    }

    /// Runs `body` on a new loop thread (pinned to the loop CPU, see `Pinning`), waits for it
    /// and returns its result.
    static func run<T: Sendable>(stackSize: Int = 8 << 20, _ body: @escaping @Sendable () -> T) -> T {
        let slot = ResultSlot<T>()
        let thread = BenchThread(stackSize: stackSize, cpu: Pinning.shared.loopCPU) { slot.value = body() }
        thread.join()
        return slot.value!
    }
}

/// Where threads run. Under load from other processes, which core a loop thread happens to
/// sit on decides its latency more than the backend does, so scenarios can pin every loop
/// thread and the driving thread (trigger, poster), all backends alike. Three layouts:
/// cross-CPU (loops on one CPU, the driver on another: every wake-up pays the machine's
/// cross-CPU wake-up, which can hide the library's own cost), same-CPU (both on one CPU: the
/// wake-up is a context switch) and unpinned (as a new user runs it). Off with `--no-pin`, or
/// where fewer than two CPUs are allowed.
final class Pinning: Sendable {
    static let shared = Pinning()

    enum Layout: Int, Sendable, CaseIterable {
        case crossCPU, sameCPU, unpinned
    }

    private let allowed: [Int32]
    private let enabled = Atomic<Bool>(true)
    private let layoutRaw = Atomic<Int>(Layout.crossCPU.rawValue)

    private init() {
        var cpus = [Int32](repeating: 0, count: 64)
        let count = Int(bench_allowed_cpus(&cpus, Int32(cpus.count)))
        allowed = Array(cpus.prefix(count))
    }

    func disable() { enabled.store(false, ordering: .relaxed) }

    /// Whether pinning is possible and allowed (two CPUs, no `--no-pin`).
    var isAvailable: Bool { enabled.load(ordering: .relaxed) && allowed.count >= 2 }

    /// The layout in force (always `.unpinned` when pinning is off).
    var layout: Layout {
        isAvailable ? Layout(rawValue: layoutRaw.load(ordering: .relaxed))! : .unpinned
    }

    /// Runs `body` with `layout` in force for the threads it starts, then restores the default.
    func with<T>(_ layout: Layout, _ body: () -> T) -> T {
        layoutRaw.store(layout.rawValue, ordering: .relaxed)
        defer { layoutRaw.store(Layout.crossCPU.rawValue, ordering: .relaxed) }
        return body()
    }

    /// The CPU every loop thread runs on, if pinning.
    var loopCPU: Int32? {
        switch layout {
        case .crossCPU: allowed[1]
        case .sameCPU: allowed[0]
        case .unpinned: nil
        }
    }

    /// The CPU driving threads (trigger, poster) run on, if pinning.
    var driverCPU: Int32? { layout == .unpinned ? nil : allowed[0] }

    /// Runs `body` with the calling (driver) thread pinned to the driver CPU, if pinning.
    func asDriver<T>(_ body: () -> T) -> T {
        pinned(to: driverCPU, body)
    }

    /// Runs `body` with the calling thread pinned to the loop CPU, if pinning: for the main
    /// thread while it runs a main loop (scenario mainqueue).
    func asLoopThread<T>(_ body: () -> T) -> T {
        pinned(to: loopCPU, body)
    }

    private func pinned<T>(to cpu: Int32?, _ body: () -> T) -> T {
        guard let cpu else { return body() }
        _ = bench_pin_current_thread(cpu)
        defer { _ = bench_pin_current_thread(-1) }
        return body()
    }

    /// For the report's context.
    var description: String {
        isAvailable ? "loop threads on CPU \(allowed[1]), driver on CPU \(allowed[0]) (wake-up: also same-CPU, "
            + "both on CPU \(allowed[0]), and unpinned)" : "off"
    }
}

/// A value written by one thread and read by another after a join or a semaphore wait, which
/// orders the two; nothing else touches it.
final class ResultSlot<T>: @unchecked Sendable {
    var value: T?
}

/// The monotonic clock, in nanoseconds (clock_gettime(CLOCK_MONOTONIC)).
@inline(__always) func nowNs() -> UInt64 { bench_now_ns() }

/// Sleeps for `ns` nanoseconds (nanosleep; the kernel may add its timer slack).
func pause(ns: UInt64) {
    var request = timespec(tv_sec: Int(ns / 1_000_000_000), tv_nsec: Int(ns % 1_000_000_000))
    var remaining = timespec()
    while nanosleep(&request, &remaining) != 0 && errno == EINTR { request = remaining }
}

/// A small, fast, seeded random generator (SplitMix64), so runs are repeatable.
struct SplitMix64: RandomNumberGenerator {
    private var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
