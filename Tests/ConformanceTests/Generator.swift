import TestSupport

/// Random programs for the differential test.
///
/// A program lives in one of three worlds, because CF handles only one wake-up reason per
/// iteration (`KnownDifference.oneWakeReasonPerIteration`): in the timer world, timers come due
/// but nothing ever wakes the loop (no stop, every run polls); in the stop world, callouts stop
/// runs and runs sleep (guarded), but no timer is ever due; in the ports world, port (version-1)
/// sources are made ready, but no timer is ever due and nothing else wakes the loop (every run
/// polls). Every other known difference that `KnownDifference.risked(by:)` checks is avoided by
/// construction, and the shrinker keeps to them.
///
/// What the generator makes for the rules where RunLoopKit and CF part most easily: timers that
/// move their own fire date inside their callout, to past and future dates (C80, timer world);
/// `wakeUp` and `stop` while the loop is idle and from any callout, pre-wait or post-wait
/// (C51–C53, C56), fire-date moves, wake-ups, stops, signals and invalidations from another
/// thread (`fromOtherThread`, C75), all in the stop world, where some runs sleep until a helper
/// sees the thread asleep (`untilAsleep`), so that a wake-up kept where CF drops it shows as one
/// more pass; `addCommonMode` of modes that hold nothing yet, followed by `queryModes` (C10);
/// contains and next-timer-fire-date queries anywhere (`QueryGenerator`, C21, C84); and, in some
/// timer-world seeds, a repeating timer quick enough to be due at every timers step (C78).
struct ProgramGenerator {
    enum World: Sendable { case timers, stops, ports }

    private var rng: SplitMix64
    private var queries: QueryGenerator
    let world: World
    /// A quarter of the seeds in each world: at most one version-0 source and one block, whose
    /// callouts may then run the loop (with one of each, neither `lostHandledSource` nor
    /// `blockListDetached` can arise).
    let nestsInSourcesAndBlocks: Bool
    /// A quarter of the seeds in the timer world: the first timer repeats every `quickInterval`
    /// from a past date, so it is due again at every later timers step and fires once in each.
    /// No other timer is ever due there (`KnownDifference.pastFireDatesClampedToNow`).
    let hasQuickTimer: Bool
    private var quickTimer: Int?
    /// Short enough to have passed before any later timers step, whatever ran in between.
    static let quickInterval = 1e-7
    /// False for the merged-poll programs (``init(mergingPollsWithSeed:)``): observers watch Entry
    /// and Exit only, and no run is guarded (its guard observes BeforeWaiting), so that no observer
    /// of the steps between a handled source's poll and the next sleep keeps them apart (R20.6).
    let observesPasses: Bool
    private var nextID = 1
    private var timers: [Int] = []
    private var sources: [Int] = []
    private var ports: [Int] = []
    /// Every mode each port source was ever put in (`"common"` for any common mode), and the
    /// ports made ready: two of those never share a mode
    /// (`KnownDifference.readyVersion1SourcesUnwatchedInNoFixedOrder`).
    private var portModes: [Int: Set<String>] = [:]
    private var readiedPorts: Set<Int> = []
    private var observers: [Int] = []
    /// Observers of AfterWaiting: their scripts remove no port
    /// (`KnownDifference.portTakenOutAfterTheWaitKeepsItsReadiness`).
    private var afterWaitingObservers: Set<Int> = []
    private var blocks: [Int] = []
    /// Every mode each timer was ever put in: a timer that moves itself stays in one mode
    /// (`KnownDifference.timerRedatedWhileFiringNotArmedInOtherModes`).
    private var timerModes: [Int: Set<String>] = [:]
    private var observerOrders: Set<Int> = []
    private var scheduledCommonBlock = false
    private var queriedModes = false

    /// Modes, weighted so that most items land where runs happen.
    private static let itemModes = ["default", "default", "default", "A", "A", "A", "B", "common", "common", "common"]
    private static let runModes = ["default", "default", "default", "A", "A", "B"]

