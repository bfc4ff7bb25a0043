# RunLoopKit — every command installs libev-dev with apt-get first if it is missing.
SWIFT ?= swift
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: deps build test bench gate clean

deps:
	@dpkg -s libev-dev >/dev/null 2>&1 || { \
		echo "installing libev-dev"; \
		$(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq libev-dev; }

build: deps
	$(SWIFT) build

## make test: the whole test suite (Swift Testing).
test: deps
	$(SWIFT) build --build-tests
	$(SWIFT) test --skip-build

## make bench: the standard benchmark set, one table (RunLoopKit vs raw libev vs CFRunLoop).
bench: deps
	$(SWIFT) run -c release runloop-bench

## make gate: the CI performance gate (ratios against limits in Benchmarks/gate.json).
gate: deps
	$(SWIFT) run -c release runloop-bench gate

clean:
	rm -rf .build
