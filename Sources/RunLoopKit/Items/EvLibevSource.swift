/// A version-1 source for C libraries that bring a libev adapter — hiredis's `redisLibevAttach`,
/// getdns, libwebsockets, libverto: they attach to the libev loop this source hands out, and
/// their callbacks run on the run loop's thread, in its modes, as this source's callout.
///
/// Add it to modes like any source, then attach the library on the loop's thread with
/// ``withEventLoop(_:)`` and register with ``onDetach(_:)`` how it lets go:
///
/// ```swift
/// let source = EvLibevSource()
/// loop.add(source, forMode: .default)
/// source.withEventLoop { evLoop in
///     let context = redisAsyncConnect("127.0.0.1", 6379)!
///     redisLibevAttach(evLoop, context)
///     source.onDetach { _ in redisAsyncFree(context) }
/// }
/// ```
///
/// The libev loop is the run loop's: one per run loop, shared by all its ``EvLibevSource``s, made
/// on its thread when the first one is used and destroyed when the thread exits (R4). It embeds
/// the run loop's own `ev_loop`, so while a mode that holds an ``EvLibevSource`` runs, the
/// loop's thread sleeps in it, still inside libev's `ev_run`.
///
/// When the libraries' callbacks run:
/// - on the loop's thread, in the version-1 step of an iteration (R20.11, after AfterWaiting),
///   all that are pending at once, as one callout of this source: one handled source for
///   `returnAfterSourceHandled` (R38), ``EvRunLoop/CalloutKind/libevSource`` in
///   ``EvRunLoop/metrics`` and stall reports — even when the events the wait found were dropped
///   before it (`ev_clear_pending`, a watcher stopped) and no callback runs: libev gives no way
///   to tell (<doc:LibevLibraries>);
/// - only while a mode holding an ``EvLibevSource`` of the loop runs (R37): meanwhile the
///   libraries' descriptors and timers are not watched, and what became ready waits. Several
///   sources of one loop share its libev loop, so they are watched together, while any of
///   them is in the running mode;
/// - a mode holding one is never empty (R16), whether its libraries have watchers or not.
///
/// What library code must not do on that libev loop (<doc:LibevLibraries>): run it (`ev_run`),
/// break it (`ev_break`), destroy it, replace its userdata or its invoke-pending or release
/// callbacks, watch signals or children (`ev_signal`, `ev_child`: RunLoopKit owns signals, use
/// ``EvSignalSource``), watch a run loop's own descriptors, or touch it from another thread.
/// Where libev lets it be seen, that stops the program with a message. An I/O collect interval
/// (`ev_set_io_collect_interval`) is set back to zero before each poll: libev would sleep through
/// the run loop's wake-ups.
///
/// `@unchecked Sendable` as its superclass is: every field is a constant of a `Sendable` type.
public final class EvLibevSource: EvVersion1Source, @unchecked Sendable {
    private let binding: LibevBinding

    /// A source in no loop yet (any thread). Add it to a loop's modes with
    /// ``EvRunLoop/add(_:forMode:)-(EvVersion1Source,_)``, from any thread; from its first add it
    /// belongs to that loop for good (adding it to another loop stops with a message).
    public init() {
        let binding = LibevBinding()
        self.binding = binding
        // The engine runs the callbacks itself (Callout.libevSource): this perform is never called.
        super.init(core: EvSource1Core(kind: .libev(binding), order: 0) { _, _ in false })
    }

    /// Runs `body` with the loop's `struct ev_loop *`, on the loop's thread, and returns what it
    /// returns: attach a library here (`redisLibevAttach(evLoop, context)`).
    ///
    /// The libev loop is made at the first call. Watchers started on it are watched while a mode
    /// holding an ``EvLibevSource`` runs; their callbacks run in that mode's version-1 step.
    /// When `body` returns, what it may not do (<doc:LibevLibraries>) is checked: a replaced
    /// userdata stops the program at once; a signal watched with `ev_signal`, or a run loop's
    /// own descriptor watched, at the loop's next poll.
    ///
    /// - Parameter body: library code; `evLoop` is valid until the loop's thread exits, and only
    ///   on that thread.
    /// - Returns: `body`'s result.
    /// - Throws: what `body` throws.
    /// - Precondition: the source was added to a loop, is valid (neither invalidated nor left by
    ///   a loop whose thread exited), and the caller is on that loop's thread; otherwise the
    ///   program stops with a message naming this call.
    public func withEventLoop<Result, Failure: Error>(
        _ body: (_ evLoop: OpaquePointer) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        let loop = boundLoop("EvLibevSource.withEventLoop(_:)")
        return try loop.waiter.withLibraryLoop("EvLibevSource.withEventLoop(_:)", body)
    }

    /// Registers `handler` to run once when the source leaves its loop for good: at
    /// ``invalidate()``, or when the loop's thread exits (R4), on the loop's thread, before the
    /// libev loop is destroyed. Let the library go there (`redisAsyncFree(context)`): its
    /// watchers must be stopped while the libev loop still exists. Handlers run in the order they
    /// were registered; `handler` may capture what belongs to the loop's thread (it need not be
    /// `Sendable`), and receives the libev loop.
    ///
    /// - Precondition: as for ``withEventLoop(_:)``.
    public func onDetach(_ handler: @escaping (_ evLoop: OpaquePointer) -> Void) {
        let loop = boundLoop("EvLibevSource.onDetach(_:)")
        // Made now, so that the handler has a loop to get at the teardown.
        loop.waiter.withLibraryLoop("EvLibevSource.onDetach(_:)") { _ in }
        binding.addHandler(handler)
    }

    /// Whether the source is usable: false once invalidated or once its loop's thread exited.
    /// Safe from any thread.
    public var isValid: Bool { source1Core.isValid }

    /// Removes the source from every mode for good: its detach handlers (``onDetach(_:)``) run
    /// first, on this thread; then no callback of its libraries runs for it again.
    ///
    /// - Precondition: once the source was added to a loop, called on that loop's thread, where
    ///   the handlers may call the library (before that, any thread). Otherwise the program
    ///   stops with a message.
    public func invalidate() {
        guard let loop = binding.loop else {
            source1Core.invalidate()
            return
        }
        loop.preconditionIsCurrent("EvLibevSource.invalidate()", "an EvLibevSource added to a loop can be invalidated")
        loop.endLibevSource(source1Core, "EvLibevSource.invalidate()")
    }

    /// The loop the source belongs to, if `call` may use it here; else stops with a message.
    private func boundLoop(_ call: StaticString) -> EvRunLoop {
        require(!binding.isOver && source1Core.isValid, "\(call): the source was invalidated, or its loop's thread exited")
        guard let loop = binding.loop else {
            fatalError("\(call): the source is in no run loop yet; add it to a loop's modes first")
        }
        loop.preconditionIsCurrent(call, "an EvLibevSource's libev loop can be used")
        return loop
    }
}
