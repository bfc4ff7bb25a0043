import CEpoll
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// What takes the readiness a ``DescriptorSet`` reports: the backend, through its concrete type,
/// so that a poll forms no closure (whose captures cost a retain and release per poll).
protocol ReadinessSink: AnyObject {
    /// Watcher `token` is ready for `events` (``EvBackend/readable``, ``EvBackend/writable``,
    /// ``EvBackend/failed``).
    func noteReady(_ token: Int, _ events: Int32)
}

/// The loop's own epoll set for callers' file descriptors; libev watches only this set's
/// descriptor, never a caller's.
///
/// Why not an `ev_io` per caller descriptor: libev tells the kernel about a watcher only at its
/// next `ev_run`, and Debian's libev, built with assertions, aborts when that descriptor was
/// closed in between ("libev: I/O watcher with invalid fd found in epoll_ctl", the assertion in
/// `epoll_modify`, ev_epoll.c:134 of libev 4.33). A caller may
/// close a descriptor at any moment, from any thread, and the number may be reused at once.
/// Here every `epoll_ctl` is made at once and its failure is an answer: the descriptor's watchers
/// are reported failed and leave the set.
///
/// Entries are one-shot. A reported entry rests until a handler takes its readiness and is re-armed
/// then (``taken(token:fd:verify:)``), once per handled readiness. An entry the kernel keeps after
/// its number was closed (the file still open elsewhere, a `dup` or a child) can then report once
/// at most, instead of waking the loop for ever; its generation, kept in the event's data, tells
/// such a report from one of a live entry. Its file put back under the number would take that
/// number's next re-arm, so a re-arm under a number where one may linger is checked against the
/// entry's file (``mayLinger``). A descriptor epoll refuses (`EPERM`: a regular file) is ready at
/// once for all it is watched for, as `poll` would say.
///
/// A watcher whose source's modes stop running is parked (``park(token:fd:)``), not removed: its
/// kernel entry stays, so a mode switch costs no `epoll_ctl` for it, and a report while it is
/// parked is held (the entry rests, not re-armed before sleeps) until it is watched again. Its
/// return re-arms the entry, one `epoll_ctl` that also shows whether the number still names the
/// entry's file: the kernel keys its entry by file and number.
///
/// A number names a file only until it is closed, and the next `open` may reuse it for another.
/// Each watcher says which file it was made for (its ``FileIdentity``): a watch that starts
/// while the number names another file fails, and so do the watchers of an entry left for an
/// older file at that number, readiness reported by a re-arm that shows the number no longer
/// naming the entry's file, and an always-ready entry whose number no longer names its file —
/// never handed on for the new file. Readiness that waited for its handler while code ran that
/// may have closed the number is checked again as it is taken (``taken(token:fd:verify:)``).
///
/// Readiness bits are ``EvBackend/readable``, ``EvBackend/writable`` and ``EvBackend/failed``.
/// Loop thread only: that rule serialises every access, so the fields every wait reads are
/// `@exclusivity(unchecked)`: the run time's dynamic check would only repeat it on every wake-up.
final class DescriptorSet {
    /// The epoll descriptor that libev watches for readability.
    let descriptor: Int32
    /// Indexed by descriptor number, as libev's own table is (numbers are small and reused
    /// lowest first): an event finds its entry with no hashing, and changes it in place.
    @exclusivity(unchecked) private var entries = DescriptorEntryTable()
    @exclusivity(unchecked) private var entryCount = 0
    /// Watchers not parked, in every entry: a poll with none has nothing to look for.
    @exclusivity(unchecked) private var liveWatcherCount = 0
    @exclusivity(unchecked) private var lastGeneration: UInt32 = 0
    /// The always-ready descriptors (see the type's comment), ascending: each poll reports them,
    /// with no walk of the whole table.
    @exclusivity(unchecked) private var alwaysReadyDescriptors: [Int32] = []
    /// Entries left unarmed (see ``DescriptorEntry/armed``) for a watcher that is not parked: the loop
    /// re-arms them before it sleeps.
    @exclusivity(unchecked) private(set) var restingCount = 0
    /// Numbers whose entry was forgotten while the kernel may keep its own for the file (the
    /// number closed or reused first, the file open elsewhere): put back under the number, that
    /// file would take a re-arm, which finds the kernel's entry by file and number. A re-arm
    /// under these numbers is checked (``reArmedOwnEntry(_:)``) until the kernel shows no other
    /// entry under the number (``forgetLingeringIfAlone(_:)``). None for a caller that removes or
    /// invalidates its source on the loop's thread before closing (the watch ends at once).
    @exclusivity(unchecked) private var mayLinger: Set<Int32> = []
    /// Where ``collect(into:)`` has the kernel write what is ready (a plain buffer: no uniqueness
    /// check or retain per call, as an array passed to C would have).
    private let eventBuffer: UnsafeMutablePointer<epoll_event>
    /// How many events one ``collect(into:)`` takes at most.
    private static let batch = 256

