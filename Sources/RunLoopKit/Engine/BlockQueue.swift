/// Pending perform-blocks of a loop (CF's `_blocks_head` list), guarded by the loop's lock.
///
/// CF keeps one list and walks all of it in every blocks step, blocks for other modes included
/// (W19). Here each mode has a lane of its own, `.common` too: a step takes the running mode's
/// lane, and the common lane while that mode is common, and merges them by the global sequence
/// number every block gets when it is queued, so blocks still run in the order they were
/// scheduled (R55) and a step costs O(the blocks that run). A block for several modes is queued
/// in each of their lanes with one shared ``Claim``: the first step that takes it claims it, and
/// its copies elsewhere count as gone at once and are dropped when their lane is next taken or
/// empties.
struct BlockQueue {
    /// What a queued entry runs: a closure, or a concurrency job run on its executor (queued
    /// as it is, without a closure around it). The two kinds of job are two cases, not a flag:
    /// an entry carries nothing beyond the job and its executor.
    enum Work: Sendable {
        case block(@Sendable () -> Void)
        /// An actor's job, run isolated to the loop.
        case isolatedJob(UnownedJob, EvRunLoopIsolation)
        /// A job of a task that prefers the executor, run as that task executor's.
        case taskJob(UnownedJob, EvRunLoopExecutor)

        /// Runs the work on the loop's thread.
        func run(on loop: EvRunLoop) {
            switch self {
            case .block(let body): Callout.block(body, on: loop)
            case .isolatedJob(let job, let isolation): Self.runJob({ isolation.run(job) }, on: loop)
            case .taskJob(let job, let executor): Self.runJob({ executor.run(job) }, on: loop)
            }
        }

        private static func runJob(_ body: @Sendable () -> Void, on loop: EvRunLoop) {
            loop.isRunningJob = true
            Callout.block(body, on: loop)
            loop.isRunningJob = false
            if loop.heldBackJobs {
                loop.heldBackJobs = false
                loop.wakeUp()
            }
        }

        var isJob: Bool {
            if case .block = self { false } else { true }
        }

        /// The loop dropped the work unrun (its thread exited, R4): a closure is released; a job
        /// runs on the executor's stand-in queue, so its task is resumed instead of lost.
        func dropped() {
            switch self {
            case .block: break
            case .isolatedJob(let job, let isolation): isolation.runOrphaned(job)
            case .taskJob(let job, let executor): executor.runOrphaned(job)
            }
        }
    }

    /// Shared by the copies of a block queued for several modes (C100: it runs once).
    ///
    /// `@unchecked Sendable`: `isClaimed` is read and written only under the blocks' lock.
    final class Claim: @unchecked Sendable {
        /// The lanes the block was queued in.
        let modes: [EvRunLoop.Mode]
        var isClaimed = false
        init(_ modes: [EvRunLoop.Mode]) { self.modes = modes }
    }

    /// One queued block.
    struct Entry: Sendable {
        /// Its place in scheduling order (R55).
        let sequence: UInt64
        let work: Work
        /// Queued by a call that wakes the loop for it (``EvRunLoop/enqueueAndWake(_:inModes:)``);
        /// declared next to `work`, whose padding it fills.
        let isWoken: Bool
        /// Set when the block was queued for several modes.
        let claim: Claim?
    }

    /// The blocks queued for one mode, in sequence order.
    struct Lane {
        var entries: [Entry] = []
        /// Entries not claimed by another lane's step: the blocks this mode would run.
        var live = 0
        /// Entries with a ``Claim`` (claimed or not): when there are none, the lane is taken
        /// whole, with no look at its entries.
        var shared = 0
        /// Live entries queued with a wake-up, executor jobs among them (``jobs``).
        var woken = 0
        /// Live executor jobs (all in the common lane).
        var jobs = 0

        mutating func append(_ entry: consuming Entry) {
            if entry.claim != nil { shared += 1 }
            count(entry, 1)
            entries.append(entry)
        }

        /// Counts `entry` in (`sign` 1) or out (-1) of the live entries.
        mutating func count(_ entry: borrowing Entry, _ sign: Int) {
            live += sign
            if entry.isWoken { woken += sign }
            if entry.work.isJob { jobs += sign }
        }

        /// Whether a live entry queued with a wake-up waits here; jobs count unless held back.
        func hasWoken(jobsHeldBack: Bool) -> Bool {
            woken > (jobsHeldBack ? jobs : 0)
        }
    }

