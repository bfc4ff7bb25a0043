import CFConformanceSupport
import Foundation

/// The operation language on the real CFRunLoop inside Swift's libFoundation.so, through its C
/// API (declared in CCFRunLoop and CFConformanceSupport).
///
/// Each item gets its own `CalloutTarget` as its context's `info`: CF compares and hashes
/// context-only sources by `info`, so sources must not share one. A port source is a version-1
/// source (CFRunLoopSourceContext1) whose `getPort` returns the interpreter's eventfd.
final class CFInterpreter: Interpreter, @unchecked Sendable {
    private enum Item {
        case timer(CFRunLoopTimer)
        case source(CFRunLoopSource)
        case portSource(CFRunLoopSource)
        case observer(CFRunLoopObserver)
    }

    /// What an item's `info` points to: the interpreter, the item's id and (port sources) its
    /// eventfd, which CF asks for on any thread that adds or removes the source. Kept alive by
    /// `targets` until the interpreter is released, after the thread and its loop are gone (CF
    /// calls no item back once its loop was torn down: releasing an item only invalidates it).
    private final class CalloutTarget {
        unowned let interpreter: CFInterpreter
        let id: Int
        let port: Int32
        init(_ interpreter: CFInterpreter, _ id: Int, port: Int32) {
            self.interpreter = interpreter
            self.id = id
            self.port = port
        }
        var info: UnsafeMutableRawPointer { Unmanaged.passUnretained(self).toOpaque() }
        static func from(_ info: UnsafeMutableRawPointer?) -> CalloutTarget {
            Unmanaged<CalloutTarget>.fromOpaque(info!).takeUnretainedValue()
        }
    }

    /// The scenario thread's loop; set on that thread and dropped before it exits.
    private var loop: CFRunLoop!
    private var base: CFAbsoluteTime = 0
    private var items: [Int: Item] = [:]
    private var targets: [CalloutTarget] = []
    private var modeNames: [String: CFString] = [:]
    private var guards: [String: CFRunLoopObserver] = [:]

    override func start() {
        loop = CFRunLoopGetCurrent().takeUnretainedValue()
        base = CFAbsoluteTimeGetCurrent()
    }

    override func finish() {
        for case .portSource(let source) in items.values { CFRunLoopSourceInvalidate(source) }
        loop = nil
    }

    private func target(_ id: Int, port: Int32 = -1) -> CalloutTarget {
        let target = CalloutTarget(self, id, port: port)
        targets.append(target)
        return target
    }

    /// The CF name of a trace mode name.
    private func cfMode(_ name: String) -> CFString {
        switch name {
        case "default": return kCFRunLoopDefaultMode
        case "common": return kCFRunLoopCommonModes
        default:
            if let known = modeNames[name] { return known }
            let created = CFStringCreateWithCString(nil, name, CFStringEncoding(kCFStringEncodingUTF8)).takeRetainedValue()
            modeNames[name] = created
            return created
        }
    }

    private static func string(_ string: CFString?) -> String? {
        guard let string else { return nil }
        var buffer = [CChar](repeating: 0, count: 256)
        return traceName(ofMode: String(cString: cfc_copy_string(string, &buffer, 256)))
    }

    override func currentModeName() -> String {
        Self.string(CFRunLoopCopyCurrentMode(loop)?.takeRetainedValue()) ?? "none"
    }

    override func exists(_ id: Int) -> Bool { items[id] != nil }

    override func isTimer(_ id: Int) -> Bool {
        if case .timer = items[id] { return true }
        return false
    }

    override func createTimer(_ id: Int, at seconds: Double, interval: Double) {
        var context = CFRunLoopTimerContext(version: 0, info: target(id).info, retain: nil, release: nil, copyDescription: nil)
        let timer = CFRunLoopTimerCreate(nil, base + seconds, interval, 0, 0, { _, info in
            let target = CalloutTarget.from(info)
            target.interpreter.callout(target.id, .timer(target.id, mode: target.interpreter.currentModeName()))
        }, &context).takeRetainedValue()
        items[id] = .timer(timer)
    }

    override func createSource(_ id: Int, order: Int) {
        var context = CFRunLoopSourceContext(
            version: 0, info: target(id).info, retain: nil, release: nil, copyDescription: nil, equal: nil, hash: nil,
            schedule: { info, _, mode in
                let target = CalloutTarget.from(info)
                target.interpreter.record(.schedule(target.id, mode: CFInterpreter.string(mode) ?? "none"))
            },
            cancel: { info, _, mode in
                let target = CalloutTarget.from(info)
                target.interpreter.record(.cancel(target.id, mode: CFInterpreter.string(mode) ?? "none"))
            },
            perform: { info in
                let target = CalloutTarget.from(info)
                target.interpreter.callout(target.id, .perform(target.id, mode: target.interpreter.currentModeName()))
            })
        items[id] = .source(CFRunLoopSourceCreate(nil, order, &context).takeRetainedValue())
    }

