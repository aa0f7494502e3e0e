# Viewfinder — the two commands: `make run` and `make test`.
SWIFT ?= swift
ARGS ?=

# How many test cases Swift Testing runs at once, for every `swift test` of every target (the
# sanitizer runs and the VM's test binary read the same variable from the environment). Left
# unbounded it starts every case of a run at once — some fifty in-process servers, each with
# its cameras and encode pool, on two cores — and the tests' deadlines then measure the
# machine (issue 45: 19 failures on a fresh 2-core machine). Bounded to the core count the
# same run passed every time, in about the same wall time. TEST_WIDTH=N overrides it.
TEST_WIDTH ?= $(shell nproc)
export SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH := $(TEST_WIDTH)

.PHONY: run build release test test-v4l2 test-uvc test-alsa bench bench-v4l2 bench-libcamera deps test-deps clean

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
	@# The process tests start .build/debug/viewfinder: never a stale one (scripts/fresh-binary).
	SWIFT=$(SWIFT) scripts/fresh-binary
	@# Package.swift declares exactly what each target imports; one Swift module owns each C module.
	scripts/check-imports $(SWIFT)
	@# No Swift file under Sources/ over 350 lines.
	scripts/check-file-sizes
	@# The Swift suites, in their groups (scripts/swift-tests says why each runs apart).
	SWIFT=$(SWIFT) scripts/swift-tests
	/usr/bin/python3 Tests/browser/test_page.py
	@# The page in Firefox ESR (headless, Marionette; marionette_driver in a venv under .build/) and
	@# WebKitGTK (WebKitWebDriver under Xvfb): frames, the transport badge's reason, the layout.
	/usr/bin/python3 Tests/browser/test_browsers.py
	@# Issue 38's grid: five cameras, the four tiles beside the main one each playing its sub stream by WebRTC (at least half its 15 fps decoded; the rates printed).
	/usr/bin/python3 Tests/browser/test_grid.py
	@# Live clients (WHEP, RTSP, live.mp4) coming and going 200 times each leave no descriptor or thread.
	/usr/bin/python3 Tests/live/test_leaks.py
	@# Four cameras with every output at work: one capture thread each and the one encode pool, no output's own thread.
	/usr/bin/python3 Tests/live/test_threads.py
	@# A WebRTC viewer in a network namespace behind tc tbf at 1 Mbit/s: on the sub stream at >= 10 fps, back on the main one when the link is restored.
	/usr/bin/python3 Tests/live/test_slow_link.py
	@# WebRTC through real NATs in network namespaces (iptables, Debian's coturn, aiortc in a venv under .build/): the LAN, one NAT, a port forward with webrtc.publicAddresses, symmetric NATs over TURN, UDP blocked (TURN over TCP; and Chromium by ICE-TCP to the forwarded port), candidates trickled by PATCH, the page finding the camera again after the viewer's address changed; symmetric without TURN, without the trickled candidates, and with a TURN server refusing the credentials must fail (the last saying why, in the page's badge and the server's log); the server's state names each path.
	/usr/bin/python3 Tests/live/test_nat.py
	@# ONVIF as Home Assistant's client library (onvif-zeep-async, in a venv under .build/) drives it: profiles, stream and snapshot URIs, sign-in.
	/usr/bin/python3 Tests/onvif/test_onvif.py
	@# What an NVR sets through ONVIF (encoders, imaging, focus, PTZ presets) lasts a SIGKILL: every Get… answers as before (issue 57).
	/usr/bin/python3 Tests/onvif/test_state.py
	@# Media2 and HTTP Digest sign-in as onvif-python (a second client, its own venv) drives them, its answers valid against ONVIF's ver20 schema.
	/usr/bin/python3 Tests/onvif/test_media2.py
	@# The newest onvif-zeep-async (4.3.0) and aiohttp's DigestAuthMiddleware, which reads only a 401's first challenge: snapshots, API and SOAP over Digest.
	/usr/bin/python3 Tests/onvif/test_newest.py
	@# WS-Discovery between two network namespaces: Home Assistant's search and libonvif's onvif-util find the device, Hello and Bye, probes answered within a second.
	/usr/bin/python3 Tests/onvif/test_discovery.py
	@# ONVIF's audio backchannel: GStreamer's rtspsrc (backchannel=onvif, Tests/onvif/talker.c) talks G.711 to the camera's speaker over TCP and UDP; one talker a camera, an operator's.
	/usr/bin/python3 Tests/onvif/test_backchannel.py
	@# The broker restarted 100 times under a running host: back online within 5 s each time, no descriptor, thread or memory growth.
	/usr/bin/python3 Tests/mqtt/test_restarts.py
	@# Random settings, then SIGKILL, 100 times: each start has what was acknowledged (a second before the kill at least), the file whole, movies recording at the kill kept.
	/usr/bin/python3 Tests/state/test_kill.py

