/// The long help texts: what each scenario does and what each figure means. Indented lines
/// stay under 78 columns so ArgumentParser does not wrap them.
enum HelpText {
    static let overview = """
        Backends, measured in the same process and the same run, interleaved so that \
        drift of this shared machine hits all alike (wake-ups sample by sample, the \
        other scenarios in rounds whose order rotates):
          runloopkit     RunLoopKit's EvRunLoop, the library under test
          libev          raw libev through CLibev: the floor of this design
          libev-uring    libev with EVBACKEND_IOURING, if the kernel allows (timers)
          cf             the real CFRunLoop in Swift's Foundation on Linux
          nio            peer: SwiftNIO, a one-thread MultiThreadedEventLoopGroup
          dispatch       peer: a libdispatch serial queue
          default-actor  not a run loop: a plain Swift actor (actorhop's baseline)

        With no arguments, runs the standard set (every scenario) in a few minutes and \
        prints one table: a row per figure, a column per backend, then the ratios \
        RunLoopKit/libev, RunLoopKit/CF and RunLoopKit/default actor from the same \
        run, then the project's goal for RunLoopKit and its status in this run: "met", \
        or the gap, what was measured against what is wanted (for example "gap \
        1.24× vs ≤ 1.15× libev", "gap 36.5 µs vs ≤ 20 µs"); --json has them as met and \
        gap. "—" marks a backend with no equivalent or a value not measured. \
        Times come from clock_gettime(CLOCK_MONOTONIC), read in every thread involved; \
        latencies are percentiles of an HDR histogram (3 significant digits).

        While it runs, standard error shows the scenario and its step out of how \
        many, the time spent and an estimate of the time left: one line redrawn in \
        place on a terminal, a plain line per step anywhere else (CI logs). \
        Standard output holds only the table.

        Examples:
          runloop-bench                      standard run, one table
          runloop-bench wakeup timers        only these scenarios
          runloop-bench --json r.json --markdown perf.md
          runloop-bench gate                 CI gate; exits 1 on failure
          runloop-bench run --help           all options

        \(scenarios)
        """