    /// Even seeds are in the timer world and odd ones in the stop world, except every other odd
    /// seed (3, 7, 11…), which is in the ports world.
    init(seed: UInt64) {
        rng = SplitMix64(seed: seed)
        queries = QueryGenerator(seed: seed)
        world = seed % 2 == 0 ? .timers : seed % 4 == 1 ? .stops : .ports
        nestsInSourcesAndBlocks = seed / 4 % 4 == 0
        hasQuickTimer = world == .timers && seed / 16 % 4 == 1
        observesPasses = true
    }

    /// Programs whose runs may merge the poll after a handled source into the next sleep (R20.6):
    /// stop-world programs with no observer of the steps between and runs that sleep until a
    /// helper sees the thread asleep, where what a source's callout leaves behind (a signal, a
    /// block, a stop or wake-up, a cross-thread call, a nested run's traces) must still be found
    /// before that sleep. (Sleeping runs in the ports world would risk
    /// `KnownDifference.oneWakeReasonPerIteration`.)
    init(mergingPollsWithSeed seed: UInt64) {
        rng = SplitMix64(seed: seed)
        queries = QueryGenerator(seed: seed)
        world = .stops
        nestsInSourcesAndBlocks = seed % 4 == 0
        hasQuickTimer = false
        observesPasses = false
    }

    mutating func program() -> [Op] {
        let length = Int.random(in: 8...30, using: &rng)
        var ops: [Op] = []
        for _ in 0..<length { ops.append(op(depth: 0, owner: nil)) }
        // End with one more run, so that late additions are exercised too.
        ops.append(.run(Self.runModes.randomElement(using: &rng)!, runTimeout(), returnAfterSourceHandled: false))
        return ops
    }

    private mutating func chance(_ percent: Int) -> Bool { Int.random(in: 0..<100, using: &rng) < percent }

    private mutating func newID() -> Int {
        defer { nextID += 1 }
        return nextID
    }

    private mutating func modes() -> [String] {
        let first = Self.itemModes.randomElement(using: &rng)!
        if chance(20), let second = Self.itemModes.filter({ $0 != first }).randomElement(using: &rng) {
            return [first, second]
        }
        return [first]
    }

    /// A date for timer `id`: past (due) or a day ahead; with a quick timer, only that one is due.
    private mutating func fireDate(for id: Int) -> FireDate {
        let date: FireDate = world == .timers && chance(70) ? .past : .future
        return hasQuickTimer && id != quickTimer ? .future : date
    }

    private mutating func runTimeout() -> RunTimeout {
        if !observesPasses { return chance(65) ? .untilAsleep : .zero }
        guard world == .stops else { return .zero }
        switch Int.random(in: 0..<100, using: &rng) {
        case 0..<40: return .guarded
        case 40..<65: return .untilAsleep
        default: return .zero
        }
    }

    /// What another thread does to the loop (stop world): a stop, a wake-up, a fire-date move
    /// (C75), a signal with its wake-up, or an invalidation, made while the loop's thread waits
    /// for it. `owner` is the item whose callout asks for it.
    private mutating func crossThreadOp(owner: ItemKind?) -> Op {
        let timer = timers.randomElement(using: &rng)
        let source = sources.randomElement(using: &rng)
        let item = anyItem()
        switch Int.random(in: 0..<5, using: &rng) {
        case 0: return .fromOtherThread([.stop])
        case 1 where timer != nil: return .fromOtherThread([.setFireDate(timer!, .future)])
        case 2 where source != nil: return .fromOtherThread([.signal(source!)])
        // lostHandledSource: a source's callout never has another source invalidated.
        case 3 where item != nil && !(owner == .source && sources.contains(item!))
            && queries.mayInvalidate(item!, isTimer: timers.contains(item!)):
            return .fromOtherThread([.invalidate(item!)])
        default: return .fromOtherThread([.wakeUp])
        }
    }

    private mutating func activities() -> UInt32 {
        if !observesPasses { return [Activity.entry, Activity.exit, Activity.entry | Activity.exit].randomElement(using: &rng)! }
        var mask: UInt32 = 0
        while mask == 0 {
            for (bit, _) in Activity.names where chance(50) { mask |= bit }
        }
        return mask
    }

