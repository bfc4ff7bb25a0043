import Foundation
import RunLoopKit

/// The operation language on RunLoopKit's `EvRunLoop`. A port source is an
/// `EvFileDescriptorSource` watching the interpreter's eventfd for `.readable`.
final class RunLoopKitInterpreter: Interpreter, @unchecked Sendable {
    private enum Item {
        case timer(EvTimer)
        case source(EvSource)
        case portSource(EvFileDescriptorSource)
        case observer(EvObserver)
    }

    /// The scenario thread's loop; set on that thread and dropped before it exits.
    private var loop: EvRunLoop!
    private var base = ContinuousClock.now
    private var items: [Int: Item] = [:]
    private var guards: Set<String> = []

    override func start() {
        loop = EvRunLoop.current
        base = .now
    }

    override func finish() {
        for case .portSource(let source) in items.values { source.invalidate() }
        loop = nil
    }

    private func rkMode(_ name: String) -> EvRunLoop.Mode {
        switch name {
        case "default": return .default
        case "common": return .common
        default: return EvRunLoop.Mode(name)
        }
    }

    override func currentModeName() -> String {
        loop.currentMode.map { traceName(ofMode: $0.name) } ?? "none"
    }

    override func exists(_ id: Int) -> Bool { items[id] != nil }

    override func isTimer(_ id: Int) -> Bool {
        if case .timer = items[id] { return true }
        return false
    }

    private func duration(_ seconds: Double) -> Duration {
        abs(seconds) >= 1e15 ? .seconds(Int64.max) : .nanoseconds(Int64((seconds * 1e9).rounded()))
    }

    override func createTimer(_ id: Int, at seconds: Double, interval: Double) {
        let timer = EvTimer(fireAt: base.advanced(by: duration(seconds)), interval: duration(interval)) { [unowned self] _ in
            self.callout(id, .timer(id, mode: self.currentModeName()))
        }
        items[id] = .timer(timer)
    }

    override func createSource(_ id: Int, order: Int) {
        let source = EvSource(
            order: order,
            schedule: { [unowned self] _, mode in self.record(.schedule(id, mode: traceName(ofMode: mode.name))) },
            cancel: { [unowned self] _, mode in self.record(.cancel(id, mode: traceName(ofMode: mode.name))) },
            perform: { [unowned self] in self.callout(id, .perform(id, mode: self.currentModeName())) })
        items[id] = .source(source)
    }

    override func createPortSource(_ id: Int, order: Int, port: Int32) {
        let source = try! EvFileDescriptorSource(fileDescriptor: port, events: .readable, order: order) { [unowned self] _ in
            self.portCallout(id)
        }
        items[id] = .portSource(source)
    }

    override func createObserver(_ id: Int, activities: UInt32, order: Int, repeats: Bool) {
        let observer = EvObserver(activities: EvRunLoop.Activity(rawValue: activities), repeats: repeats, order: order) {
            [unowned self] _, activity in
            self.callout(id, .observer(id, activity: activity.rawValue, mode: self.currentModeName()))
        }
        items[id] = .observer(observer)
    }

    override func add(_ id: Int, to mode: String) {
        switch items[id] {
        case .timer(let timer): loop.add(timer, forMode: rkMode(mode))
        case .source(let source): loop.add(source, forMode: rkMode(mode))
        case .portSource(let source): loop.add(source, forMode: rkMode(mode))
        case .observer(let observer): loop.add(observer, forMode: rkMode(mode))
        case nil: break
        }
    }

    override func remove(_ id: Int, from mode: String) {
        switch items[id] {
        case .timer(let timer): loop.remove(timer, forMode: rkMode(mode))
        case .source(let source): loop.remove(source, forMode: rkMode(mode))
        case .portSource(let source): loop.remove(source, forMode: rkMode(mode))
        case .observer(let observer): loop.remove(observer, forMode: rkMode(mode))
        case nil: break
        }
    }

    override func invalidate(_ id: Int) {
        switch items[id] {
        case .timer(let timer): timer.invalidate()
        case .source(let source): source.invalidate()
        case .portSource(let source): source.invalidate()
        case .observer(let observer): observer.invalidate()
        case nil: break
        }
    }