    private typealias Entry = DescriptorEntry

    /// A new, empty set; `nil` when the process has no descriptor left (errno says why).
    init?() {
        descriptor = retryingEINTR { epoll_create1(Int32(EPOLL_CLOEXEC)) }
        if descriptor < 0 { return nil }
        eventBuffer = .allocate(capacity: Self.batch)
        InternalDescriptors.insert(descriptor)
    }

    deinit {
        InternalDescriptors.remove(descriptor)
        close(descriptor)
        eventBuffer.deallocate()
        entries.deallocate()
    }

    /// Whether no descriptor is watched but by parked watchers: then nothing of the set's can be
    /// handed on (a lingering kernel entry of a closed descriptor is ignored when it reports, see
    /// the type's comment; a parked watcher's report is held).
    var isEmpty: Bool { liveWatcherCount == 0 }

    /// The entry of `fd`, if it has one.
    private func entry(_ fd: Int32) -> Entry? {
        Int(fd) < entries.count ? entries[Int(fd)] : nil
    }

    /// Gives `fd` `entry` (it had none).
    private func store(_ entry: Entry, for fd: Int32) {
        if Int(fd) >= entries.count { entries.grow(toHold: Int(fd)) }
        if entries[Int(fd)] == nil { entryCount += 1 }
        entries[Int(fd)] = entry
        liveWatcherCount += entry.liveCount
    }

    /// Takes `fd`'s entry out of the table.
    private func forget(_ fd: Int32) {
        guard let entry = entries[Int(fd)] else { return }
        liveWatcherCount -= entry.liveCount
        entries[Int(fd)] = nil
        entryCount -= 1
    }

    /// Whether some watched descriptor is always ready (see the type's comment): the loop must
    /// not sleep, and ``collect(into:)`` reports it every time.
    var hasAlwaysReady: Bool { !alwaysReadyDescriptors.isEmpty }

    /// Watches `fd` for `events` on behalf of `token`, whose source was made for `file`. Returns
    /// the tokens that failed, each to be reported with ``EvBackend/failed``: `token` when `fd`
    /// cannot be watched (closed, or now naming another file), and the other watchers of `fd`
    /// when their file turns out closed behind their backs.
    func add(token: Int, fd: Int32, events: Int32, file: FileIdentity) -> [Int] {
        // A run loop's own descriptor (see InternalDescriptors): watching it would break a loop.
        if InternalDescriptors.contains(fd) { return [token] }
        if let index = entry(fd)?.watchers.firstIndex(where: { $0.token == token }) { return unpark(fd, index) }
        // One look per new watch, none per event: see report(_:to:).
        guard file.isNamed(by: fd) else { return [token] }
        var failed: [Int] = []
        if let entry = entry(fd) {
            // The same file as the new source's (the usual case) was just looked at.
            if entry.file == file || entry.file.isNamed(by: fd) {
                entries[Int(fd)]!.watchers.append((token, events))
                liveWatcherCount += 1
                if entry.alwaysReady { return [] }
                failed = install(fd, adding: false)
                // The others watch a file since closed; `fd` now names another one: watch that alone.
                if failed.isEmpty || errno != ENOENT { return failed }
                failed.removeAll { $0 == token }
            } else {
                // The others watch a file since closed, whatever kind either file is.
                failed = drop(entry, for: fd)
            }
        }
        lastGeneration &+= 1
        store(Entry(watchers: [(token, events)], generation: lastGeneration, file: file), for: fd)
        return failed + install(fd, adding: true)
    }