## The Swift suites of `make test` N times from one build (N=5), then a table of each run's
## seconds, tests and failures by name; LOAD=1 keeps every core busy meanwhile (stress-ng).
.PHONY: test-repeat
test-repeat: test-deps
	$(SWIFT) build --build-tests
	SWIFT=$(SWIFT) scripts/fresh-binary
	SWIFT=$(SWIFT) N=$${N:-5} scripts/test-repeat

## Robustness (Tests/fuzz/): schemathesis (PyPI, in a venv under .build/) runs every phase and
## check of Public/openapi.yaml against the release server, zero failures; then the raw-HTTP
## fuzzer (test-fuzz-http, below). The server is the installed one, the static release build
## that make test's packaging step has already built (a build of its own cost CI 146 s).
.PHONY: test-fuzz
test-fuzz: test-deps release-static
	/usr/bin/python3 Tests/fuzz/test_api.py --binary $(abspath $(STATIC_BUILD))/release/viewfinder
	/usr/bin/python3 Tests/fuzz/raw_http.py --binary $(abspath $(STATIC_BUILD))/release/viewfinder

## The unit and live suites under ThreadSanitizer / AddressSanitizer (+ LeakSanitizer), each in a
## build directory of its own; any report fails (scripts/sanitize says what is left out and why).
.PHONY: test-tsan test-asan
test-tsan: test-deps
	scripts/sanitize thread
test-asan: test-deps
	scripts/sanitize address

## The V4L2 tests against the kernel's vivid driver: build here, run on this machine when
## `modprobe vivid` works, else inside one qemu VM (scripts/vm installs what it needs).
VM ?= scripts/vm
test-v4l2: deps
	$(SWIFT) build --build-tests
	SWIFT=$(SWIFT) scripts/fresh-binary
	$(VM) --devices 2 --loopback 1 --timeout 1500 -- .build/debug/ViewfinderPackageTests.xctest --testing-library swift-testing --filter V4L2Tests

## A microphone on a real ALSA driver: snd-aloop in the VM, a known tone played into its
## playback side and captured through the server (Tests/sound/test_aloop.py).
test-alsa: test-deps
	SWIFT=$(SWIFT) scripts/fresh-binary
	$(VM) --where vm --timeout 600 -- /usr/bin/python3 Tests/sound/test_aloop.py

## The session as a client drives it, against two virtual USB webcams (C920 + C270) on the
## real uvcvideo driver, in the VM (Tests/uvc/).
test-uvc: deps
	$(SWIFT) build --build-tests
	SWIFT=$(SWIFT) scripts/fresh-binary
	$(VM) --uvc c920,c270 --timeout 1500 -- /usr/bin/python3 Tests/uvc/test_uvc.py

## A camera through libcamera (Debian's 0.0.3) on the kernel's vimc driver, in the VM:
## libcamera's vimc pipeline handler and IPA, cross-checked with its `cam` (Tests/libcamera/);
## the C facade built against 0.0.3 and bookworm-backports' 0.3.2 and run on both there too.
.PHONY: test-libcamera
test-libcamera: test-deps
	SWIFT=$(SWIFT) scripts/fresh-binary
	Tests/libcamera/facade-versions
	$(VM) --vimc --timeout 900 -- /usr/bin/python3 Tests/libcamera/test_vimc.py