    override func createPortSource(_ id: Int, order: Int, port: Int32) {
        var context = CFRunLoopSourceContext1(
            version: 1, info: target(id, port: port).info, retain: nil, release: nil, copyDescription: nil, equal: nil,
            hash: nil,
            getPort: { info in CalloutTarget.from(info).port },
            perform: { info in
                let target = CalloutTarget.from(info)
                target.interpreter.portCallout(target.id)
            })
        items[id] = .portSource(cfc_source1_create(order, &context).takeRetainedValue())
    }

    override func createObserver(_ id: Int, activities: UInt32, order: Int, repeats: Bool) {
        var context = CFRunLoopObserverContext(version: 0, info: target(id).info, retain: nil, release: nil, copyDescription: nil)
        let observer = CFRunLoopObserverCreate(nil, CFOptionFlags(activities), repeats ? 1 : 0, order, { _, activity, info in
            let target = CalloutTarget.from(info)
            let event = TraceEvent.observer(target.id, activity: UInt32(activity), mode: target.interpreter.currentModeName())
            target.interpreter.callout(target.id, event)
        }, &context).takeRetainedValue()
        items[id] = .observer(observer)
    }

    override func add(_ id: Int, to mode: String) {
        switch items[id] {
        case .timer(let timer): CFRunLoopAddTimer(loop, timer, cfMode(mode))
        case .source(let source), .portSource(let source): CFRunLoopAddSource(loop, source, cfMode(mode))
        case .observer(let observer): CFRunLoopAddObserver(loop, observer, cfMode(mode))
        case nil: break
        }
    }

    override func remove(_ id: Int, from mode: String) {
        switch items[id] {
        case .timer(let timer): CFRunLoopRemoveTimer(loop, timer, cfMode(mode))
        case .source(let source), .portSource(let source): CFRunLoopRemoveSource(loop, source, cfMode(mode))
        case .observer(let observer): CFRunLoopRemoveObserver(loop, observer, cfMode(mode))
        case nil: break
        }
    }

    override func invalidate(_ id: Int) {
        switch items[id] {
        case .timer(let timer): CFRunLoopTimerInvalidate(timer)
        case .source(let source), .portSource(let source): CFRunLoopSourceInvalidate(source)
        case .observer(let observer): CFRunLoopObserverInvalidate(observer)
        case nil: break
        }
    }

    override func signal(_ id: Int) {
        if case .source(let source) = items[id] { CFRunLoopSourceSignal(source) }
    }

    override func setFireDate(_ id: Int, _ seconds: Double) {
        if case .timer(let timer) = items[id] { CFRunLoopTimerSetNextFireDate(timer, base + seconds) }
    }

    override func addCommonMode(_ mode: String) { CFRunLoopAddCommonMode(loop, cfMode(mode)) }

    override func performBlock(_ id: Int, modes: [String]) {
        let block: @convention(block) () -> Void = { [unowned self] in
            self.callout(id, .block(id, mode: self.currentModeName()))
        }
        if modes.count == 1 {
            CFRunLoopPerformBlock(loop, cfMode(modes[0]), block)
        } else {
            var values: [UnsafeRawPointer?] = modes.map { UnsafeRawPointer(Unmanaged.passUnretained(cfMode($0)).toOpaque()) }
            let array = CFArrayCreate(nil, &values, values.count, [kCFTypeArrayCallBacks]).takeRetainedValue()
            CFRunLoopPerformBlock(loop, array, block)
        }
    }

    override func installGuard(in mode: String) {
        guard guards[mode] == nil, modes().all.contains(mode) else { return }
        var context = CFRunLoopObserverContext(
            version: 0, info: Unmanaged.passUnretained(self).toOpaque(), retain: nil, release: nil, copyDescription: nil)
        let observer = CFRunLoopObserverCreate(nil, CFOptionFlags(Activity.beforeWaiting), 1, Int.max, { _, _, info in
            Unmanaged<CFInterpreter>.fromOpaque(info!).takeUnretainedValue().guardFired()
        }, &context).takeRetainedValue()
        CFRunLoopAddObserver(loop, observer, cfMode(mode))
        guards[mode] = observer
    }

