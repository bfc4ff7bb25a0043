import CFConformanceSupport
import Foundation
import RunLoopKit
import Testing
import TestSupport

/// The evidence for the `KnownDifference`s that the operation language cannot show: each test
/// does the same thing to CF's objects and to RunLoopKit's and checks that both still do what
/// the entry says, so an entry that stops being true is noticed (see `KnownDifferenceTests`).
@Suite struct KnownDifferenceObjectTests {
    /// Carries objects made on a scenario thread back to the test (read after the join).
    private final class Handoff<Value>: @unchecked Sendable {
        var value: Value?
    }

    private static func cfString(_ string: String) -> CFString {
        CFStringCreateWithCString(nil, string, CFStringEncoding(kCFStringEncodingUTF8)).takeRetainedValue()
    }

    /// Runs `body` on a new thread and returns what it returns, once the thread has exited (its
    /// loop is then torn down, C5, R4).
    private static func onThreadThatExits<Value>(_ body: @escaping @Sendable () -> Value) -> Value {
        let handoff = Handoff<Value>()
        pthread_join(spawnThread { handoff.value = body() }, nil)
        return handoff.value!
    }

    /// `deadLoopKeepsNothing` (C5, C6): CF's loop, still referenced after its thread exited, keeps
    /// mode "A" and the timer in it; RunLoopKit's keeps only the default mode and lets the timer go
    /// (still valid, free to join another loop).
    @Test func deadLoopKeepsNothing() {
        let (cfLoop, cfTimer) = Self.onThreadThatExits { () -> (CFRunLoop, CFRunLoopTimer) in
            let loop = CFRunLoopGetCurrent().takeUnretainedValue()
            var context = CFRunLoopTimerContext(version: 0, info: nil, retain: nil, release: nil, copyDescription: nil)
            let timer = CFRunLoopTimerCreate(nil, CFAbsoluteTimeGetCurrent() + 100_000, 0, 0, 0, { _, _ in }, &context)
                .takeRetainedValue()
            CFRunLoopAddTimer(loop, timer, Self.cfString("A"))
            return (loop, timer)
        }
        let modes = CFRunLoopCopyAllModes(cfLoop).takeRetainedValue()
        #expect(CFArrayGetCount(modes) == 2, "CF's dead loop no longer keeps its modes")
        #expect(CFRunLoopContainsTimer(cfLoop, cfTimer, Self.cfString("A")) != 0, "CF's dead loop no longer keeps its timer")

        let timer = EvTimer(after: .seconds(100_000)) { _ in }
        let loop = Self.onThreadThatExits { () -> EvRunLoop in
            EvRunLoop.current.add(timer, forMode: EvRunLoop.Mode("A"))
            return EvRunLoop.current
        }
        #expect(loop.allModes == [.default])
        #expect(!loop.contains(timer, forMode: EvRunLoop.Mode("A")))
        #expect(timer.isValid)
    }

    /// `descriptorLeftToTheHandler` (C69, W12): CF's version-1 perform finds its eventfd already
    /// read; RunLoopKit's handler reads the count itself.
    @Test func descriptorLeftToTheHandler() {
        final class Port: @unchecked Sendable {
            let fd = cfc_port_open()
            var countSeenByCallout: UInt64?
        }
        let cf = Port()
        Self.onThreadThatExits {
            var context = CFRunLoopSourceContext1(
                version: 1, info: Unmanaged.passUnretained(cf).toOpaque(), retain: nil, release: nil, copyDescription: nil,
                equal: nil, hash: nil,
                getPort: { info in Unmanaged<Port>.fromOpaque(info!).takeUnretainedValue().fd },
                perform: { info in
                    let port = Unmanaged<Port>.fromOpaque(info!).takeUnretainedValue()
                    port.countSeenByCallout = cfc_port_take(port.fd)
                })
            let source = cfc_source1_create(0, &context).takeRetainedValue()
            CFRunLoopAddSource(CFRunLoopGetCurrent().takeUnretainedValue(), source, kCFRunLoopDefaultMode)
            cfc_port_make_ready(cf.fd)
            _ = CFRunLoopRunInMode(kCFRunLoopDefaultMode, 0, 0)
            CFRunLoopSourceInvalidate(source)
        }
        #expect(cf.countSeenByCallout == 0, "CF's version-1 source no longer reads its descriptor first")

        let runLoopKit = Port()
        Self.onThreadThatExits {
            let source = try! EvFileDescriptorSource(fileDescriptor: runLoopKit.fd, events: .readable) { _ in
                runLoopKit.countSeenByCallout = cfc_port_take(runLoopKit.fd)
            }
            EvRunLoop.current.add(source, forMode: .default)
            cfc_port_make_ready(runLoopKit.fd)
            EvRunLoop.current.run(mode: .default, timeout: .zero)
            source.invalidate()
        }
        #expect(runLoopKit.countSeenByCallout == 1)
        close(cf.fd)
        close(runLoopKit.fd)
    }

