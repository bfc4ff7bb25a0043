/// A value that lives on one run loop's thread: readable and writable only there, checked on
/// every access (SwiftNIO's `NIOLoopBound`). `Sendable` whatever `Value` is, so it can travel
/// in `@Sendable` closures and `Sendable` types; only the loop's thread can open it.
///
/// A value type: each copy has its own value. Use ``EvLoopBoundBox`` for state that closures
/// share and mutate.
///
/// The check guards the container: a reference read from ``value`` on the loop's thread must
/// stay on it, which the compiler does not enforce (it lets such a value be sent to another task).
///
/// `@unchecked Sendable`: the value is touched only after ``EvRunLoop/isCurrent`` was checked,
/// so it is only ever used on the one thread it was made on.
public struct EvLoopBound<Value>: @unchecked Sendable {
    /// The loop whose thread owns the value.
    public let loop: EvRunLoop
    private var storage: Value

    /// Binds `value` to `loop`.
    ///
    /// - Parameters:
    ///   - value: the value; from here on it is used only on `loop`'s thread.
    ///   - loop: the loop whose thread owns the value.
    /// - Precondition: called on `loop`'s thread (``EvRunLoop/isCurrent``).
    public init(_ value: Value, loop: EvRunLoop) {
        loop.preconditionIsCurrent("EvLoopBound.init(_:loop:)", "a value can be bound to a loop")
        self.loop = loop
        storage = value
    }

    /// The value.
    ///
    /// - Precondition: read and written on the loop's thread only; checked on every access.
    public var value: Value {
        get {
            loop.preconditionIsCurrent("EvLoopBound.value", "the value is read")
            return storage
        }
        _modify {
            loop.preconditionIsCurrent("EvLoopBound.value", "the value is written")
            yield &storage
        }
    }
}

/// A shared, mutable value that lives on one run loop's thread (SwiftNIO's `NIOLoopBoundBox`):
/// a reference every closure may capture — it is `Sendable` whatever `Value` is — whose
/// ``value`` is readable and writable only on the loop's thread, checked on every access.
///
/// Loop-confined state without a lock: a handler, a block sent with
/// ``EvRunLoop/execute(inModes:_:)`` or an actor pinned to the loop reads and writes it on the
/// loop's thread; any other thread may hold it but not open it. A reference read from ``value``
/// must stay on the loop's thread too, which the compiler does not enforce (it lets such a value
/// be sent to another task).
///
/// `@unchecked Sendable`: the value is touched only after ``EvRunLoop/isCurrent`` was checked,
/// so it is only ever used on the loop's thread.
public final class EvLoopBoundBox<Value>: @unchecked Sendable {
    /// The loop whose thread owns the value.
    public let loop: EvRunLoop
    private var storage: Value

    private init(unchecked value: Value, loop: EvRunLoop) {
        self.loop = loop
        storage = value
    }

    /// A box holding `value`, bound to `loop`.
    ///
    /// - Parameters:
    ///   - value: the value; from here on it is used only on `loop`'s thread.
    ///   - loop: the loop whose thread owns the value.
    /// - Precondition: called on `loop`'s thread (``EvRunLoop/isCurrent``); from another
    ///   thread use ``makeEmptyBox(valueType:loop:)`` or ``makeBoxSendingValue(_:loop:)``.
    public convenience init(_ value: Value, loop: EvRunLoop) {
        loop.preconditionIsCurrent("EvLoopBoundBox.init(_:loop:)", "a box with a value can be made")
        self.init(unchecked: value, loop: loop)
    }

    /// An empty box bound to `loop`, made on any thread: nothing crosses threads, and the loop's
    /// thread fills it later.
    ///
    /// - Parameters:
    ///   - valueType: the type of the value the box will hold.
    ///   - loop: the loop whose thread owns the value.
    /// - Returns: a box whose value is `nil`.
    public static func makeEmptyBox<Wrapped>(valueType: Wrapped.Type = Wrapped.self, loop: EvRunLoop) -> EvLoopBoundBox<Value>
    where Value == Wrapped? {
        EvLoopBoundBox(unchecked: nil, loop: loop)
    }

    /// A box holding `value`, bound to `loop`, made on any thread: the caller sends the value
    /// away (the compiler checks that nothing else keeps using it).
    ///
    /// - Parameters:
    ///   - value: the value, handed over to `loop`'s thread.
    ///   - loop: the loop whose thread owns the value.
    /// - Returns: a box holding `value`.
    public static func makeBoxSendingValue(_ value: sending Value, loop: EvRunLoop) -> EvLoopBoundBox<Value> {
        EvLoopBoundBox(unchecked: value, loop: loop)
    }

    /// The value.
    ///
    /// - Precondition: read and written on the loop's thread only; checked on every access.
    public var value: Value {
        get {
            loop.preconditionIsCurrent("EvLoopBoundBox.value", "the value is read")
            return storage
        }
        _modify {
            loop.preconditionIsCurrent("EvLoopBoundBox.value", "the value is written")
            yield &storage
        }
    }

    /// Runs `body` with the value, in place, and returns what `body` returns.
    ///
    /// - Parameter body: reads or changes the value.
    /// - Returns: what `body` returned.
    /// - Throws: what `body` throws.
    /// - Precondition: called on the loop's thread.
    public func withValue<Result, Failure: Error>(_ body: (inout Value) throws(Failure) -> Result) throws(Failure) -> Result {
        loop.preconditionIsCurrent("EvLoopBoundBox.withValue(_:)", "the value is used")
        return try body(&storage)
    }
}
