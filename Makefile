# RunLoopKit — every command installs libev-dev with apt-get first if it is missing.
SWIFT ?= swift
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: deps hiredis-deps curl-deps bench-deps build test check-traits test-tsan test-asan soak bench gate plot-check readme-performance docs clean

deps:
	@dpkg -s libev-dev >/dev/null 2>&1 || { \
		echo "installing libev-dev"; \
		$(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq libev-dev; }

## The nested package Examples/HiredisOnRunLoop (hiredis's async client on a loop through
## EvLibevSource) builds against Debian's hiredis and tests against a real redis-server.
hiredis-deps: deps
	@dpkg -s libhiredis-dev redis-server >/dev/null 2>&1 || { \
		echo "installing libhiredis-dev and redis-server"; \
		$(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq libhiredis-dev redis-server; }

## The nested package Examples/CurlOnRunLoop (libcurl's multi_socket API on a loop through
## EvLibevSource, as a C program drives it on libev) builds against Debian's libcurl and tests
## against python3's http.server.
curl-deps: deps
	@dpkg -s libcurl4-openssl-dev python3 >/dev/null 2>&1 || { \
		echo "installing libcurl4-openssl-dev and python3"; \
		$(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq libcurl4-openssl-dev python3; }

## The benchmark's instructions scenario counts with valgrind's callgrind (and builds against
## its client-request header), and its pictures are drawn with gnuplot, so the benchmark targets
## install Debian's valgrind and gnuplot-nox too; its hiredis scenario needs what the hiredis
## example does.
bench-deps: hiredis-deps
	@dpkg -s valgrind >/dev/null 2>&1 || { \
		echo "installing valgrind"; \
		$(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq valgrind; }
	@dpkg -s gnuplot-nox >/dev/null 2>&1 || { \
		echo "installing gnuplot-nox"; \
		$(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq gnuplot-nox; }

## The integrations (RunLoopKitLogging, RunLoopKitMetrics, RunLoopKitServiceLifecycle) are
## behind package traits, off for an application; this repository builds and tests them all.
TRAITS := --enable-all-traits

build: deps
	$(SWIFT) build $(TRAITS)

## make test: the whole test suite (Swift Testing), every trait's integration included...
test: deps hiredis-deps curl-deps
	$(SWIFT) build --build-tests $(TRAITS)
	$(SWIFT) test --skip-build $(TRAITS)
## ...and the nested package Examples/HiredisOnRunLoop, against a redis-server its tests start.
	$(SWIFT) build --build-tests --package-path Examples/HiredisOnRunLoop
	$(SWIFT) test --skip-build --package-path Examples/HiredisOnRunLoop
## ...and the nested package Examples/CurlOnRunLoop, against an HTTP server its tests start.
	$(SWIFT) build --build-tests --package-path Examples/CurlOnRunLoop
	$(SWIFT) test --skip-build --package-path Examples/CurlOnRunLoop

## make check-traits: what an application sees of the traits (.ci/check-traits): with none it
## fetches and builds RunLoopKit alone; a product without its trait fails with an error naming it.
check-traits: deps
	SWIFT=$(SWIFT) .ci/check-traits

## Under a sanitizer, Swift's crash backtracer trips the sanitizer itself and can hang instead of
## ending the process, so a crashing test there ends with the runtime's plain stack dump.
SANITIZED_RUN := SWIFT_BACKTRACE=enable=no

## make test-tsan: the suite under ThreadSanitizer. The library then locks with pthread mutexes,
## which TSan understands (Synchronization.Mutex's futex calls are invisible to it).
test-tsan: deps
	$(SWIFT) build --build-tests $(TRAITS) --scratch-path .build-tsan --sanitize=thread -Xswiftc -DRUNLOOPKIT_PTHREAD_LOCKS
	$(SANITIZED_RUN) $(SWIFT) test --skip-build $(TRAITS) --scratch-path .build-tsan

## make test-asan: the suite under AddressSanitizer (with LeakSanitizer), the hiredis example's too.
HIREDIS_ASAN := Examples/HiredisOnRunLoop/.build-asan
test-asan: deps hiredis-deps
	$(SWIFT) build --build-tests $(TRAITS) --scratch-path .build-asan --sanitize=address
	$(SANITIZED_RUN) ASAN_OPTIONS=detect_leaks=1 LSAN_OPTIONS=suppressions=$(CURDIR)/Tests/lsan.supp $(SWIFT) test --skip-build $(TRAITS) --scratch-path .build-asan
	$(SWIFT) build --build-tests --package-path Examples/HiredisOnRunLoop --scratch-path $(HIREDIS_ASAN) --sanitize=address
	$(SANITIZED_RUN) ASAN_OPTIONS=detect_leaks=1 LSAN_OPTIONS=suppressions=$(CURDIR)/Tests/lsan.supp $(SWIFT) test --skip-build --package-path Examples/HiredisOnRunLoop --scratch-path $(HIREDIS_ASAN)

## make soak SOAK_SECONDS=300 SOAK_SEEDS=100000: longer stress and conformance runs (defaults below).
SOAK_SECONDS ?= 120
SOAK_SEEDS ?= 50000
soak: deps
	$(SWIFT) build --build-tests $(TRAITS)
	RUNLOOPKIT_STRESS_SECONDS=$(SOAK_SECONDS) $(SWIFT) test --skip-build $(TRAITS) --filter StressTests
	RUNLOOPKIT_CONFORMANCE_SEEDS=$(SOAK_SEEDS) $(SWIFT) test --skip-build $(TRAITS) --filter RandomConformanceTests

## The benchmark is the nested package Benchmarks/ (its own .build there), so that its
## dependencies never reach an application that depends on RunLoopKit.
## SwiftPM does not notice files added to the root package from the nested one's cached build
## plan; dropping the plan (it is rebuilt in a second) keeps `make bench` right after a pull.
BENCH := rm -f Benchmarks/.build/release.yaml && $(SWIFT) run --package-path Benchmarks -c release runloop-bench

## make bench: the standard benchmark set, one table (RunLoopKit vs raw libev vs CFRunLoop) on
## standard output; the same as JSON and Markdown in bench-results/, with the pictures drawn from
## that run (SVG) and the data of each beside it.
BENCH_RESULTS := bench-results
bench: bench-deps
	mkdir -p $(BENCH_RESULTS) && $(BENCH) --json $(BENCH_RESULTS)/results.json --markdown $(BENCH_RESULTS)/results.md --plots $(BENCH_RESULTS)

## make gate: the CI performance gate (ratios against limits in Benchmarks/gate.json).
gate: bench-deps
	$(BENCH) gate

## make plot-check: CI's check of the pictures, on a short run of the scenarios they come from (a
## few instruction counts only): fails when a picture, or a backend's curve in it, is missing.
plot-check: bench-deps
	$(BENCH) wakeup timers timercpu instructions --quick --operations wakeup actorhop \
		--plots .build-plots > /dev/null

## make readme-performance: rerun the benchmark, rewrite the README's performance section and draw
## its pictures (checked in under Sources/RunLoopKit/RunLoopKit.docc/Resources/performance, where the
## DocC Performance page shows them too).
readme-performance: bench-deps
	Benchmarks/update-readme.sh

## make docs: the DocC documentation (Sources/RunLoopKit/RunLoopKit.docc and every public
## symbol's comment), built with the toolchain's docc; any warning fails the build. The symbol
## graph comes from an ordinary `swift build` of the library in a scratch folder of its own, so
## no documentation plugin joins the package's dependencies. Output: .build-docs/RunLoopKit.doccarchive
DOCC ?= $(shell command -v docc 2>/dev/null || echo $(dir $(realpath $(shell command -v $(SWIFT))))docc)
DOCS_SCRATCH := .build-docs
docs: deps
	$(SWIFT) build --target RunLoopKit --scratch-path $(DOCS_SCRATCH) \
		-Xswiftc -emit-symbol-graph -Xswiftc -emit-symbol-graph-dir -Xswiftc $(CURDIR)/$(DOCS_SCRATCH)/symbol-graphs
	rm -rf $(DOCS_SCRATCH)/RunLoopKit.doccarchive
	$(DOCC) convert Sources/RunLoopKit/RunLoopKit.docc \
		--additional-symbol-graph-dir $(DOCS_SCRATCH)/symbol-graphs \
		--fallback-display-name RunLoopKit --fallback-bundle-identifier org.runloopkit.RunLoopKit \
		--transform-for-static-hosting --warnings-as-errors \
		--output-path $(DOCS_SCRATCH)/RunLoopKit.doccarchive

## make clean: every scratch folder these targets create, nested packages' included.
clean:
	rm -rf .build .build-tsan .build-asan .build-plots $(DOCS_SCRATCH) Benchmarks/.build $(BENCH_RESULTS) $(HIREDIS_ASAN)
	find . -mindepth 2 -name .build -type d -prune -exec rm -rf {} +