    /// Forgets the entry of `fd`, whose last watcher left or whose number no longer names its
    /// file; returns its watchers' tokens (to be reported failed in the second case). Its kernel
    /// entry is removed, or went with the file, or lingers one-shot under the old file (see the
    /// type's comment): the removal's error is no news.
    private func drop(_ entry: Entry, for fd: Int32) -> [Int] {
        forget(fd)
        if !entry.armed && !entry.restsParked { restingCount -= 1 }
        if entry.alwaysReady {
            alwaysReadyDescriptors.removeAll { $0 == fd }
        } else {
            var unused = epoll_event()
            if retryingEINTR({ epoll_ctl(descriptor, EPOLL_CTL_DEL, fd, &unused) }) != 0 { mayLinger.insert(fd) }
        }
        return entry.watchers.map(\.token)
    }

    /// Stops watching for `token`. Returns the other watchers of `fd` if re-arming them showed
    /// their descriptor closed. When `token` was the last watcher, errors are ignored: a closed
    /// descriptor has left the kernel set already (or lingers one-shot, see the type's comment).
    func remove(token: Int, fd: Int32) -> [Int] {
        guard let entry = entry(fd), let index = entry.watchers.firstIndex(where: { $0.token == token }) else { return [] }
        guard entry.watchers.count > 1 else {
            _ = drop(entry, for: fd)
            return []
        }
        if !entry.isParked(index) { liveWatcherCount -= 1 }
        entries[Int(fd)]!.watchers.remove(at: index)
        entries[Int(fd)]!.forgetWatcher(at: index)
        return entry.alwaysReady ? [] : install(fd, adding: false)
    }

    /// Stops handing on readiness for `token`, a watcher of `fd`, but keeps its kernel entry (see
    /// the type's comment): a mode switch makes no system call for it. Returns what
    /// ``remove(token:fd:)`` returns when the watcher cannot be parked (past the 32nd of its
    /// descriptor, or always ready) and is removed instead.
    func park(token: Int, fd: Int32) -> [Int] {
        guard let entry = entry(fd), let index = entry.watchers.firstIndex(where: { $0.token == token }) else { return [] }
        guard index < 32, !entry.alwaysReady else { return remove(token: token, fd: fd) }
        guard !entry.isParked(index) else { return [] }
        entries[Int(fd)]!.parked |= 1 << UInt32(index)
        entries[Int(fd)]!.pending &= ~(1 << UInt32(index))
        liveWatcherCount -= 1
        // A resting entry left with parked watchers alone rests for them: re-armed before the
        // next sleep it would ask the kernel for nothing, and unpark(_:_:) re-arms it anyway.
        if !entry.armed && !entry.restsParked && entries[Int(fd)]!.liveCount == 0 {
            entries[Int(fd)]!.restsParked = true
            restingCount -= 1
        }
        return []
    }

    /// Watches again for the parked watcher at `index` of `fd`'s entry: re-armed, so that the
    /// kernel reports what became ready meanwhile, and so checked: the re-arm fails if the number
    /// no longer names the entry's file. Returns the tokens that failed then.
    private func unpark(_ fd: Int32, _ index: Int) -> [Int] {
        guard entries[Int(fd)]!.isParked(index) else { return [] }
        entries[Int(fd)]!.parked &= ~(1 << UInt32(index))
        liveWatcherCount += 1
        return install(fd, adding: false)
    }

    /// The readiness of `token`, a watcher of `fd`, was taken for its handler, about to run: the
    /// entry reports for it again from now on, re-armed if it rests. Returns the tokens of
    /// watchers whose re-arm showed their descriptor closed, each to be reported failed, and
    /// whether `token`'s is not among them; `nil` when `token` watches nothing here.
    ///
    /// With `verify` (code ran since the readiness was reported, which may have closed the number
    /// and opened another file under it), the entry is re-armed or, always ready, looked at even
    /// if armed: its readiness is not handed on for a file the number no longer names.
    func taken(token: Int, fd: Int32, verify: Bool) -> (failed: [Int], stillNamed: Bool)? {
        // Read in place: a copy of the entry would retain its watchers.
        let slot = Int(fd)
        guard slot < entries.count, entries[slot] != nil else { return nil }
        let armed = entries[slot]!.armed
        guard verify || entries[slot]!.pending != 0 || !armed else { return ([], true) }
        guard let index = entries[slot]!.watchers.firstIndex(where: { $0.token == token }) else { return nil }
        if index < 32 { entries[slot]!.pending &= ~(1 << UInt32(index)) }
        if entries[slot]!.alwaysReady { return takenAlwaysReady(fd, verify: verify) }
        guard verify || !armed else { return ([], true) }
        if installed(fd, adding: false) { return ([], true) }
        let failed = dropDead(fd)
        return (failed, !failed.contains(token))
    }

