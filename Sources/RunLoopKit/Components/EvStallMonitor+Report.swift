extension EvStallMonitor {
    /// One stall.
    public struct Report: Sendable, CustomStringConvertible {
        /// The stalled loop.
        public let loop: EvRunLoop
        /// What a person calls the loop: "main" for the main loop, else its thread's name as
        /// `ps -L` shows it (an ``EvWorkerThread``'s or ``EvLoopGroup``'s `name-0`), else
        /// "thread" and the thread's id.
        public let loopName: String
        /// The kernel's id of the loop's thread (`gettid`, the `SPID` of `ps -L`), when known.
        public let threadID: Int32?
        /// The mode of the innermost run when the stall was detected (R9).
        public let mode: EvRunLoop.Mode?
        /// ``EvRunLoop/Activity/beforeSources`` or ``EvRunLoop/Activity/afterWaiting``: the
        /// phase the loop entered and has not left.
        public let phase: EvRunLoop.Activity
        /// What the loop was running when the stall was detected: the kind of its innermost
        /// callout (a timer, a source, a block, main-queue work, an observer), or `nil` when it
        /// was in none — in the loop's own work between callouts.
        public let callout: EvRunLoop.CalloutKind?
        /// How long the loop had been in the phase when the stall was detected.
        public let duration: Duration
        /// How many whole thresholds `duration` spans (at least the configured count).
        public let thresholdsExceeded: Int
        /// The stalled thread's stack, if captured.
        public let backtrace: EvStallBacktrace?
        /// Why there is no backtrace, when there is none.
        public let backtraceUnavailableReason: String?

        /// The stall in one short line, for a log record's message: `run loop "line-w1" stalled
        /// 300 ms running a timer`.
        public var summary: String {
            "run loop \"\(loopName)\" stalled \(duration.saturatingNanoseconds / 1_000_000) ms running \(calloutPhrase)"
        }

        /// The summary, then the phase, mode, thread and thresholds, then the backtrace's frames
        /// that matter, one a line (``EvStallBacktrace/description``), or why there is none:
        /// "EvStallMonitor: run loop "line-w1" stalled 300 ms running a timer (phase
        /// afterWaiting, mode kCFRunLoopDefaultMode), thread 4242, 3 thresholds; stalled thread:".
        public var description: String {
            var text = "EvStallMonitor: \(summary) (phase \(phase), mode \(mode?.name ?? "(none)"))"
            if let threadID { text += ", thread \(threadID)" }
            text += ", \(thresholdsExceeded) thresholds"
            if let backtrace {
                text += "; stalled thread:\n\(backtrace)"
            } else if let backtraceUnavailableReason {
                text += "; no backtrace: \(backtraceUnavailableReason)"
            }
            return text
        }

        private var calloutPhrase: String {
            switch callout {
            case .observer: "an observer"
            case .mainQueue: "main-queue work"
            case let kind?: "a \(kind)"
            case nil: "no callout"
            }
        }
    }
}