## The saved state across the machine's power cut: a VM's power pulled while the server saves
## on an ext4 disk, six times; each next boot restores a state the API acknowledged (Tests/state/).
.PHONY: test-power-cut
test-power-cut: build
	SWIFT=$(SWIFT) scripts/fresh-binary
	/usr/bin/python3 Tests/state/power_cut.py

## Eight hosts in network namespaces on a bridge, one broker: synchronized sets, a host's link
## cut and mended (Tests/fleet/). Needs root (ip netns); CI runs it.
.PHONY: test-fleet
test-fleet: test-deps
	$(SWIFT) build --build-tests
	SWIFT=$(SWIFT) scripts/fresh-binary
	/usr/bin/python3 Tests/fleet/test_fleet.py

## A real Home Assistant (2024.3.3, pinned, in a venv under .build/) with its MQTT integration
## sees the cameras by discovery and drives them (Tests/homeassistant/). CI runs it.
.PHONY: test-homeassistant
test-homeassistant: test-deps
	$(SWIFT) build --build-tests
	SWIFT=$(SWIFT) scripts/fresh-binary
	/usr/bin/python3 Tests/homeassistant/test_ha.py

## Benchmarks: writes figures to bench/RESULTS.md.
bench: release
	@scripts/install-deps --bench
	@command -v motion >/dev/null || (apt-get update -qq && apt-get install -y -qq --no-install-recommends motion && { systemctl disable --now motion 2>/dev/null || true; })
	bench/run

## Viewfinder next to µStreamer on vivid, inside the VM: writes bench/RESULTS-v4l2.md.
bench-v4l2: release
	@scripts/install-deps --bench
	@command -v ustreamer >/dev/null || (apt-get update -qq && apt-get install -y -qq --no-install-recommends ustreamer)
	mkdir -p bench/out && gcc -O2 -Wall -o bench/out/viewers bench/viewers.c
	$(VM) --timeout 3000 -- /usr/bin/python3 bench/v4l2.py

## A camera through libcamera against the same vimc pipeline read directly through V4L2, inside
## the VM: latency, CPU per frame, copies, then 10 minutes for drops. Writes bench/RESULTS-libcamera.md.
.PHONY: bench-libcamera
bench-libcamera: release
	@scripts/install-deps --bench
	mkdir -p bench/out && gcc -O2 -Wall -o bench/out/viewers bench/viewers.c && gcc -O2 -Wall -o bench/out/latency bench/latency.c -lm
	$(VM) --vimc --timeout 3000 -- /usr/bin/python3 bench/libcamera.py

clean:
	rm -rf .build

## Install as a systemd service (README: "Install as a service"). DESTDIR stages, PREFIX moves
## the binary, Public and the unit; the config is always $(DESTDIR)/etc/viewfinder/config.json
## and an existing one is never overwritten. VIEWFINDER_BIN installs a given binary instead.
PREFIX ?= /usr/local
DESTDIR ?=
BINDIR ?= $(PREFIX)/bin
DATADIR ?= $(PREFIX)/share
DOCDIR ?= $(DATADIR)/doc/viewfinder
SYSCONFDIR ?= /etc
UNITDIR ?= $(if $(filter /usr,$(PREFIX)),/lib/systemd/system,$(PREFIX)/lib/systemd/system)
# The installed binary links the Swift runtime statically; its own build directory, so it
# does not invalidate `make release`'s.
STATIC_BUILD ?= .build-static
VIEWFINDER_BIN ?= $(STATIC_BUILD)/release/viewfinder
DEB_OUT ?= .build-deb
INSTALL_VARS = DESTDIR="$(DESTDIR)" PREFIX="$(PREFIX)" BINDIR="$(BINDIR)" DATADIR="$(DATADIR)" \
	DOCDIR="$(DOCDIR)" SYSCONFDIR="$(SYSCONFDIR)" UNITDIR="$(UNITDIR)" VIEWFINDER_BIN="$(VIEWFINDER_BIN)"