    /// ``taken(token:fd:verify:)`` of an always-ready entry: looked at only with `verify`.
    @inline(never)
    private func takenAlwaysReady(_ fd: Int32, verify: Bool) -> (failed: [Int], stillNamed: Bool) {
        let entry = entries[Int(fd)]!
        guard verify, !entry.file.isNamed(by: fd) else { return ([], true) }
        return (drop(entry, for: fd), false)
    }

    /// The readiness `fd`'s entry reported waits for a handler that an outer run's iteration
    /// holds: the entry, resting, rests on as for parked watchers, so that the sleeps of runs
    /// nested meanwhile neither re-arm it nor report that readiness again, until
    /// ``taken(token:fd:verify:)`` re-arms it.
    func hold(fd: Int32) {
        guard let entry = entry(fd), !entry.armed, !entry.restsParked else { return }
        entries[Int(fd)]!.restsParked = true
        restingCount -= 1
    }

    /// Re-arms every resting entry and forgets what was reported: before a sleep, when no
    /// readiness of the running mode's sources waits for a handler, and when a source that left
    /// its modes dropped readiness that waited (it may have joined again meanwhile).
    func rearmResting() -> [Int] {
        var failed: [Int] = []
        for index in entries.indices {
            guard let entry = entries[index], entry.pending != 0 || !entry.armed && !entry.restsParked else { continue }
            entries[index]!.pending = 0
            if !entry.armed && !entry.restsParked { failed += install(Int32(index), adding: false) }
        }
        return failed
    }

    /// Reports what is ready now, without waiting, in the order the kernel reports it (the order
    /// the descriptors became ready), then the always-ready ones. One batch at most: the set's
    /// descriptor stays readable while more wait. A reported entry whose every watcher now waits
    /// for its handler rests (see ``DescriptorEntry/armed``) until one is taken; others are
    /// re-armed for the watchers still waiting. With many descriptors ready, each costs one re-arm
    /// per handling, not one per pass. `sink` gets each watcher's token and readiness, one by one:
    /// no poll allocates.
    func collect<Sink: ReadinessSink>(into sink: Sink) {
        // The one epoll_wait outside libev, and it never blocks (timeout 0): libev waits on the
        // set's descriptor, and this reads the set it reported (the type says why the set exists).
        // A failure (ENOMEM) reports nothing now; the set stays readable, so libev asks again.
        let count = Int(retryingEINTR { epoll_wait(descriptor, eventBuffer, Int32(Self.batch), 0) })
        for index in 0..<max(count, 0) { report(eventBuffer[index], to: sink) }
        if !alwaysReadyDescriptors.isEmpty { reportAlwaysReady(to: sink) }
    }

    /// Reports the always-ready descriptors, each checked first: one closed, or whose number now
    /// names another file, is reported failed once and forgotten, never reported ready again.
    private func reportAlwaysReady<Sink: ReadinessSink>(to sink: Sink) {
        var gone: [(fd: Int32, entry: Entry)] = []
        for fd in alwaysReadyDescriptors {
            guard let entry = entries[Int(fd)] else { continue }
            guard entry.file.isNamed(by: fd) else {
                gone.append((fd, entry))
                continue
            }
            for watcher in entry.watchers { sink.noteReady(watcher.token, watcher.events) }
        }
        for (fd, entry) in gone {
            for token in drop(entry, for: fd) { sink.noteReady(token, EvBackend.failed) }
        }
    }

