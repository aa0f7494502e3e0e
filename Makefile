# Viewfinder — the two commands: `make run` and `make test`.
SWIFT ?= swift
ARGS ?=

.PHONY: run build release test test-v4l2 test-uvc bench bench-v4l2 deps test-deps clean

deps:
	@scripts/install-deps

test-deps:
	@scripts/install-deps --test

build: deps
	$(SWIFT) build

release: deps
	$(SWIFT) build -c release

## Serve on http://127.0.0.1:8080 (synthetic cameras when there is no camera). ARGS="--port 9000" etc.
run: release
	.build/release/viewfinder $(ARGS)

## Every test: unit, live server on 127.0.0.1 port 0, real clients (ffprobe, headless Chromium).
test: test-deps
	$(SWIFT) build --build-tests
	$(SWIFT) test --skip-build
	/usr/bin/python3 Tests/browser/test_page.py

## The V4L2 tests against the kernel's vivid driver: build here, run on this machine when
## `modprobe vivid` works, else inside one qemu VM (scripts/vm installs what it needs).
VM ?= scripts/vm
test-v4l2: deps
	$(SWIFT) build --build-tests
	$(VM) --devices 2 --loopback 1 --timeout 1500 -- .build/debug/ViewfinderPackageTests.xctest --testing-library swift-testing --filter V4L2Tests

## The session as a client drives it, against two virtual USB webcams (C920 + C270) on the
## real uvcvideo driver, in the VM (Tests/uvc/).
test-uvc: deps
	$(SWIFT) build --build-tests
	$(VM) --uvc c920,c270 --timeout 1500 -- /usr/bin/python3 Tests/uvc/test_uvc.py

## Benchmarks: writes figures to bench/RESULTS.md.
bench: release
	@scripts/install-deps --bench
	bench/run

## Viewfinder next to µStreamer on vivid, inside the VM: writes bench/RESULTS-v4l2.md.
bench-v4l2: release
	@scripts/install-deps --bench
	@command -v ustreamer >/dev/null || (apt-get update -qq && apt-get install -y -qq --no-install-recommends ustreamer)
	mkdir -p bench/out && gcc -O2 -Wall -o bench/out/viewers bench/viewers.c
	$(VM) --timeout 3000 -- /usr/bin/python3 bench/v4l2.py

clean:
	rm -rf .build