    /// `sourcesNeverMerge` (W10, C65): two CF sources with the same context are one source to a
    /// mode: the second is "contained" without being added and is never performed; two
    /// RunLoopKit sources with the same handler are two sources.
    @Test func sourcesNeverMerge() {
        final class Counter: @unchecked Sendable { var performs = 0 }
        let cf = Counter()
        let cfContainsSecond = Self.onThreadThatExits { () -> Bool in
            let loop = CFRunLoopGetCurrent().takeUnretainedValue()
            var context = CFRunLoopSourceContext(
                version: 0, info: Unmanaged.passUnretained(cf).toOpaque(), retain: nil, release: nil, copyDescription: nil,
                equal: nil, hash: nil, schedule: nil, cancel: nil,
                perform: { info in Unmanaged<Counter>.fromOpaque(info!).takeUnretainedValue().performs += 1 })
            let first = CFRunLoopSourceCreate(nil, 0, &context).takeRetainedValue()
            let second = CFRunLoopSourceCreate(nil, 0, &context).takeRetainedValue()
            CFRunLoopAddSource(loop, first, kCFRunLoopDefaultMode)
            let containsSecond = CFRunLoopContainsSource(loop, second, kCFRunLoopDefaultMode) != 0
            CFRunLoopAddSource(loop, second, kCFRunLoopDefaultMode)
            CFRunLoopSourceSignal(first)
            CFRunLoopSourceSignal(second)
            _ = CFRunLoopRunInMode(kCFRunLoopDefaultMode, 0, 0)
            CFRunLoopSourceInvalidate(first)
            CFRunLoopSourceInvalidate(second)
            return containsSecond
        }
        #expect(cfContainsSecond && cf.performs == 1, "CF no longer merges equal sources")

        let runLoopKit = Counter()
        let containsSecond = Self.onThreadThatExits { () -> Bool in
            let loop = EvRunLoop.current
            let perform: @Sendable () -> Void = { runLoopKit.performs += 1 }
            let first = EvSource(perform: perform), second = EvSource(perform: perform)
            loop.add(first, forMode: .default)
            let containsSecond = loop.contains(second, forMode: .default)
            loop.add(second, forMode: .default)
            first.signal()
            second.signal()
            loop.run(mode: .default, timeout: .zero)
            return containsSecond
        }
        #expect(!containsSecond)
        #expect(runLoopKit.performs == 2)
    }

