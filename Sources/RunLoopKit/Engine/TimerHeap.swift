/// A mode's timers ordered by fire date: a 4-ary min-heap with lazy deletion.
///
/// Adding is O(log n); cancelling only bumps the timer's generation (O(1)) and the stale entry
/// is dropped when it reaches the top or when stale entries outnumber live ones (``compact()``),
/// so both stay O(log n) amortised at a million timers. Equal fire dates keep the order in which
/// they were scheduled (a global sequence number breaks ties, as CF's insertion does).
struct TimerHeap {
    struct Entry {
        var deadline: MonotonicTime
        /// The fire date plus the timer's tolerance: the latest the loop may fire it (R46).
        var latest: MonotonicTime
        var sequence: UInt64
        var generation: UInt64
        let timer: EvTimer

        /// Whether the timer has not been rescheduled, moved or cancelled since this entry was pushed.
        var isLive: Bool { generation == timer.heapGeneration.load(ordering: .relaxed) }

        func precedes(_ other: Entry) -> Bool {
            deadline != other.deadline ? deadline < other.deadline : sequence < other.sequence
        }
    }

    private var entries: [Entry] = []

    var count: Int { entries.count }

    /// The earliest entry's deadline, stale or live; `nil` when empty. No entry is due before it.
    var topDeadline: MonotonicTime? { entries.isEmpty ? nil : entries[0].deadline }

    /// Schedules `timer` at `deadline` (fire no later than `latest`) with its current generation.
    /// Returns whether its deadline comes before every entry's the heap held (see ``PassView``).
    @discardableResult
    mutating func push(_ timer: EvTimer, at deadline: MonotonicTime, latest: MonotonicTime, sequence: UInt64) -> Bool {
        let comesFirst = entries.isEmpty || deadline < entries[0].deadline
        let generation = timer.heapGeneration.load(ordering: .relaxed)
        // A mode's first timer makes room for a few: growing one entry at a time from nothing
        // costs an allocation, a copy and a free at one, two and four entries.
        if entries.capacity == 0 { entries.reserveCapacity(8) }
        entries.append(Entry(deadline: deadline, latest: latest, sequence: sequence, generation: generation, timer: timer))
        siftUp(entries.count - 1)
        return comesFirst
    }

    /// If the top entry is `timer`'s of `generation`, moves it to `deadline` (no earlier than its
    /// own) with the timer's current generation and returns true: the same heap as a push and
    /// the stale top's removal, with one sift instead of two. In place, through the buffer: the
    /// entry's timer reference stays where it is, with no retain or release.
    mutating func moveTop(of timer: EvTimer, generation: UInt64, to deadline: MonotonicTime, latest: MonotonicTime, sequence: UInt64) -> Bool {
        guard !entries.isEmpty else { return false }
        return entries.withUnsafeMutableBufferPointer { buffer in
            let top = buffer.baseAddress!
            guard top.pointee.timer === timer, top.pointee.generation == generation, top.pointee.deadline <= deadline else { return false }
            top.pointee.deadline = deadline
            top.pointee.latest = latest
            top.pointee.sequence = sequence
            top.pointee.generation = timer.heapGeneration.load(ordering: .relaxed)
            Self.siftDown(0, in: buffer)
            return true
        }
    }

    /// Puts back an entry taken out (its deadline is no earlier than the one it was taken behind).
    mutating func push(_ entry: Entry) {
        push(entry.timer, at: entry.deadline, latest: entry.latest, sequence: entry.sequence)
    }

    /// R46: when to wake so that every timer fires within its tolerance, waking as late as that
    /// allows. The answer is the smallest `latest` among the entries due before it; the walk
    /// prunes every subtree whose top is due later, so it visits only timers this wake-up fires.
    /// `top` is the earliest live entry (see ``peekLive()``).
    func coalescedWakeUp(startingAt top: Entry) -> MonotonicTime {
        var wake = top.latest
        // Without tolerance on the earliest timer (the default) nothing can fire with it: no
        // walk, and no array for one.
        guard top.deadline < wake else { return wake }
        var pending = [0]
        while let index = pending.popLast() {
            let entry = entries[index]
            guard entry.deadline < wake else { continue }
            if entry.isLive && !entry.timer.isFiring { wake = min(wake, entry.latest) }
            let first = 4 * index + 1
            if first < entries.count { pending.append(contentsOf: first..<min(first + 4, entries.count)) }
        }
        return wake
    }

    /// The earliest live entry's deadline, dropping stale entries on the way; `nil` when none.
    /// Unlike ``peekLive()`` it copies no entry out, so it retains and releases no timer: the
    /// timers step and the sleep ask it on every pass.
    @inline(__always)
    mutating func earliestLiveDeadline() -> MonotonicTime? {
        guard !entries.isEmpty else { return nil }
        if entries[0].isLive { return entries[0].deadline }
        return dropStaleThenPeek()?.deadline
    }