    private var common = Lane()
    private var defaultLane = Lane()
    private var named: [ModeKey: Lane] = [:]
    /// An empty buffer a step handed back (``recycle(_:)``), given to the next `.common` or
    /// `.default` lane taken, so a loop that runs a block per step does not allocate per step.
    private var spare: [Entry] = []
    /// The largest buffer kept as ``spare``: a burst's buffer is let go.
    static let spareCapacityLimit = 256
    /// Blocks queued and not yet taken (a block for several modes counts once).
    private(set) var pendingCount = 0
    /// Of those, the ones queued with a wake-up.
    private(set) var wokenCount = 0

    /// Set when the loop's thread exits: blocks sent afterwards are dropped, as CF does.
    private(set) var isClosed = false
    /// The sequence number the next block gets.
    private(set) var nextSequence: UInt64 = 0
    /// Queue entries examined by blocks steps so far (what a step costs; tests read it).
    private(set) var entriesVisited: UInt64 = 0

    var isEmpty: Bool { pendingCount == 0 }

    /// Whether a block for `.common` is pending.
    var hasCommonBlocks: Bool { common.live > 0 }

    /// Whether a block that may run in the default mode (for `.default` or `.common`) is pending.
    var hasDefaultBlocks: Bool { common.live > 0 || defaultLane.live > 0 }

    /// Queues `work` for `modes` (no mode twice), `woken` when the caller wakes the loop for it;
    /// false (and nothing is kept) once the queue is closed.
    mutating func append(_ work: consuming Work, modes: [EvRunLoop.Mode], woken: Bool) -> Bool {
        guard !isClosed else { return false }
        let sequence = nextSequence
        nextSequence += 1
        pendingCount += 1
        if woken { wokenCount += 1 }
        guard modes.count > 1 else {
            // The usual case: one mode, no claim, and for `.common` or `.default` no hashing.
            let mode = modes[0]
            let entry = Entry(sequence: sequence, work: work, isWoken: woken, claim: nil)
            if mode == .common {
                common.append(entry)
            } else if mode == .default {
                defaultLane.append(entry)
            } else {
                named[ModeKey(mode), default: Lane()].append(entry)
            }
            return true
        }
        let entry = Entry(sequence: sequence, work: work, isWoken: woken, claim: Claim(modes))
        for mode in modes { withLane(mode) { $0.append(entry) } }
        return true
    }

    /// Refuses further blocks and hands back the pending ones, to be dropped (``Work/dropped()``)
    /// outside the lock.
    mutating func close() -> [Work] {
        isClosed = true
        var works: [Work] = []
        for lane in [common, defaultLane] + named.values {
            for entry in lane.entries where entry.claim?.isClaimed != true {
                entry.claim?.isClaimed = true
                works.append(entry.work)
            }
        }
        common = Lane()
        defaultLane = Lane()
        named = [:]
        pendingCount = 0
        wokenCount = 0
        return works
    }

    /// Whether a block queued with a wake-up may run in `mode` now: its own, or a `.common` one
    /// while `mode` is common; executor jobs only when not `jobsHeldBack` (``keepJobsQueued(_:)``).
    func hasWokenBlocks(for mode: EvRunLoop.Mode, isCommon: Bool, jobsHeldBack: Bool) -> Bool {
        if isCommon && common.hasWoken(jobsHeldBack: jobsHeldBack) { return true }
        if mode == .common { return false }
        if mode == .default { return defaultLane.hasWoken(jobsHeldBack: jobsHeldBack) }
        return named[ModeKey(mode)]?.hasWoken(jobsHeldBack: jobsHeldBack) ?? false
    }

    /// R16/R57: a block for `mode`, or for `.common` while `mode` is common, is pending.
    func hasBlocks(for mode: EvRunLoop.Mode, isCommon: Bool) -> Bool {
        if isCommon && common.live > 0 { return true }
        if mode == .default { return defaultLane.live > 0 }
        return (named[ModeKey(mode)]?.live ?? 0) > 0
    }

    /// R54/R15: takes out every block that may run in `mode` now: its lane's, and the common
    /// lane's while `mode` is common, each in sequence order. The blocks of other lanes keep
    /// their place.
    mutating func takeRunnable(in mode: EvRunLoop.Mode, isCommon: Bool) -> (own: [Entry], common: [Entry]) {
        let own = mode == .common ? [] : take(mode)
        return (own, isCommon ? take(.common) : [])
    }