    override func run(_ mode: String, _ timeout: RunTimeout, returnAfterSourceHandled: Bool) -> String {
        let seconds: CFTimeInterval = switch timeout {
        case .zero: 0
        case .guarded, .unguarded, .untilAsleep: 30
        case .huge: 1e300
        case .short: 0.05
        }
        let result = CFRunLoopRunInMode(cfMode(mode), seconds, returnAfterSourceHandled ? 1 : 0)
        switch Int(result) {
        case kCFRunLoopRunFinished: return "finished"
        case kCFRunLoopRunStopped: return "stopped"
        case kCFRunLoopRunTimedOut: return "timedOut"
        case kCFRunLoopRunHandledSource: return "handledSource"
        default: return "unknown \(result)"
        }
    }

    override func runDefaultUntilDone() { CFRunLoopRun() }
    override func stop() { CFRunLoopStop(loop) }
    override func wakeUp() { CFRunLoopWakeUp(loop) }
    override func isWaiting() -> Bool { CFRunLoopIsWaiting(loop) != 0 }

    override func modes() -> (current: String?, all: [String]) {
        let current = Self.string(CFRunLoopCopyCurrentMode(loop)?.takeRetainedValue())
        let array = CFRunLoopCopyAllModes(loop).takeRetainedValue()
        let all = (0..<CFArrayGetCount(array)).compactMap { index -> String? in
            let name = Unmanaged<CFString>.fromOpaque(CFArrayGetValueAtIndex(array, index)).takeUnretainedValue()
            return Self.string(name)
        }
        return (current, all)
    }

    override func query(_ id: Int) -> TraceEvent? {
        switch items[id] {
        case .timer(let timer):
            let valid = CFRunLoopTimerIsValid(timer) != 0
            let slot = valid && reportsFireDate(of: id) ? slot(ofSeconds: CFRunLoopTimerGetNextFireDate(timer) - base) : nil
            return .timerState(id, valid: valid, fireSlot: slot)
        case .source(let source):
            return .sourceState(id, valid: CFRunLoopSourceIsValid(source) != 0, signalled: CFRunLoopSourceIsSignalled(source) != 0)
        case .portSource(let source):
            return .portSourceState(id, valid: CFRunLoopSourceIsValid(source) != 0)
        case .observer(let observer):
            return .observerState(id, valid: CFRunLoopObserverIsValid(observer) != 0)
        case nil:
            return nil
        }
    }

    override func contains(_ id: Int, in mode: String) -> Bool {
        switch items[id] {
        case .timer(let timer): CFRunLoopContainsTimer(loop, timer, cfMode(mode)) != 0
        case .source(let source), .portSource(let source): CFRunLoopContainsSource(loop, source, cfMode(mode)) != 0
        case .observer(let observer): CFRunLoopContainsObserver(loop, observer, cfMode(mode)) != 0
        case nil: false
        }
    }

    override func timersAtNextFireDate(of mode: String) -> [Int]? {
        // CF's 0 means none; the same read as CFRunLoopTimerGetNextFireDate, so equal dates compare exactly.
        let date = CFRunLoopGetNextTimerFireDate(loop, cfMode(mode))
        guard date != 0 else { return nil }
        return items.compactMap { id, item in
            guard case .timer(let timer) = item, CFRunLoopTimerIsValid(timer) != 0 else { return nil }
            return CFRunLoopTimerGetNextFireDate(timer) == date ? id : nil
        }
    }

    override func crossThreadAction(_ op: Op) -> (@Sendable () -> Void)? {
        /// CF objects are thread-safe for these calls; the box only carries them across.
        final class Handle<T>: @unchecked Sendable {
            let value: T
            init(_ value: T) { self.value = value }
        }
        let loop = Handle(self.loop!)
        switch op {
        case .stop: return { CFRunLoopStop(loop.value) }
        case .wakeUp: return { CFRunLoopWakeUp(loop.value) }
        case .signal(let id):
            guard case .source(let source) = items[id] else { return nil }
            let handle = Handle(source)
            return {
                CFRunLoopSourceSignal(handle.value)
                CFRunLoopWakeUp(loop.value)
            }
        case .setFireDate(let id, let date):
            guard case .timer(let timer) = items[id] else { return nil }
            let handle = Handle(timer), date = base + seconds(for: date)
            return { CFRunLoopTimerSetNextFireDate(handle.value, date) }
        case .invalidate(let id):
            switch items[id] {
            case .timer(let timer):
                let handle = Handle(timer)
                return { CFRunLoopTimerInvalidate(handle.value) }
            case .source(let source), .portSource(let source):
                let handle = Handle(source)
                return { CFRunLoopSourceInvalidate(handle.value) }
            case .observer(let observer):
                let handle = Handle(observer)
                return { CFRunLoopObserverInvalidate(handle.value) }
            case nil: return nil
            }
        default: return nil
        }
    }
}
