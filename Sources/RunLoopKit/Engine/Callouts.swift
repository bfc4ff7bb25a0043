/// Every user callback runs through one of these non-inlined functions, one per kind (CF's
/// `__CFRUNLOOP_IS_CALLING_OUT_TO_…__` trampolines), so a backtrace or a stall report names
/// the phase the loop was in. No lock is held when any of them runs.
enum Callout {
    @inline(never)
    static func timer(_ timer: EvTimer) {
        timer.handler(timer)
    }

    @inline(never)
    static func sourcePerform(_ source: EvSource) {
        source.performHandler()
    }

    @inline(never)
    static func sourceSchedule(_ source: EvSource, _ loop: EvRunLoop, _ mode: EvRunLoop.Mode) {
        source.scheduleHandler?(loop, mode)
    }

    @inline(never)
    static func sourceCancel(_ source: EvSource, _ loop: EvRunLoop, _ mode: EvRunLoop.Mode) {
        source.cancelHandler?(loop, mode)
    }

    @inline(never)
    static func observer(_ observer: EvObserver, _ activity: EvRunLoop.Activity) {
        observer.handler(observer, activity)
    }

    /// Returns whether the source is still ready (a port with more messages).
    @inline(never)
    static func version1Source(_ core: EvSource1Core, _ events: Int32) -> Bool {
        core.perform(core, events)
    }

    @inline(never)
    static func mainQueue(_ backend: EvBackend) {
        backend.drainMainQueue()
    }

    @inline(never)
    static func block(_ block: @Sendable () -> Void) {
        block()
    }
}