    /// R15: takes out the `.common` blocks scheduled within `sequences` (the running mode was
    /// made common by a block of the step), in order; the others keep their place.
    mutating func takeCommon(scheduledIn sequences: Range<UInt64>) -> [Entry] {
        let entries = common.entries
        let start = entries.partitioningIndex { $0.sequence >= sequences.lowerBound }
        let end = entries[start...].partitioningIndex { $0.sequence >= sequences.upperBound }
        guard start < end else { return [] }
        var lane = Lane(entries: Array(entries[start..<end]))
        lane.live = lane.entries.count
        lane.shared = lane.entries.count { $0.claim != nil }
        lane.woken = lane.entries.count { $0.isWoken }  // what claimAll subtracts when no entry is shared
        common.entries.removeSubrange(start..<end)
        let taken = claimAll(&lane, from: .common)
        for entry in taken { common.count(entry, -1) }
        common.shared -= lane.shared
        return taken
    }

    /// Puts the executor jobs among `taken` (just taken out, in sequence order) back in the
    /// common lane, where every job is queued, at their places: a step that runs nested in a job
    /// runs the other blocks only. Returns whether it held any back.
    mutating func keepJobsQueued(_ taken: inout [Entry]) -> Bool {
        guard taken.contains(where: { $0.work.isJob }) else { return false }
        for entry in taken where entry.work.isJob {
            let place = common.entries.partitioningIndex { $0.sequence > entry.sequence }
            common.entries.insert(entry, at: place)
            common.count(entry, 1)
            pendingCount += 1
            if entry.isWoken { wokenCount += 1 }
        }
        taken.removeAll { $0.work.isJob }
        return true
    }

    /// Keeps `buffer`, emptied by a step, for the next lane taken, unless a buffer is kept
    /// already or it is a large one.
    mutating func recycle(_ buffer: inout [Entry]) {
        guard spare.capacity == 0, buffer.isEmpty, buffer.capacity <= Self.spareCapacityLimit else { return }
        swap(&spare, &buffer)
    }

    private mutating func takeSpare() -> [Entry] {
        var taken: [Entry] = []
        swap(&taken, &spare)
        return taken
    }

    /// Takes `mode`'s whole lane, claiming its blocks for several modes.
    private mutating func take(_ mode: EvRunLoop.Mode) -> [Entry] {
        var lane: Lane
        if mode == .common {
            guard !common.entries.isEmpty else { return [] }
            lane = common
            common = Lane(entries: takeSpare())
        } else if mode == .default {
            guard !defaultLane.entries.isEmpty else { return [] }
            lane = defaultLane
            defaultLane = Lane(entries: takeSpare())
        } else {
            guard let found = named.removeValue(forKey: ModeKey(mode)) else { return [] }
            lane = found
        }
        return claimAll(&lane, from: mode)
    }

    /// The unclaimed entries of `lane` (taken out of `mode`), now claimed: each leaves the
    /// pending count, and a block for several modes leaves its other lanes' live counts.
    private mutating func claimAll(_ lane: inout Lane, from mode: EvRunLoop.Mode) -> [Entry] {
        entriesVisited += UInt64(lane.entries.count)
        guard lane.shared > 0 else {
            pendingCount -= lane.entries.count
            wokenCount -= lane.woken
            return lane.entries
        }
        var taken: [Entry] = []
        taken.reserveCapacity(lane.live)
        for entry in lane.entries {
            guard let claim = entry.claim else {
                taken.append(entry)
                continue
            }
            guard !claim.isClaimed else { continue }
            claim.isClaimed = true
            for other in claim.modes where other != mode { forget(entry, in: other) }
            taken.append(entry)
        }
        pendingCount -= taken.count
        wokenCount -= taken.count { $0.isWoken }
        return taken
    }

    /// `entry`, in `mode`'s lane too, was claimed elsewhere: one fewer live entry there. A lane
    /// with no live entry left holds only such copies and is emptied at once.
    private mutating func forget(_ entry: Entry, in mode: EvRunLoop.Mode) {
        withLane(mode) { lane in
            lane.count(entry, -1)
            if lane.live == 0 { lane = Lane() }
        }
        if mode != .common && mode != .default && named[ModeKey(mode)]?.entries.isEmpty == true {
            named[ModeKey(mode)] = nil
        }
    }

    private mutating func withLane(_ mode: EvRunLoop.Mode, _ body: (inout Lane) -> Void) {
        if mode == .common {
            body(&common)
        } else if mode == .default {
            body(&defaultLane)
        } else {
            body(&named[ModeKey(mode), default: Lane()])
        }
    }
}

extension Collection {
    /// The first index whose element satisfies `belongs`, which must be false for a prefix of
    /// the collection and true for the rest (a binary search).
    func partitioningIndex(where belongs: (Element) -> Bool) -> Index {
        var low = startIndex
        var count = self.count
        while count > 0 {
            let half = count / 2
            let middle = index(low, offsetBy: half)
            if belongs(self[middle]) {
                count = half
            } else {
                low = index(after: middle)
                count -= half + 1
            }
        }
        return low
    }
}
