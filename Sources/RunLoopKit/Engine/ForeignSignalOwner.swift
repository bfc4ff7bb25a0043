#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A process signal has one owner. libdispatch's signal sources (`DispatchSource.makeSignalSource`,
/// which swift-service-lifecycle's `ServiceGroup` uses for its `gracefulShutdownSignals` and
/// `cancellationSignals`) install a process-wide `sigaction` handler on Linux, as RunLoopKit's
/// signal routing does, and neither calls the handler it replaced: whichever was installed last
/// receives every delivery. An ``EvSignalSource`` added after a `ServiceGroup` trapped the same
/// signal would take it away from the group, whose graceful shutdown would then never start.
///
/// So the first source for a signal looks at the handler in place and refuses one that lives in
/// libdispatch. (The other order — a `ServiceGroup` started after an ``EvSignalSource`` — cannot
/// be seen from here: libdispatch then takes the signal, the group shuts down gracefully, and the
/// source receives nothing; the documentation of ``EvSignalSource`` says so.)
enum ForeignSignalOwner {
    /// Stops with a message naming `call` when `signal`'s current handler belongs to libdispatch.
    static func refuseDispatchSource(for signal: Int32, _ call: StaticString) {
        guard let image = handlerImage(of: signal), image.contains("libdispatch") else { return }
        require(false, """
            \(call): signal \(signal) is already trapped by a DispatchSource (its handler is in \(image)); \
            swift-service-lifecycle's ServiceGroup traps its gracefulShutdownSignals and cancellationSignals that way. \
            A signal has one owner: react to the group's graceful shutdown (gracefulShutdown(), \
            withGracefulShutdownHandler) instead of an EvSignalSource, or leave the signal out of the group's lists
            """)
    }

    typealias AddressLookup = @convention(c) (UnsafeRawPointer?, UnsafeMutableRawPointer) -> Int32

    /// `dladdr(3)`, which the Glibc module does not import (it sits behind `_GNU_SOURCE`).
    private static let lookUpAddress: AddressLookup? = dlsym(nil, "dladdr").map { unsafeBitCast($0, to: AddressLookup.self) }

    /// The path of the image holding `signal`'s current handler, when it is a handler (not
    /// `SIG_DFL` or `SIG_IGN`) and the C library can say.
    static func handlerImage(of signal: Int32) -> String? {
        var current = sigaction()
        guard sigaction(signal, nil, &current) == 0, let lookUpAddress else { return nil }
        let handler = unsafeBitCast(current.__sigaction_handler.sa_handler, to: UInt.self)
        guard handler > 1, let address = UnsafeRawPointer(bitPattern: handler) else { return nil }  // SIG_DFL 0, SIG_IGN 1
        // Dl_info: four pointers, the image's path first.
        let info = UnsafeMutableRawPointer.allocate(byteCount: 4 * MemoryLayout<UnsafeRawPointer>.stride, alignment: MemoryLayout<UnsafeRawPointer>.alignment)
        defer { info.deallocate() }
        guard lookUpAddress(address, info) != 0, let path = info.load(as: UnsafePointer<CChar>?.self) else { return nil }
        return String(cString: path)
    }
}
