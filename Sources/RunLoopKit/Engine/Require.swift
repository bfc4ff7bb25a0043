/// Stops the program with `message` unless `condition` holds, in every build configuration.
///
/// RunLoopKit reports programmer errors (running another thread's loop, a timer in two loops, a
/// negative interval) this way rather than with `precondition`, because `precondition` drops its
/// message in optimised builds and a misuse must name the call that was misused.
@inline(__always)
func require(
    _ condition: @autoclosure () -> Bool, _ message: @autoclosure () -> String,
    file: StaticString = #file, line: UInt = #line
) {
    if !condition() { fatalError(message(), file: file, line: line) }
}
