import CCurlEv
import RunLoopKit

/// A curl multi handle on the calling thread's run loop, through an EvLibevSource: curl's
/// socket and timer callbacks start ev_io and ev_timer watchers on its libev loop.
final class CurlMulti {
    struct Finished: Equatable {
        let tag: Int
        let result: Int32
        let bytes: Int
    }

    let source = EvLibevSource()
    private var multi: OpaquePointer?
    /// What each finished transfer's callback saw.
    private(set) var finished: [Finished] = []
    /// Runs after each finished transfer, in the done callback.
    var onFinished: (Finished) -> Void = { _ in }
    private(set) var detached = false

    init(loop: EvRunLoop = .current, mode: EvRunLoop.Mode = .default) {
        loop.add(source, forMode: mode)
        let context = Unmanaged.passUnretained(self).toOpaque()
        multi = source.withEventLoop { evLoop in
            curl_ev_new(evLoop, { context, tag, result, bytes in
                let multi = Unmanaged<CurlMulti>.fromOpaque(context!).takeUnretainedValue()
                let done = Finished(tag: tag, result: result, bytes: bytes)
                multi.finished.append(done)
                multi.onFinished(done)
            }, context)
        }
        source.onDetach { _ in
            self.detached = true
            guard let multi = self.multi else { return }
            self.multi = nil
            curl_ev_free(multi)
        }
    }

    /// Starts a GET of `url`, called like any library call, on the loop's thread.
    func get(_ url: String, tag: Int, freshConnection: Bool = false) {
        precondition(curl_ev_get(multi, url, tag, freshConnection ? 1 : 0) == 0)
    }

    var running: Int { multi.map { Int(curl_ev_running($0)) } ?? 0 }
    var watchedSockets: Int { multi.map { Int(curl_ev_watched_sockets($0)) } ?? 0 }

    func close() { source.invalidate() }
}