    private mutating func uniqueObserverOrder() -> Int {
        var order = Int.random(in: -20...20, using: &rng)
        while observerOrders.contains(order) { order += 1 }
        observerOrders.insert(order)
        return order
    }

    private mutating func anyItem() -> Int? {
        (timers + sources + ports + observers).randomElement(using: &rng)
    }

    /// Whether port `id` may be made ready, or (if it was) put in `mode` too.
    private func portMayBeReady(_ id: Int, alsoIn mode: String? = nil) -> Bool {
        let modes = (portModes[id] ?? []).union(mode.map { [$0] } ?? [])
        return !readiedPorts.contains { $0 != id && KnownDifference.mayShareAMode(modes, portModes[$0] ?? []) }
    }

    /// A port-source operation (ports world only): a new port source, or one made ready.
    private mutating func portOp(depth: Int) -> Op? {
        if ports.isEmpty || chance(35) {
            let id = newID(), modes = modes()
            ports.append(id)
            portModes[id] = Set(modes)
                        return .addPortSource(id, order: Int.random(in: 0...3, using: &rng), modes: modes)
        }
        guard let id = ports.randomElement(using: &rng), portMayBeReady(id) else { return nil }
        readiedPorts.insert(id)
        return .makeReady(id)
    }

    /// Timers whose date a script sets, and timers whose own script runs the loop: never both;
    /// timers whose own script moves them stay in one mode
    /// (`timerRedatedWhileFiringNotArmedInOtherModes`).
    private var redatedByScripts: Set<Int> = []
    private var redatedByOwnScript: Set<Int> = []
    private var runFromOwnScript: Set<Int> = []

