/// Every user callback runs through one of these non-inlined functions, one per kind (CF's
/// `__CFRUNLOOP_IS_CALLING_OUT_TO_…__` trampolines), so a backtrace or a stall report names
/// the phase the loop was in. No lock is held when any of them runs.
///
/// Those that run on the loop's own thread record their kind in the loop's ``LoopRecorder``
/// around the call (what a stall report names, and ``EvRunLoop/metrics``' counts): a relaxed
/// load and two relaxed stores, plus two clock reads only while timing metrics are on.
/// Schedule and cancel callouts run on whichever thread adds or removes the source: not recorded.
enum Callout {
    @inline(never)
    static func timer(_ timer: EvTimer, on loop: EvRunLoop) {
        let entry = loop.recorder.enter(.timer)
        timer.handler(timer)
        loop.recorder.leave(entry)
    }

    @inline(never)
    static func sourcePerform(_ source: EvSource, on loop: EvRunLoop) {
        let entry = loop.recorder.enter(.source)
        source.performHandler()
        loop.recorder.leave(entry)
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
    static func observer(_ observer: EvObserver, _ activity: EvRunLoop.Activity, on loop: EvRunLoop) {
        let entry = loop.recorder.enter(.observer)
        observer.handler(observer, activity)
        loop.recorder.leave(entry)
    }

    /// Returns whether the source is still ready (a port with more messages).
    @inline(never)
    static func version1Source(_ core: EvSource1Core, _ events: Int32, on loop: EvRunLoop) -> Bool {
        let entry = loop.recorder.enter(.version1Source)
        let stillReady = core.perform(core, events)
        loop.recorder.leave(entry)
        return stillReady
    }

    /// The libev libraries' callbacks pending in the loop's library loop (``EvLibevSource``).
    @inline(never)
    static func libevSource(on loop: EvRunLoop) {
        let entry = loop.recorder.enter(.libevSource)
        loop.waiter.runLibraryCallbacks()
        loop.recorder.leave(entry)
    }

    /// Library callbacks that libev runs inside the wait, before it blocks (prepare and fork
    /// watchers; see ``LoopWaiterOwner``).
    @inline(never)
    static func libevSourceInWait(on loop: EvRunLoop, _ body: () -> Void) {
        let entry = loop.recorder.enter(.libevSource)
        body()
        loop.recorder.leave(entry)
    }

    @inline(never)
    static func mainQueue(_ waiter: any LoopWaiter, on loop: EvRunLoop) {
        let entry = loop.recorder.enter(.mainQueue)
        waiter.drainMainQueue()
        loop.recorder.leave(entry)
    }

    @inline(never)
    static func block(_ block: @Sendable () -> Void, on loop: EvRunLoop) {
        let entry = loop.recorder.enter(.block)
        block()
        loop.recorder.leave(entry)
    }
}

extension EvRunLoop: LoopWaiterOwner {
    func libraryCalloutInWait(_ body: () -> Void) {
        // No observer activity marks code run inside the wait: stall monitors are told directly.
        let watchers = waitCalloutWatchers.withLock { $0 }
        for watcher in watchers { watcher.calloutInWait(begins: true) }
        // R23: not waiting inside a callout. Cleared after the monitors hear of the callout and
        // set again before they hear of its end, so that they never see an idle wait as a stall.
        let wasWaiting = waiting.load(ordering: .relaxed)
        if wasWaiting { waiting.store(false, ordering: .releasing) }
        Callout.libevSourceInWait(on: self, body)
        if wasWaiting { waiting.store(true, ordering: .releasing) }
        for watcher in watchers { watcher.calloutInWait(begins: false) }
    }
}

/// Told when library code runs inside a loop's wait (an ``EvStallMonitor``'s core), where no
/// observer sees it. Loop's thread.
protocol WaitCalloutWatcher: AnyObject, Sendable {
    func calloutInWait(begins: Bool)
}