    private func report<Sink: ReadinessSink>(_ event: epoll_event, to sink: Sink) {
        let fd = Int32(truncatingIfNeeded: event.data.u64)
        let slot = Int(fd)
        // Read in place, as every field below: a copy of the entry would retain its watchers.
        guard slot < entries.count, let generation = entries[slot]?.generation,
              generation == UInt32(truncatingIfNeeded: event.data.u64 >> 32) else {
            return  // a lingering entry of a closed descriptor: one-shot, so never again
        }
        let bits = event.events
        let broken = bits & (EPOLLERR.rawValue | EPOLLHUP.rawValue) != 0
        let readiness = (broken || bits & EPOLLIN.rawValue != 0 ? EvBackend.readable : 0)
            | (broken || bits & EPOLLOUT.rawValue != 0 ? EvBackend.writable : 0)
        let told = Entry.bits(of: entries[slot]!.watchers, readyFor: readiness)
        let parked = entries[slot]!.parked
        if told != .max && told & ~(entries[slot]!.pending | parked) == 0 {
            // Every watcher it is for waits for its handler: rest until one's readiness is taken
            // (taken(token:fd:)), instead of a re-arm and a report at every pass until then.
            guard told & parked != 0 && told & ~parked == 0 else {
                entries[slot]!.armed = false
                restingCount += 1
                return
            }
            // Held for parked watchers alone: the entry rests until one is watched again
            // (unpark), or, if others watch for something else, is re-armed for that alone.
            if entries[slot]!.liveCount == 0 {
                entries[slot]!.armed = false
                entries[slot]!.restsParked = true
            } else if !installed(fd, adding: false) {
                reportDead(fd, 0, to: sink)
            }
            return
        }
        if told != .max { entries[slot]!.pending |= told & ~parked }
        if told != .max && parked == 0 && entries[slot]!.watchers.count <= 32
            && entries[slot]!.pending == Entry.everyWatcher(entries[slot]!.watchers.count) {
            // Every watcher now waits for its handler: rest, as a report meanwhile would make it.
            // Re-armed now, the descriptor, still ready, would be reported again by every poll
            // before its turn (R38); taken(token:fd:verify:) re-arms it, and so checks its number,
            // as a handler is about to run: one epoll_ctl per handled readiness.
            entries[slot]!.armed = false
            restingCount += 1
            return handOn(fd, readiness, to: sink)
        }
        guard installed(fd, adding: false) else { return reportDead(fd, readiness, to: sink) }
        handOn(fd, readiness, to: sink)
    }

    /// Tells each watcher of `fd` that is not parked the part of `readiness` it watches for.
    private func handOn<Sink: ReadinessSink>(_ fd: Int32, _ readiness: Int32, to sink: Sink) {
        // The usual entry, one watcher: read in place, with no copy of the entry.
        if entries[Int(fd)]!.watchers.count == 1 && entries[Int(fd)]!.parked == 0 {
            let watcher = entries[Int(fd)]!.watchers[0]
            if watcher.events & readiness != 0 { sink.noteReady(watcher.token, watcher.events & readiness) }
            return
        }
        let entry = entries[Int(fd)]!
        for (index, watcher) in entry.watchers.enumerated() where watcher.events & readiness != 0 && !entry.isParked(index) {
            sink.noteReady(watcher.token, watcher.events & readiness)
        }
    }

    /// ``report(_:to:)`` of an entry whose re-arm failed: its descriptor was closed, or names
    /// another file.
    @inline(never)
    private func reportDead<Sink: ReadinessSink>(_ fd: Int32, _ readiness: Int32, to sink: Sink) {
        let entry = entries[Int(fd)]!
        let failed = dropDead(fd)
        // A re-arm succeeds only while `fd` still names the registered file (checked where another
        // file's kernel entry may linger, see mayLinger), so only a failed one needs to look:
        // readiness of a file the number no longer names is an error alone.
        let stillNamed = failed.isEmpty || entry.file.isNamed(by: fd)
        for (index, watcher) in entry.watchers.enumerated() where stillNamed && watcher.events & readiness != 0 && !entry.isParked(index) {
            sink.noteReady(watcher.token, watcher.events & readiness)
        }
        for token in failed { sink.noteReady(token, EvBackend.failed) }
    }