    override func signal(_ id: Int) {
        if case .source(let source) = items[id] { source.signal() }
    }

    override func setFireDate(_ id: Int, _ seconds: Double) {
        if case .timer(let timer) = items[id] { timer.fireDate = base.advanced(by: duration(seconds)) }
    }

    override func addCommonMode(_ mode: String) { loop.addCommonMode(rkMode(mode)) }

    override func performBlock(_ id: Int, modes: [String]) {
        loop.perform(inModes: modes.map(rkMode)) { [unowned self] in
            self.callout(id, .block(id, mode: self.currentModeName()))
        }
    }

    override func installGuard(in mode: String) {
        guard !guards.contains(mode), modes().all.contains(mode) else { return }
        let observer = EvObserver(activities: .beforeWaiting, order: Int.max) { [unowned self] _, _ in self.guardFired() }
        loop.add(observer, forMode: rkMode(mode))
        guards.insert(mode)
    }

    override func run(_ mode: String, _ timeout: RunTimeout, returnAfterSourceHandled: Bool) -> String {
        let duration: Duration = switch timeout {
        case .zero: .zero
        case .guarded, .unguarded, .untilAsleep: .seconds(30)
        case .huge: .seconds(Int64.max)
        case .short: .milliseconds(50)
        }
        return loop.run(mode: rkMode(mode), timeout: duration, returnAfterSourceHandled: returnAfterSourceHandled).description
    }

    override func runDefaultUntilDone() { loop.run() }
    override func stop() { loop.stop() }
    override func wakeUp() { loop.wakeUp() }
    override func isWaiting() -> Bool { loop.isWaiting }

    override func modes() -> (current: String?, all: [String]) {
        (loop.currentMode.map { traceName(ofMode: $0.name) }, loop.allModes.map { traceName(ofMode: $0.name) })
    }

    override func query(_ id: Int) -> TraceEvent? {
        switch items[id] {
        case .timer(let timer):
            let valid = timer.isValid
            let offset = base.duration(to: timer.fireDate)
            let seconds = Double(offset.components.seconds) + Double(offset.components.attoseconds) / 1e18
            return .timerState(id, valid: valid, fireSlot: valid && reportsFireDate(of: id) ? slot(ofSeconds: seconds) : nil)
        case .source(let source):
            return .sourceState(id, valid: source.isValid, signalled: source.isSignalled)
        case .portSource(let source):
            return .portSourceState(id, valid: source.isValid)
        case .observer(let observer):
            return .observerState(id, valid: observer.isValid)
        case nil:
            return nil
        }
    }

    override func contains(_ id: Int, in mode: String) -> Bool {
        switch items[id] {
        case .timer(let timer): loop.contains(timer, forMode: rkMode(mode))
        case .source(let source): loop.contains(source, forMode: rkMode(mode))
        case .portSource(let source): loop.contains(source, forMode: rkMode(mode))
        case .observer(let observer): loop.contains(observer, forMode: rkMode(mode))
        case nil: false
        }
    }

    override func timersAtNextFireDate(of mode: String) -> [Int]? {
        guard let date = loop.nextTimerFireDate(forMode: rkMode(mode)) else { return nil }
        return items.compactMap { id, item in
            guard case .timer(let timer) = item, timer.isValid else { return nil }
            return timer.fireDate == date ? id : nil
        }
    }

    override func crossThreadAction(_ op: Op) -> (@Sendable () -> Void)? {
        let loop: EvRunLoop = self.loop
        switch op {
        case .stop: return { loop.stop() }
        case .wakeUp: return { loop.wakeUp() }
        case .signal(let id):
            guard case .source(let source) = items[id] else { return nil }
            return {
                source.signal()
                loop.wakeUp()
            }
        case .setFireDate(let id, let date):
            guard case .timer(let timer) = items[id] else { return nil }
            let date = base.advanced(by: duration(seconds(for: date)))
            return { timer.fireDate = date }
        case .invalidate(let id):
            switch items[id] {
            case .timer(let timer): return { timer.invalidate() }
            case .source(let source): return { source.invalidate() }
            case .portSource(let source): return { source.invalidate() }
            case .observer(let observer): return { observer.invalidate() }
            case nil: return nil
            }
        default: return nil
        }
    }
}
