import CEpoll
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Which file a descriptor named when a source was made for it, so that a number closed and
/// reused for another file is told from that file.
///
/// Every file is told by its device and inode, and a file epoll can watch (a pipe, a socket,
/// an eventfd, a timerfd…) by the kernel as well, through ``FileRegister``: device and inode
/// alone cannot tell two eventfds apart, since every eventfd, timerfd, signalfd and epoll set
/// shares one inode. For a file epoll refuses (a regular file, a directory), the same path
/// opened again counts as the same file.
struct FileIdentity: Sendable, Equatable {
    let device: UInt64
    let inode: UInt64
    /// Which of the files entered in the register under this number it is; 0 when the register
    /// did not take it (see ``FileRegister/enter(_:)``).
    let registration: UInt64

    /// The file `fd` names now, entered in the register; `nil` when `fd` is not open.
    init?(of fd: Int32) {
        var status = stat()
        guard fstat(fd, &status) == 0 else { return nil }
        device = UInt64(status.st_dev)
        inode = UInt64(status.st_ino)
        registration = FileRegister.enter(fd)
    }

    /// Whether `fd` names this file now (one or two system calls: made when a watch starts,
    /// when a re-arm fails and for each report of an always-ready descriptor, never per event).
    func isNamed(by fd: Int32) -> Bool {
        // Both: the register tells two eventfds apart, device and inode two pipes the register
        // would take for one (a file that stayed open elsewhere put back under its old number
        // after another was entered there, see FileRegister).
        var status = stat()
        guard fstat(fd, &status) == 0, UInt64(status.st_dev) == device, UInt64(status.st_ino) == inode else { return false }
        return registration == 0 || FileRegister.holds(fd, registration)
    }
}

/// The process's register of the files sources were made for: an epoll set that is never
/// waited on, holding an entry (no events) per open file and number. The kernel keys an entry by
/// both and drops it when that file is closed for good, so `EPOLL_CTL_MOD` on a number succeeds
/// only while the number names a file entered under it. A count per number, bumped whenever a
/// new file is entered under it, tells which of those files a source was made for.
///
/// A file still open elsewhere (a `dup`) keeps its entry; put back under its old number after
/// another file was entered there, it counts as another file. One descriptor for the process,
/// made at the first source for a descriptor, and a run loop's own (``InternalDescriptors``).
enum FileRegister {
    private struct State {
        /// The register's epoll set; -1 until made, or while it cannot be.
        var descriptor: Int32 = -1
        /// Per number, how many files were entered under it.
        var entries: [Int32: UInt64] = [:]
    }

    private static let state = Locked(State())

    /// Enters the file `fd` names now; returns its registration, or 0 when epoll refuses the
    /// file (a regular file: `EPERM`) or the register cannot be made or grow.
    static func enter(_ fd: Int32) -> UInt64 {
        state.withLock { state in
            if state.descriptor < 0 {
                state.descriptor = retryingEINTR { epoll_create1(Int32(EPOLL_CLOEXEC)) }
                guard state.descriptor >= 0 else { return 0 }
                InternalDescriptors.insert(state.descriptor)
            }
            var nothing = epoll_event()
            if retryingEINTR({ epoll_ctl(state.descriptor, EPOLL_CTL_ADD, fd, &nothing) }) == 0 {
                state.entries[fd, default: 0] &+= 1
                return state.entries[fd]!
            }
            // EEXIST: this very file is entered under `fd` already, the last one entered there
            // unless the file was put back under it (see the type's comment).
            return errno == EEXIST ? state.entries[fd] ?? 0 : 0
        }
    }

    /// Whether `fd` names the file entered under it as `registration`.
    static func holds(_ fd: Int32, _ registration: UInt64) -> Bool {
        state.withLock { state in
            guard state.entries[fd] == registration else { return false }
            var nothing = epoll_event()
            return retryingEINTR { epoll_ctl(state.descriptor, EPOLL_CTL_MOD, fd, &nothing) } == 0
        }
    }

    /// The register's epoll set, -1 while there is none.
    static var descriptor: Int32 { state.withLock { $0.descriptor } }
}