    /// One operation; `owner` is the item or block whose callout runs it, `depth` the script level.
    private mutating func op(depth: Int, owner: ItemKind?, ownerID: Int? = nil) -> Op {
        let items = timers + sources + ports + observers
        if let query = queries.query(items: items, timers: timers, inTimersScript: owner == .timer) { return query }
        while true {
            // Drawn in the ports world only, so the other worlds' programs stay as they were.
            if world == .ports, chance(25) {
                guard let op = portOp(depth: depth) else { continue }
                return op
            }
            switch Int.random(in: 0..<100, using: &rng) {
            case 0..<8:
                let id = newID(), modes = modes()
                timers.append(id)
                timerModes[id] = Set(modes)
                let date = fireDate(for: id), interval: Double = chance(40) ? 1_000_000 : 0
                if hasQuickTimer && quickTimer == nil {
                    quickTimer = id
                    return .addTimer(id, .past, interval: Self.quickInterval, modes: modes)
                }
                return .addTimer(id, date, interval: interval, modes: modes)
            case 8..<16:
                if nestsInSourcesAndBlocks && !sources.isEmpty { continue }
                let id = newID(), modes = modes()
                sources.append(id)
                return .addSource(id, order: Int.random(in: 0...3, using: &rng), modes: modes)
            case 16..<25:
                let id = newID(), modes = modes()
                observers.append(id)
                let activities = activities(), order = uniqueObserverOrder(), repeats = chance(80)
                if activities & Activity.afterWaiting != 0 { afterWaitingObservers.insert(id) }
                // A one-shot observer invalidates itself after its callout (invalidatedItemIsNoCommonItem).
                if !repeats { _ = queries.mayInvalidate(id, isTimer: false) }
                return .addObserver(id, activities: activities, order: order, repeats: repeats, modes: modes)
            case 25..<29:
                guard let id = anyItem() else { continue }
                let mode = Self.itemModes.randomElement(using: &rng)!
                if ports.contains(id) {
                    guard !readiedPorts.contains(id) || portMayBeReady(id, alsoIn: mode) else { continue }
                    portModes[id, default: []].insert(mode)
                }
                if timers.contains(id) {
                    if redatedByOwnScript.contains(id), !(timerModes[id] ?? []).union([mode]).isSingleMode { continue }
                    timerModes[id, default: []].insert(mode)
                }
                return .add(id, mode: mode)
            case 29..<34:
                guard let id = anyItem() else { continue }
                if world == .timers, depth > 0, timers.contains(id) { continue }  // timerRemovedFromRunningModeStillFires
                if let ownerID, afterWaitingObservers.contains(ownerID), ports.contains(id) { continue }  // portTakenOutAfterTheWaitKeepsItsReadiness
                return .remove(id, mode: Self.itemModes.randomElement(using: &rng)!)
            case 34..<37:
                guard let id = anyItem() else { continue }
                if owner == .source, sources.contains(id) { continue }  // lostHandledSource
                guard queries.mayInvalidate(id, isTimer: timers.contains(id)) else { continue }
                return .invalidate(id)
            case 37..<50:
                guard let id = sources.randomElement(using: &rng) else { continue }
                return .signal(id)
            case 50..<53:
                guard let id = timers.randomElement(using: &rng) else { continue }
                if world == .timers, depth > 0 {
                    if runFromOwnScript.contains(id) { continue }
                    if id == ownerID {
                        // C80: a timer moving itself, to the past or the future, in one mode only.
                        guard (timerModes[id] ?? []).isSingleMode else { continue }
                        redatedByOwnScript.insert(id)
                        let date: FireDate = chance(50) ? .past : .future
                        return .setFireDate(id, hasQuickTimer && id != quickTimer ? .future : date)
                    }
                    redatedByScripts.insert(id)
                }
                return .setFireDate(id, fireDate(for: id))
            case 53..<56:
                // C10: a mode may be made common before anything is in it; queryModes shows it.
                return .addCommonMode(["A", "B"].randomElement(using: &rng)!)
            case 56..<63:
                if nestsInSourcesAndBlocks && !blocks.isEmpty { continue }
                let id = newID()
                blocks.append(id)
                var modes = chance(25) ? ["common"] : self.modes()
                if queriedModes { modes = modes.map { $0 == "common" ? "default" : $0 } }  // commonBlockCreatesMode
                if modes.contains("common") { scheduledCommonBlock = true }
                return .performBlock(id, modes: modes)
            case 63..<77:
                // Nested runs from sources and blocks only when there is one of each
                // (lostHandledSource, blockListDetached).
                if let owner, depth >= 2 || !nestsInSourcesAndBlocks && (owner == .source || owner == .block) { continue }
                if owner == .timer, let ownerID, world == .timers {
                    if redatedByScripts.contains(ownerID) || redatedByOwnScript.contains(ownerID) { continue }
                    runFromOwnScript.insert(ownerID)
                }
                return .run(Self.runModes.randomElement(using: &rng)!, runTimeout(), returnAfterSourceHandled: chance(30))
            case 77..<91:
                guard depth < 2 else { continue }
                let candidates = timers + sources + ports + observers + blocks
                guard var id = candidates.randomElement(using: &rng) else { continue }
                // Merged-poll programs: mostly a source's callout, the one that precedes the poll.
                if !observesPasses, chance(50), let source = sources.randomElement(using: &rng) { id = source }
                let kind: ItemKind = timers.contains(id) ? .timer : sources.contains(id) ? .source
                    : ports.contains(id) ? .portSource : observers.contains(id) ? .observer : .block
                let count = Int.random(in: 1...3, using: &rng)
                var script: [Op] = []
                for _ in 0..<count { script.append(op(depth: depth + 1, owner: kind, ownerID: id)) }
                return .onCallout(id, script)
            case 91..<96:
                // C51–C53, C56: from any callout (pre-wait or post-wait), and at the top level
                // while the loop is idle; or from another thread (C75).
                guard world == .stops else { continue }
                if chance(30) { return crossThreadOp(owner: owner) }
                if owner == nil { return chance(30) ? .stop : .wakeUp }
                return chance(75) ? .stop : .wakeUp
            case 96..<97:
                guard !scheduledCommonBlock else { continue }  // commonBlockCreatesMode
                queriedModes = true
                return .queryModes
            default:
                guard let id = anyItem() else { continue }
                return .query(id)
            }
        }
    }
}

/// The kinds of things a script can be attached to.
enum ItemKind: Sendable { case timer, source, portSource, observer, block }

extension Set<String> {
    /// Whether an item ever put in these modes was in at most one mode at a time (`"common"`
    /// may mean several).
    var isSingleMode: Bool { count <= 1 && !contains("common") }
}
