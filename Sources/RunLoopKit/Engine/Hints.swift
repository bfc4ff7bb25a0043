/// Bits of ``EvRunLoop/hints``: work that may be waiting for a run.
///
/// Each bit is set, under the loop's lock, after work was queued and cleared, under the lock,
/// when that queue empties; a run reads them without the lock to skip empty steps. A bit read
/// stale only delays work to the next step, which is allowed: queuing it does not wake the loop
/// either (R22, R56), and a ``EvRunLoop/wakeUp()`` after queuing orders the bit before the wake.
enum Hint {
    /// Perform-blocks are pending.
    static let blocks: UInt32 = 1 << 0
    /// A perform-block that may run in the default mode is pending (one for `.default` or
    /// `.common`): a blocks step of the default mode skips the lock without it, however many
    /// blocks wait for other modes (W19).
    static let defaultBlocks: UInt32 = 1 << 3
    /// A version-0 source is signalled.
    static let signalledSources: UInt32 = 1 << 1
    /// A version-1 source is ready.
    static let readySource1s: UInt32 = 1 << 2
    /// Work queued with a wake-up is pending (``EvRunLoop/enqueueAndWake(_:inModes:)``): a run
    /// looks for it before it sleeps.
    static let wokenBlocks: UInt32 = 1 << 4
    /// An iteration holds a version-1 source for its R20.11 (C70): that step looks for it even
    /// when callouts since took every other readiness away.
    static let heldSource1s: UInt32 = 1 << 5
}

extension EvRunLoop {
    func setHint(_ bit: UInt32) { hints.bitwiseOr(bit, ordering: .releasing) }
    func clearHint(_ bit: UInt32) { hints.bitwiseAnd(~bit, ordering: .releasing) }
    func hasHint(_ bit: UInt32) -> Bool { hints.load(ordering: .acquiring) & bit != 0 }
}