    /// `invalidatedItemIsNoCommonItem` (C21, C64, C94): a CF source and observer made common,
    /// removed by name from the default mode (the only common mode), then invalidated, are still
    /// common items to CFRunLoopContains…; RunLoopKit's are not.
    @Test func invalidatedItemIsNoCommonItem() {
        let cf = Self.onThreadThatExits { () -> [Bool] in
            let loop = CFRunLoopGetCurrent().takeUnretainedValue()
            var sourceContext = CFRunLoopSourceContext(
                version: 0, info: nil, retain: nil, release: nil, copyDescription: nil, equal: nil, hash: nil,
                schedule: nil, cancel: nil, perform: { _ in })
            let source = CFRunLoopSourceCreate(nil, 0, &sourceContext).takeRetainedValue()
            var observerContext = CFRunLoopObserverContext(version: 0, info: nil, retain: nil, release: nil, copyDescription: nil)
            let observer = CFRunLoopObserverCreate(nil, CFOptionFlags(Activity.entry), 1, 0, { _, _, _ in }, &observerContext)
                .takeRetainedValue()
            CFRunLoopAddSource(loop, source, kCFRunLoopCommonModes)
            CFRunLoopAddObserver(loop, observer, kCFRunLoopCommonModes)
            CFRunLoopRemoveSource(loop, source, kCFRunLoopDefaultMode)
            CFRunLoopRemoveObserver(loop, observer, kCFRunLoopDefaultMode)
            CFRunLoopSourceInvalidate(source)
            CFRunLoopObserverInvalidate(observer)
            return [
                CFRunLoopContainsSource(loop, source, kCFRunLoopCommonModes) != 0,
                CFRunLoopContainsObserver(loop, observer, kCFRunLoopCommonModes) != 0,
            ]
        }
        #expect(cf == [true, true], "CF's invalidation now forgets a common item that is in no mode")

        let runLoopKit = Self.onThreadThatExits { () -> [Bool] in
            let loop = EvRunLoop.current
            let source = EvSource {}
            let observer = EvObserver(activities: .entry) { _, _ in }
            loop.add(source, forMode: .common)
            loop.add(observer, forMode: .common)
            loop.remove(source, forMode: .default)
            loop.remove(observer, forMode: .default)
            source.invalidate()
            observer.invalidate()
            return [loop.contains(source, forMode: .common), loop.contains(observer, forMode: .common)]
        }
        #expect(runLoopKit == [false, false])
    }

    /// `itemInSecondLoopStops` (C73, C88), CF's side of its edge: a timer and an observer that are
    /// common items of one loop but in none of its modes join a second loop (here one whose thread
    /// has exited: a loop still referenced takes items, C6). RunLoopKit stops there (the exit tests
    /// of TimerRuleTests and ObserverRuleTests show the stop).
    @Test func commonItemInNoModeJoinsASecondLoopInCF() {
        let secondLoop = Handoff<CFRunLoop>()
        secondLoop.value = Self.onThreadThatExits { CFRunLoopGetCurrent().takeUnretainedValue() }
        let joined = Self.onThreadThatExits { () -> [Bool] in
            let second = secondLoop.value!
            let loop = CFRunLoopGetCurrent().takeUnretainedValue()
            var timerContext = CFRunLoopTimerContext(version: 0, info: nil, retain: nil, release: nil, copyDescription: nil)
            let timer = CFRunLoopTimerCreate(nil, CFAbsoluteTimeGetCurrent() + 100_000, 0, 0, 0, { _, _ in }, &timerContext)
                .takeRetainedValue()
            var observerContext = CFRunLoopObserverContext(version: 0, info: nil, retain: nil, release: nil, copyDescription: nil)
            let observer = CFRunLoopObserverCreate(nil, CFOptionFlags(Activity.entry), 1, 0, { _, _, _ in }, &observerContext)
                .takeRetainedValue()
            CFRunLoopAddTimer(loop, timer, kCFRunLoopCommonModes)
            CFRunLoopAddObserver(loop, observer, kCFRunLoopCommonModes)
            CFRunLoopRemoveTimer(loop, timer, kCFRunLoopDefaultMode)
            CFRunLoopRemoveObserver(loop, observer, kCFRunLoopDefaultMode)
            let mode = Self.cfString("A")
            CFRunLoopAddTimer(second, timer, mode)
            CFRunLoopAddObserver(second, observer, mode)
            defer {
                CFRunLoopTimerInvalidate(timer)
                CFRunLoopObserverInvalidate(observer)
            }
            return [CFRunLoopContainsTimer(second, timer, mode) != 0, CFRunLoopContainsObserver(second, observer, mode) != 0]
        }
        #expect(joined == [true, true], "CF no longer lets a common item in no mode join a second loop")
    }
}
