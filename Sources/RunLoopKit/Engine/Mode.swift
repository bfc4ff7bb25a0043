extension EvRunLoop {
    /// The name of a run-loop mode (CF: a `CFRunLoopMode` string).
    ///
    /// A mode comes into existence on a loop the first time an item or a block is put in it,
    /// directly or as a common item of a common mode (R7, C10); making it common while the loop
    /// has no common items does not create it. ``default`` always exists; ``common`` is the
    /// pseudo-mode that stands for every mode in the loop's common set (R11–R15) and cannot
    /// itself be run (R10). Modes compare by name, literally as CF compares them (not by
    /// Swift's canonical `String` equality), so `Mode("kCFRunLoopCommonModes")` is ``common``
    /// (CF recognises the pseudo-mode by pointer only, W9).
    public struct Mode: Hashable, Sendable, CustomStringConvertible {
        /// The name's number in the process-wide table of mode names. A mode is only this number,
        /// so copying, comparing and hashing one is as cheap as an `Int` (no string to retain).
        /// Internal for ``ModeList``'s index, which uses it as its own hash.
        let id: Int

        /// A mode named `name`. Equal names give equal modes.
        ///
        /// - Precondition: `name` is not empty.
        public init(_ name: String) {
            require(!name.isEmpty, "EvRunLoop.Mode.init: a mode name must not be empty")
            id = ModeNames.number(for: name)
        }

        /// The mode numbered `id` in the table of names (internal for ``ModeList``, which keeps
        /// its first two modes as numbers).
        init(id: Int) { self.id = id }

        /// The mode's name.
        public var name: String { ModeNames.name(of: id) }

        /// Modes with the same name are equal.
        public static func == (lhs: Mode, rhs: Mode) -> Bool { lhs.id == rhs.id }
        /// Hashes the mode's number, never its name.
        public func hash(into hasher: inout Hasher) { hasher.combine(id) }

        /// The default mode, `kCFRunLoopDefaultMode`. Always in the common set (R11).
        /// Numbered in advance, so it is a constant: reading it costs no lazy-initialisation check.
        public static let `default` = Mode(id: ModeNames.defaultNumber)

        /// The common-modes pseudo-mode, `kCFRunLoopCommonModes` (R12–R15).
        public static let common = Mode(id: ModeNames.commonNumber)

        /// The mode's name.
        public var description: String { name }
    }

    /// The phases of a run that observers can watch (CF: `CFRunLoopActivity`, same bit values).
    public struct Activity: OptionSet, Sendable, Hashable, CustomStringConvertible {
        public let rawValue: UInt32
        /// Activities from CF's `CFRunLoopActivity` bits.
        public init(rawValue: UInt32) { self.rawValue = rawValue }

        /// A run begins (R19).
        public static let entry = Activity(rawValue: 1 << 0)
        /// An iteration is about to handle timers (R20.1).
        public static let beforeTimers = Activity(rawValue: 1 << 1)
        /// An iteration is about to handle version-0 sources (R20.2).
        public static let beforeSources = Activity(rawValue: 1 << 2)
        /// The thread is about to sleep (R20.8).
        public static let beforeWaiting = Activity(rawValue: 1 << 5)
        /// The thread has just woken up (R20.10).
        public static let afterWaiting = Activity(rawValue: 1 << 6)
        /// A run ends (R19).
        public static let exit = Activity(rawValue: 1 << 7)
        /// Every activity.
        public static let allActivities = Activity(rawValue: 0x0FFF_FFFF)

        /// The activities' names, joined by `|`.
        public var description: String {
            let names: [(Activity, String)] = [
                (.entry, "entry"), (.beforeTimers, "beforeTimers"), (.beforeSources, "beforeSources"),
                (.beforeWaiting, "beforeWaiting"), (.afterWaiting, "afterWaiting"), (.exit, "exit"),
            ]
            let present = names.filter { contains($0.0) }.map(\.1)
            return present.isEmpty ? "[]" : present.joined(separator: "|")
        }
    }

    /// Why a run returned (CF: `CFRunLoopRunResult`, R24).
    public enum RunResult: Int32, Sendable, CustomStringConvertible {
        /// The mode had no sources or timers (R16, R18).
        case finished = 1
        /// ``EvRunLoop/stop()`` ended this run (R27).
        case stopped = 2
        /// The run's timeout passed (R24.2).
        case timedOut = 3
        /// A source was handled and `returnAfterSourceHandled` was requested (R24.1).
        case handledSource = 4

        /// The result's name.
        public var description: String {
            switch self {
            case .finished: "finished"
            case .stopped: "stopped"
            case .timedOut: "timedOut"
            case .handledSource: "handledSource"
            }
        }
    }
}

/// The process-wide table that numbers mode names (see ``EvRunLoop/Mode``). Names are never
/// removed, as CF never removes a mode from a loop; the table grows with distinct names only.
enum ModeNames {
    /// The numbers of `kCFRunLoopDefaultMode` and `kCFRunLoopCommonModes`, in the table from the start.
    static let defaultNumber = 0
    static let commonNumber = 1

    /// Keyed by the name's bytes: CF compares mode names literally, while Swift's `String`
    /// equality would make two spellings of "é" (composed, decomposed) one mode.
    private struct Table {
        var numbers: [[UInt8]: Int] = [Array("kCFRunLoopDefaultMode".utf8): defaultNumber, Array("kCFRunLoopCommonModes".utf8): commonNumber]
        var names: [String] = ["kCFRunLoopDefaultMode", "kCFRunLoopCommonModes"]
    }

    private static let table = Locked(Table())

    static func number(for name: String) -> Int {
        let bytes = Array(name.utf8)
        return table.withLock { table in
            if let number = table.numbers[bytes] { return number }
            table.names.append(name)
            table.numbers[bytes] = table.names.count - 1
            return table.names.count - 1
        }
    }

    static func name(of number: Int) -> String {
        table.withLock { $0.names[number] }
    }
}

/// A mode as the engine's tables key it: the number mixed with one multiply, not a SipHash
/// `Hasher` run on every lookup of a mode's state. Numbers are handed out in sequence by this
/// process, so there is no flooding to resist. Internal, so that the public ``EvRunLoop/Mode``
/// hashes the ordinary way.
struct ModeKey: Hashable, Sendable {
    let id: Int

    init(_ mode: EvRunLoop.Mode) { id = mode.id }

    var mode: EvRunLoop.Mode { EvRunLoop.Mode(id: id) }

    func hash(into hasher: inout Hasher) { hasher.combine(id) }

    func _rawHashValue(seed: Int) -> Int {
        let mixed = UInt(bitPattern: id ^ seed) &* 0x9E37_79B9_7F4A_7C15
        return Int(bitPattern: mixed ^ (mixed >> 29))
    }
}