    static let scenarios = """
        SCENARIOS AND FIGURES

        wakeup: one-way cross-thread wake-up latency. Each backend's loop sleeps on its \
        own thread; the driver thread reads the clock, then signals a source and wakes \
        the loop (CF: CFRunLoopSourceSignal + CFRunLoopWakeUp; libev: ev_async_send; \
        RunLoopKit: signal() + wakeUp()); the source's callout reads the clock. Before \
        each trigger the driver waits for the previous callout and pauses 200 µs, so \
        the loop is really asleep. SwiftNIO (EventLoop.execute) and libdispatch \
        (a serial queue's async) are measured beside them. Three thread layouts:
          unpinned    as a new user runs it; the scheduler places the threads. The \
                      library's own cost shows here; the gate uses these figures.
          same-CPU    loop and driver pinned to one CPU: each wake-up is a context \
                      switch on that CPU, the cheapest a wake-up can be.
          cross-CPU   loop on one CPU, driver on another: every backend pays the \
                      machine's cross-CPU wake-up (tens of µs on a VM), which can \
                      hide the library's cost. libdispatch is measured unpinned \
                      only (its worker threads would keep a pinned CPU for good).
          wakeup.p50 … wakeup.max   trigger → callout, µs, unpinned (p50 p90 p99 p99.9 max)
          wakeup.samecpu.*, wakeup.crosscpu.*   the same, pinned

        perform: cross-thread perform throughput. Another thread posts \
        --perform-items blocks, each followed by a wake-up (CF: CFRunLoopPerformBlock \
        + CFRunLoopWakeUp; RunLoopKit: perform + wakeUp; libev: a mutex-protected \
        queue + ev_async_send, the floor).
          perform.rate   M blocks/s, first post → last block run (median of rounds)

        timers: timer lateness = callout time − scheduled fire time. A 1 ms \
        repeating timer (a missed slot is measured against the slot the backend \
        actually fires for), and a 100 µs timer re-armed from its own callout. libev \
        uses a plain ev_timer; with epoll it rounds every wait up to a whole \
        millisecond, and libev-uring shows libev without that. Peer nio: SwiftNIO's \
        EventLoop.scheduleTask(deadline:) on a one-thread MultiThreadedEventLoopGroup \
        (its deadlines are CLOCK_MONOTONIC, the clock lateness is read with); NIO \
        has no repeating timer on a grid (scheduleRepeatedTask drifts by the run \
        time), so its repeating timer re-schedules from each callout for the grid's \
        next slot, and its one-shot is re-scheduled from its callout like the others.
          timer.repeat.p50 … .max    1 ms repeating timer lateness, µs
          timer.oneshot.p50 … .max   100 µs re-armed timer lateness, µs
        RunLoopKit is measured in its default timer precision (runloopkit: the \
        kernel wakes the loop at the deadline) and with timerPrecision = .precise \
        (runloopkit-precise: the deadline armed early and waited out awake).

        timercpu: CPU time per timer fire, beside lateness. Repeating timers run on \
        loops of their own, unpinned; after a warm-up the process's CPU time \
        (getrusage, user + system) is read at both ends of a --timer-cpu-seconds \
        window in which every callout records its lateness; CPU per fire is the \
        window's CPU time ÷ its callouts (median of rounds). Cases: --timer-loops \
        loops at 100 Hz each in this process (their timers started spread over \
        one interval), and one loop at each of --timer-rates. RunLoopKit in both \
        timer precisions, libev (a repeating ev_timer), CF (a repeating \
        CFRunLoopTimer) and SwiftNIO (scheduleRepeatedTask, which runs its delay \
        after the previous run ended; its lateness is read against that).
          timercpu.100x100hz.cpu    µs of CPU per fire, 100 loops × 100 Hz (the gate's)
          timercpu.100x100hz.core   the same as % of one core
          timercpu.100x100hz.p50, .p99   lateness, µs (p50 in the gate)
          timercpu.<R>hz.cpu, .p50, .p99   one loop at R = 60 100 250 1000 Hz

        scaling: timer add and cancel cost as the number of timers grows. On the \
        loop's own thread, add N timers with random fire dates 1–2 h ahead (none \
        fires), then cancel (invalidate) them in the order they were added; then \
        the same again, cancelling in random order, where each cancel touches a \
        timer no cache holds. Small N are repeated to 100,000 operations; median of \
        rounds. CF is measured up to --cf-scaling-max only (its sorted timer array \
        makes each operation O(N)).
          scaling.add.<N>             ns per add at N = 1e3 … 1e6
          scaling.cancel.<N>          ns per cancel, in add order
          scaling.cancelShuffled.<N>  ns per cancel, in random order
          scaling.visit.<N>           ns to read each timer once after the random-order \
                                      cancels, in that order: the memory floor
          scaling.*.growth            cost at the largest N ÷ cost at the smallest

        modes: mode switching. With N timers and N sources in the default (outer) \
        mode, a default-mode callout runs the loop --mode-switches times in another \
        mode (one poll each; the inner mode holds one far-future timer so it is not \
        empty). libev has no modes: its figure is a nested ev_run(EVRUN_NOWAIT).
          modes.switch.<N>   ns per nested run, N = 0 … 1e4 (median of rounds)

        footprint: per-loop cost. In a fresh child process per backend, \
        --footprint-loops threads each create a loop, add a source, poll it once, \
        and park. Bare parked threads in another child give the cost of the threads \
        alone, which is subtracted. Each child first makes and discards one loop \
        (the bare child: one thread), so one-time costs such as code pages are in \
        its baseline, not counted per loop. Every child runs 5 times and each figure \
        is the median: a code page first touched after the baseline adds 64 KiB to \
        one run of any child.
          footprint.fds.<N>        open fds per loop (/proc/self/fd), N = 100 1000 4000
          footprint.rss.<N>        resident KiB per loop (/proc/self/statm); grows with N: \
                                   libev sizes each loop's fd table by the highest fd \
                                   number it watches (near 2 N for the last loop)
          footprint.fdsAfterExit.<N>   fds still open after every thread exited

        mainqueue: main-queue latency, DispatchQueue.main.async from another thread \
        to the block running on the process's main thread, under (a) RunLoopKit's \
        EvRunLoop.main.run(mode: .default) (it services libdispatch's main queue in \
        common modes) and (b) Foundation's RunLoop.main.run(mode: .default, \
        before: .distantFuture) (CF services it). The main thread is the one \
        ArgumentParser runs the command on (a synchronous run()), pinned to the \
        loop CPU meanwhile; each sample is one run of the main loop, which returns \
        once it has run the block. The poster thread pauses 200 µs before each post \
        so the loop is asleep. libev has no main loop: "—". Not in the gate.
          mainqueue.p50 … .max   post → block, µs (--main-queue-blocks per round)

        actorhop: actor hop round trip. A task on Swift's global concurrent \
        executor reads the clock, awaits an empty method of an actor, and reads \
        the clock once back: a hop there and a hop back. (a) RunLoopKit: an actor \
        whose unownedExecutor is an EvRunLoopExecutor of a loop running its \
        default mode on a dedicated thread, so both hops cross threads (a perform \
        + wake-up of the loop, then the runtime resuming the task on its pool). \
        (b) default-actor: a plain actor; with the actor idle the runtime runs \
        the method on the caller's own thread, so this is the floor of any hop, \
        not a run loop. Round-trip percentiles rather than hops/s: a task awaits \
        one hop at a time, so hops/s is only 1/mean and hides the tail that \
        wake-ups cause. The task pauses 200 µs before each hop (blocking its \
        thread) so the loop is asleep; no thread is pinned (the runtime's pool \
        threads cannot be). Peers: (c) nio, an actor whose executor is a SwiftNIO \
        event loop's (EventLoop.executor), (d) dispatch, an actor on a small \
        serial executor over a DispatchQueue (one async per job). Each actor's \
        method touches its state, or the compiler drops the hop. Not in the gate.
          actorhop.p50 … .max    round trip per hop, µs (--hops per round)

        instructions: instructions per operation, counted by valgrind's callgrind \
        (Debian's valgrind; make installs it). Counts do not depend on the machine's \
        load (±3 % between runs), so they show the library's own cost where a \
        wall-clock figure cannot. Each operation and backend is one child process \
        of a copy of this binary stripped with strip -g (valgrind 3.19 cannot read \
        this toolchain's DWARF), under --instr-atstart=no: the child sets up \
        uncounted, switches counting on (a client request), performs the operation \
        N times with nothing else in between (no clock sample kept, no statistics), \
        switches it off; then the same afresh for 5 N. Figure: (count(5 N) − \
        count(N)) / 4 N, so set-up and the window's edges cancel. All threads count.
          instructions.wakeup      one wake-up cycle as in wakeup: the driver's \
                                   pause, signal and wait, the loop's iteration
          instructions.wakeup-timer, .wakeup-descriptor   the same with a timer due \
                                   in a day, with an idle pipe watched
          instructions.wakeup-phase-watchers   raw libev's cycle with an ev_prepare \
                                   and an ev_check watcher started (libev only): \
                                   what hanging a host's phases on libev's own \
                                   iteration costs, against RunLoopKit's one \
                                   ev_run(EVRUN_ONCE) per sleep
          instructions.timer-fire  one fire of a repeating 1 ms timer, the loop's \
                                   only item (its callout notes its lateness)
          instructions.perform     one cross-thread perform + wake-up, in a burst \
                                   (the loop held while the driver posts, then run)
          instructions.actorhop    one actor hop round trip as in actorhop
          instructions.timer-add.<N>, .timer-cancel.<N>   one timer add / cancel \
                                   among N = 1e3, 1e5 others, on the loop's thread
          instructions.modeswitch  one nested run of another mode (one poll)
          instructions.blocks-step, .blocks-step.200k   one run of the default \
                                   mode (one pass) that runs a block posted for \
                                   it, on the loop's thread; .200k behind 200,000 \
                                   blocks pending for a mode that never runs \
                                   (RunLoopKit, CF)
          instructions.blocks-step.cliff   .200k ÷ the plain run: 1 when a \
                                   blocks step never looks at blocks for other \
                                   modes; CF walks them all in every blocks step \
                                   (W19). The gate bounds RunLoopKit's value.
          instructions.timer-modes.<M>   per mode: one timer added to each of M = 1e2, \
                                   1e4 modes (one add call per mode), then invalidated, \
                                   on the loop's thread (the modes exist already). CF \
                                   opens two descriptors per mode, so it is left out \
                                   where RLIMIT_NOFILE is below 2 M
          instructions.timer-modes.growth   per mode at 1e4 ÷ at 1e2: near 1 while an \
                                   invalidate costs O(the timer's modes); a quadratic one \
                                   (3.2 s for a timer in 1e5 modes) reads about 100. The \
                                   gate bounds RunLoopKit's value.
          instructions.ready-descriptors.<N>   one readiness handled among N = 10, \
                                   1e3 pipes ready at once (never drained), on the loop's \
                                   thread: RunLoopKit handles one per iteration (R38, \
                                   one run with returnAfterSourceHandled), raw libev all \
                                   of them per ev_run(EVRUN_ONCE)
          instructions.ready-descriptors.growth   per readiness at 1e3 ÷ at 10: near 1 \
                                   while the next ready source is found in O(1); a \
                                   version-1 step that looked at every ready source grew \
                                   with N. The gate bounds RunLoopKit's value.

        stallmonitor: what an EvStallMonitor costs (RunLoopKit only: CF and libev \
        have none, "—"). Busy: a loop whose source signals itself runs 200,000 \
        iterations without and with a monitor attached (its observer sees every \
        phase). Idle: a loop asleep for 1 s with a monitor, the process's CPU \
        time meanwhile minus the same without one. Not in the gate.
          stallmonitor.busy.plain / .monitored   ns per iteration
          stallmonitor.busy.overhead             ns per iteration the monitor adds
          stallmonitor.idle.cpu                  µs of CPU per second of sleep

        hiredis: round trips per second through hiredis's async client attached \
        with its libev adapter (redisLibevAttach) to (a) an EvLibevSource of a \
        RunLoopKit loop running its default mode and (b) a plain libev loop \
        (ev_loop_new, ev_run), against one redis-server the scenario starts on \
        127.0.0.1 (persistence off) and stops. Each sample: a fresh thread, loop \
        and connection (made before the clock starts), SET and GET in turn; \
        samples alternate backends, 5 per round; every reply is checked. Client \
        and server share the loop CPU (a round trip is two context switches). Needs \
        libhiredis-dev and redis-server (make installs them). In the gate.
          hiredis.pipelined.rate   200,000 round trips sent at once, k/s (median)
          hiredis.sequential.rate  10,000 round trips, each sent from the previous \
                                   reply's callback, k/s (median)
        """

    static let gate = """
        Runs the scenarios that gate.json's limits refer to (wakeup unpinned, \
        perform, timers, timercpu's 100 loops × 100 Hz, scaling at N = 1e5, \
        footprint, actorhop, hiredis, and the instruction counts it names), \
        measuring only the backends compared, then checks \
        each limit: the ratio subject/against of a figure from this same run \
        (subject: runloopkit unless the file says otherwise) must stay ≤ max, or ≥ \
        min; a limit without "against" bounds the subject's own value of a figure \
        that is itself a ratio from this run (instructions.blocks-step.cliff, \
        instructions.timer-modes.growth, instructions.ready-descriptors.growth). \
        Ratios, never absolute times: CI machines are shared and noisy. A \
        failing comparison is re-measured (its scenario runs again) up to --retries \
        times; the gate fails only if it never passes, prints which limit failed and \
        by how much, and exits 1.

        Benchmarks/gate.json:
          {"subject": "runloopkit",
           "limits": [
             {"figure": "wakeup.p50", "against": "libev", "max": 1.8},
             {"figure": "perform.rate", "against": "cf", "min": 1.6,
              "note": "why the limit is where it is"},
             {"figure": "instructions.blocks-step.cliff", "max": 1.3}]}
        """
}