.PHONY: version release-static install uninstall deb test-packaging

## Sources/viewfinder/Version.swift from git (not committed; plain swift build uses 0.1.0).
version:
	@scripts/version --swift Sources/viewfinder/Version.swift

release-static: deps version
	$(SWIFT) build -c release --static-swift-stdlib --product viewfinder --scratch-path $(STATIC_BUILD)

install: $(if $(filter $(STATIC_BUILD)/release/viewfinder,$(VIEWFINDER_BIN)),release-static)
	$(INSTALL_VARS) packaging/install

## Removes what install put there, except the config (yours) and /var/lib/viewfinder (photos).
uninstall:
	rm -f "$(DESTDIR)$(BINDIR)/viewfinder" "$(DESTDIR)$(UNITDIR)/viewfinder.service" "$(DESTDIR)$(DATADIR)/man/man1/viewfinder.1.gz"
	rm -rf "$(DESTDIR)$(DATADIR)/viewfinder" "$(DESTDIR)$(DOCDIR)"
	@echo "uninstall: kept $(DESTDIR)$(SYSCONFDIR)/viewfinder/config.json and /var/lib/viewfinder"

## viewfinder_VERSION_ARCH.deb in $(DEB_OUT)/, built with dpkg-deb.
deb: $(if $(filter $(STATIC_BUILD)/release/viewfinder,$(VIEWFINDER_BIN)),release-static)
	VIEWFINDER_BIN="$(VIEWFINDER_BIN)" VERSION="$$(scripts/version)" packaging/build-deb $(DEB_OUT)

## make install into a temp DESTDIR (twice), systemd-analyze verify, make deb + lintian.
test-packaging: test-deps release-static
	Tests/packaging/test-packaging
test: test-packaging

## Soak: SOAK_MINUTES (default 10) of churn against the release server (viewers, event streams,
## settings, switches, photos, movies); RSS, fds and threads must hold. Writes bench/SOAK.md.
.PHONY: soak soak-live
## The live-client leak check at 1,000 cycles of each kind (make test runs 200).
soak-live: build
	CYCLES=1000 /usr/bin/python3 Tests/live/test_leaks.py

## Sound against picture over an hour (issue 37: drift ≤ 10 ms): one movie and the live
## streams at its start and end. Writes its section of bench/RESULTS.md.
.PHONY: soak-drift
soak-drift: release
	SOAK_MINUTES=$${SOAK_MINUTES:-60} /usr/bin/python3 bench/drift.py

## The broker restarted 1,000 times under a running host (make test runs 100).
.PHONY: soak-mqtt
soak-mqtt: build
	CYCLES=1000 /usr/bin/python3 Tests/mqtt/test_restarts.py

## Random settings and a SIGKILL, 1,000 times (make test runs 100; SEED=N repeats a run), then a slider dragged a minute.
.PHONY: soak-state
soak-state: build
	CYCLES=1000 SLIDER_SECONDS=60 /usr/bin/python3 Tests/state/test_kill.py

soak: release
	SOAK_MINUTES=$${SOAK_MINUTES:-10} /usr/bin/python3 bench/soak.py

## Raw-HTTP fuzzing of the release server: malformed and mutated requests over plain sockets
## (Tests/fuzz/raw_http.py; about 90 s; SEED=N to vary it, the failures name a case to rerun).
.PHONY: test-fuzz-http
test-fuzz-http: release
	/usr/bin/python3 Tests/fuzz/raw_http.py $${SEED:+--seed $$SEED}

## libFuzzer targets (Fuzz/Package.swift) with AddressSanitizer, FUZZ_SECONDS (default 60) each.
.PHONY: fuzz
fuzz: deps
	scripts/fuzz