    /// Puts `fd`'s entry into the kernel set (`EPOLL_CTL_ADD`) or re-arms it with its current
    /// mask (`EPOLL_CTL_MOD`). Returns the tokens of a dead entry (its descriptor closed), which
    /// is dropped; `errno` then says why.
    private func install(_ fd: Int32, adding: Bool) -> [Int] {
        installed(fd, adding: adding) ? [] : dropDead(fd)
    }

    /// ``install(_:adding:)`` up to the failure: whether the entry is in the kernel set (or
    /// always ready). When not, the entry is left for ``dropDead(_:)``, `errno` saying why.
    @inline(__always)
    private func installed(_ fd: Int32, adding: Bool) -> Bool {
        let index = Int(fd)
        if !entries[index]!.armed {
            if entries[index]!.restsParked { entries[index]!.restsParked = false } else { restingCount -= 1 }
            entries[index]!.armed = true  // the entry is re-armed below, or dropped
        }
        var event = epoll_event()
        event.events = entries[index]!.kernelMask
        event.data.u64 = UInt64(UInt32(bitPattern: fd)) | UInt64(entries[index]!.generation) << 32
        let result = retryingEINTR { epoll_ctl(descriptor, adding ? EPOLL_CTL_ADD : EPOLL_CTL_MOD, fd, &event) }
        if result == 0 { return adding || mayLinger.isEmpty || !mayLinger.contains(fd) || reArmedOwnEntry(fd) }
        return adding && addRefused(fd, &event)
    }

    /// A re-arm under a number of ``mayLinger`` succeeded: whether it was this entry's kernel
    /// entry, not the one kept for another file put back under the number. That one, of a file
    /// no source here watches, is removed, and the entry is left for ``dropDead(_:)``.
    @inline(never)
    private func reArmedOwnEntry(_ fd: Int32) -> Bool {
        if entries[Int(fd)]!.file.isNamed(by: fd) {
            forgetLingeringIfAlone(fd)
            return true
        }
        var unused = epoll_event()
        _ = retryingEINTR { epoll_ctl(descriptor, EPOLL_CTL_DEL, fd, &unused) }
        errno = ENOENT
        return false
    }

    /// Takes `fd` out of ``mayLinger`` once the kernel holds no entry under it but this set's
    /// own (just re-armed, for the file the number names): no other file's entry is left to take
    /// a re-arm, and the number's re-arms need no check until another entry is forgotten there.
    /// The kernel's look walks the whole set, so it is made after a number of checks that grows
    /// with the set, and doubles while another entry stays.
    private func forgetLingeringIfAlone(_ fd: Int32) {
        let index = Int(fd)
        entries[index]!.lingerChecks &+= 1
        let checks = entries[index]!.lingerChecks
        guard checks & (checks &- 1) == 0, Int(checks) &* Self.checksPerLook >= entryCount else { return }
        if cepoll_holds_entry(descriptor, fd, 1) == 0 { mayLinger.remove(fd) }
    }

    /// Entries the kernel's look walks for the cost of one check against the file register
    /// (a few tens of nanoseconds each, against a microsecond or so).
    private static let checksPerLook = 64

    /// An `EPOLL_CTL_ADD` failed: whether the entry is in the set after all, or always ready.
    @inline(never)
    private func addRefused(_ fd: Int32, _ event: inout epoll_event) -> Bool {
        if errno == EEXIST {
            // The kernel kept an entry for this very file, added under a number since closed
            // (see the type's comment): take it over.
            if retryingEINTR({ epoll_ctl(descriptor, EPOLL_CTL_MOD, fd, &event) }) == 0 { return true }
        }
        guard errno == EPERM else { return false }
        entries[Int(fd)]!.alwaysReady = true
        alwaysReadyDescriptors.insert(fd, at: alwaysReadyDescriptors.firstIndex { $0 > fd } ?? alwaysReadyDescriptors.endIndex)
        return true
    }

    /// Drops `fd`'s entry, which ``installed(_:adding:)`` could not put in the kernel set;
    /// returns its tokens, with `errno` kept.
    @inline(never)
    private func dropDead(_ fd: Int32) -> [Int] {
        let error = errno
        let tokens = entries[Int(fd)]!.watchers.map(\.token)
        forget(fd)
        mayLinger.insert(fd)  // the number names another file now, or none: the kernel may keep this one's
        errno = error
        return tokens
    }
}
