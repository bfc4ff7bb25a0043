/// Run-time failures of RunLoopKit (programming errors stop with a `precondition` instead).
public enum EvRunLoopError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The process has no file descriptor left to create a run loop's backend.
    case outOfFileDescriptors
    /// libev could not create an event backend; the text says which call failed.
    case backendUnavailable(String)

    /// A sentence that says what failed and why.
    public var description: String {
        switch self {
        case .outOfFileDescriptors:
            "EvRunLoop: cannot create a run loop: the process is out of file descriptors (EMFILE/ENFILE)"
        case .backendUnavailable(let detail):
            "EvRunLoop: cannot create a run loop: \(detail)"
        }
    }
}
