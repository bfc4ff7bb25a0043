// Files the descriptor source tests open under chosen numbers.
import Foundation
import RunLoopKit
import TestSupport

/// A descriptor number no other test is handed while a test here has it closed behind a
/// source's back. The kernel hands out the lowest free number, and the suite never holds
/// anywhere near this many at once, so a number just under the limit (at most 4,096) stays
/// free unless taken on purpose with `dup2`. Each test uses its own `index`.
func reservedDescriptorNumber(_ index: Int32) -> Int32 {
    var limit = rlimit()
    getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit)
    return Int32(min(limit.rlim_cur, 4_096)) - 1 - index
}

/// A pipe for a test to watch; the test closes its ends when it is done.
struct DescriptorPipe: Sendable {
    let readEnd: Int32
    let writeEnd: Int32
    init() {
        var fds: [Int32] = [0, 0]
        precondition(pipe(&fds) == 0)
        (readEnd, writeEnd) = (fds[0], fds[1])
    }
    /// A pipe whose read end is descriptor `number` (see ``reservedDescriptorNumber(_:)``).
    init(readEndAt number: Int32) {
        let pipe = DescriptorPipe()
        precondition(dup2(pipe.readEnd, number) == number)
        Foundation.close(pipe.readEnd)
        (readEnd, writeEnd) = (number, pipe.writeEnd)
    }
    func write(_ byte: UInt8 = 1) { var byte = byte; precondition(Foundation.write(writeEnd, &byte, 1) == 1) }
    func readByte() { var byte: UInt8 = 0; _ = read(readEnd, &byte, 1) }
    func drain() { var buffer = [UInt8](repeating: 0, count: 64); _ = read(readEnd, &buffer, 64) }
    func close() { Foundation.close(readEnd); Foundation.close(writeEnd) }
}

/// A regular file at `number`, holding one byte.
func regularFile(at number: Int32) -> Int32 {
    var template = Array("/tmp/runloopkit-regular-XXXXXX".utf8CString)
    let fd = mkstemp(&template)
    precondition(fd >= 0)
    unlink(template)
    var byte: UInt8 = 7
    precondition(write(fd, &byte, 1) == 1 && lseek(fd, 0, SEEK_SET) == 0)
    precondition(dup2(fd, number) == number)
    close(fd)
    return number
}

/// A handler that reads whatever the number names when told it is readable, as a careless
/// one does, and logs what it was told and what it read.
func carelessReader(
    of number: Int32, _ events: EventLog<EvFileDescriptorSource.Readiness>, _ stolen: EventLog<UInt8>
) -> @Sendable (EvFileDescriptorSource.Readiness) -> Void {
    { readiness in
        events.append(readiness)
        guard readiness.contains(.readable) else { return }
        var byte: UInt8 = 0
        if read(number, &byte, 1) == 1 { stolen.append(byte) }
    }
}
