# Viewfinder — the two commands: `make run` and `make test`.
SWIFT ?= swift
ARGS ?=

.PHONY: run build release test bench deps test-deps clean

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

## Benchmarks: writes figures to bench/RESULTS.md.
bench: release
	@scripts/install-deps --bench
	bench/run

clean:
	rm -rf .build