    /// When to wake for the earliest live timer if that needs no walk (see
    /// ``coalescedWakeUp(startingAt:)``): it is not firing and has no tolerance (the default).
    /// `nil` when it has, or there is no live timer. Copies no entry out.
    /// With it, the timer's repeat interval: its later fire dates are this one plus whole intervals.
    @inline(__always)
    mutating func simpleWakeUp() -> (date: MonotonicTime, interval: Int64)? {
        guard let deadline = earliestLiveDeadline() else { return nil }
        // Read in place: a copy of the entry would retain and release its timer.
        return entries.withUnsafeBufferPointer { buffer in
            let top = buffer.baseAddress!
            return top.pointee.latest == deadline && !top.pointee.timer.isFiring ? (deadline, top.pointee.timer.intervalNanoseconds) : nil
        }
    }

    /// The earliest live entry, dropping stale ones on the way.
    ///
    /// The common cases (no timers, a live top) do not mutate: a mutating path here makes the
    /// compiler make the array unique first, which for an empty heap allocates a fresh buffer on
    /// every call, and it is called several times per loop iteration.
    mutating func peekLive() -> Entry? {
        guard let top = entries.first else { return nil }
        if top.isLive { return top }
        return dropStaleThenPeek()
    }

    @inline(never)
    private mutating func dropStaleThenPeek() -> Entry? {
        while let top = entries.first {
            if top.isLive { return top }
            removeTop()
        }
        return nil
    }

    /// The earliest entry, copied out (it stays in the heap).
    var top: Entry { entries[0] }

    /// Whether no entry but the top one is due at `now`: none of the root's children is, and
    /// every other entry is due no earlier than one of them.
    func onlyTopIsDue(at now: MonotonicTime) -> Bool {
        let end = min(entries.count, 5)
        var index = 1
        while index < end {
            if entries[index].deadline <= now { return false }
            index += 1
        }
        return true
    }

    /// Removes the top entry.
    mutating func removeTop() {
        let last = entries.removeLast()
        if !entries.isEmpty {
            entries[0] = last
            siftDown(0)
        }
    }

    /// Drops every stale entry when they outnumber `liveCount` (amortised O(1) per cancel).
    /// Only the check is inlined: a call on every cancel would make the caller keep its mode
    /// state retained across it.
    @inline(__always)
    mutating func compactIfMostlyStale(liveCount: Int) {
        if isMostlyStale(liveCount: liveCount) { compact() }
    }

    /// Whether stale entries outnumber `liveCount` (the mode's live timers) enough to compact.
    func isMostlyStale(liveCount: Int) -> Bool { entries.count > 2 * liveCount + 64 }

    /// Drops every stale entry and restores the heap order.
    @inline(never)
    mutating func compact() {
        entries.removeAll { !$0.isLive }
        guard entries.count > 1 else { return }
        for index in stride(from: (entries.count - 2) / 4, through: 0, by: -1) { siftDown(index) }
    }

    /// Drops every entry (teardown), returning the timers of the live ones.
    mutating func removeAll() -> [EvTimer] {
        defer { entries = [] }
        return entries.filter(\.isLive).map(\.timer)
    }

    // The sifts move entries through raw memory: a moved entry's timer reference changes place,
    // not owner, so no retain or release touches the timers (at a million timers each would
    // be a cache miss).

    private mutating func siftUp(_ start: Int) {
        entries.withUnsafeMutableBufferPointer { buffer in
            let base = buffer.baseAddress!
            var child = start
            let moving = (base + child).move()
            while child > 0 {
                let parent = (child - 1) / 4
                guard moving.precedes(base[parent]) else { break }
                (base + child).moveInitialize(from: base + parent, count: 1)
                child = parent
            }
            (base + child).initialize(to: moving)
        }
    }

    private mutating func siftDown(_ start: Int) {
        entries.withUnsafeMutableBufferPointer { Self.siftDown(start, in: $0) }
    }

    private static func siftDown(_ start: Int, in buffer: UnsafeMutableBufferPointer<Entry>) {
        let base = buffer.baseAddress!
        let count = buffer.count
        var parent = start
        let moving = (base + parent).move()
        while true {
            let first = 4 * parent + 1
            if first >= count { break }
            var best = first
            for candidate in (first + 1)..<min(first + 4, count) where base[candidate].precedes(base[best]) {
                best = candidate
            }
            guard base[best].precedes(moving) else { break }
            (base + parent).moveInitialize(from: base + best, count: 1)
            parent = best
        }
        (base + parent).initialize(to: moving)
    }
}
