import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Which loop belongs to which thread (R1–R4).
///
/// Each thread's loop sits in a pthread key whose destructor tears the loop down when the
/// thread exits (R4): libev loop destroyed, descriptors closed, items released. The main
/// thread's loop is also kept in a global so any thread can reach it (R2).
enum ThreadRegistry {
    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        let status = pthread_key_create(&key) { pointer in
            guard let pointer else { return }
            ThreadRegistry.tearDown(pointer)
        }
        require(status == 0, "EvRunLoop: pthread_key_create failed (\(status))")
        return key
    }()

    private static let mainLoop = Locked<EvRunLoop?>(nil)

    /// Tears the calling thread's loop down now, as the thread's exit would (R4), and forgets it.
    /// For a thread whose end is awaited without a join (``EvThreadHandle`` detaches a thread
    /// at the end of its body): the key's destructor runs only after that, so whoever saw the
    /// thread detach could otherwise find its loop still alive. Asked for again on this thread,
    /// the loop is made afresh and torn down at exit as usual.
    static func tearDownCurrentLoop() {
        guard let pointer = pthread_getspecific(key) else { return }
        tearDown(pointer)
    }

    /// Tears down the calling thread's loop at `pointer`, which stays the thread's loop
    /// meanwhile: the cancel callouts and exit hooks that run on the exiting thread find it
    /// current (``EvRunLoop/isCurrent``, ``EvLoopBound``), dead (R4). Then the thread has none.
    /// (The key's destructor finds the key cleared, and calls itself again if it is set after.)
    private static func tearDown(_ pointer: UnsafeMutableRawPointer) {
        pthread_setspecific(key, pointer)
        let loop = Unmanaged<EvRunLoop>.fromOpaque(pointer)
        loop.takeUnretainedValue().tearDown()
        pthread_setspecific(key, nil)
        loop.release()
    }

    /// The calling thread's loop, if it has one (R3: asking nothing costs nothing).
    static func existingLoop() -> EvRunLoop? {
        guard let pointer = pthread_getspecific(key) else { return nil }
        return Unmanaged<EvRunLoop>.fromOpaque(pointer).takeUnretainedValue()
    }

    /// ``existingLoop()`` without a retain: the thread's key holds the loop until the thread
    /// exits, so a caller that uses it only on this thread, before returning, needs none.
    static func existingLoopUnretained() -> Unmanaged<EvRunLoop>? {
        guard let pointer = pthread_getspecific(key) else { return nil }
        return Unmanaged<EvRunLoop>.fromOpaque(pointer)
    }

    /// The calling thread's loop, created on first use (R1). Inside a task, only a loop that is
    /// running the task's job; `call` names the public call in the message otherwise (see
    /// ``AsyncGuard``).
    static func currentLoop(_ call: StaticString) throws(EvRunLoopError) -> EvRunLoop {
        let existing = existingLoop()
        if AsyncGuard.isInTask {
            let isMainThread = isMainThread
            let candidate = if let existing { existing } else if isMainThread { try mainRunLoop() } else { EvRunLoop?.none }
            AsyncGuard.checkCurrent(candidate, isMainThread: isMainThread, call)
        }
        if let existing { return existing }
        return try madeCurrentLoop()
    }

    /// Gives the calling thread its loop: the main loop on the main thread, a new one elsewhere.
    private static func madeCurrentLoop() throws(EvRunLoopError) -> EvRunLoop {
        let loop = isMainThread ? try mainRunLoop() : try EvRunLoop(isMain: false)
        pthread_setspecific(key, Unmanaged.passRetained(loop).toOpaque())
        return loop
    }

    /// Makes `loop` the calling thread's loop, torn down at the thread's exit as usual: a loop
    /// made with a wait of its own (a ``VirtualWaiter``, in tests). The thread must have none.
    static func adopt(_ loop: EvRunLoop) {
        require(existingLoop() == nil && !isMainThread, "ThreadRegistry.adopt(_:): this thread has a run loop already")
        pthread_setspecific(key, Unmanaged.passRetained(loop).toOpaque())
    }

    /// The main thread's loop, created by whichever thread asks first (R2).
    static func mainRunLoop() throws(EvRunLoopError) -> EvRunLoop {
        try mainLoop.withLock { (main: inout EvRunLoop?) throws(EvRunLoopError) -> EvRunLoop in
            if let main { return main }
            let created = try EvRunLoop(isMain: true)
            main = created
            return created
        }
    }

    /// Whether `loop` may run on the calling thread (R5).
    static func isOwnedByCallingThread(_ loop: EvRunLoop) -> Bool {
        if existingLoop() === loop { return true }
        guard loop.isMain, isMainThread else { return false }
        _ = try? madeCurrentLoop()  // the main thread adopts the main loop made elsewhere
        return true
    }

    static var isMainThread: Bool { EvBackend.isMainThread }
}
