#!/usr/bin/env python3
"""What a user sets survives a SIGKILL (issue 57's fault campaign, the process part). Against
the real server (a process of its own, the synthetic pair, its microphone), CYCLES times
(default 100; `make soak-state` runs 1,000):

1. start the server on the state the last cycle left, and check it came back whole: the state
   file read as `current` (never set aside, never the previous copy), nothing dropped, and each
   camera's settings, whether it runs and which one is main exactly as they were after one of
   the last cycle's acknowledged changes — at least every change acknowledged more than a
   second and a half before the kill (the promise is a second; the half is the machine's);
   and Home Assistant's entities (zoom, focus and exposure mode, mute, recording, frame rate)
   as the new process publishes them on its retained state topics (mosquitto, the broker kept
   across the kills, the dead host's retained states cleared first) saying the same;
2. make 1–8 random changes through the API a user calls (zoom and its centre, focus, exposure
   custom / locked with and without values / continuous, white balance, orientation, motion,
   the live caps, the microphone's mute and gain, the format, a camera's own start and stop,
   the main camera) — a third of them as MQTT commands (mosquitto_rr, MQTT 5, acknowledged on
   their response topic) — each answered 200, the state after each read back as the next
   candidate; in some cycles a slider dragged (twenty zoom changes at once);
3. in some cycles a movie recording when the kill comes (MJPEG or H.264, with or without
   sound), past its first second: the next start finds it unfinished, repairs it to its last
   whole fragment, and lists it with its frames (so are the movies of motion events, where a
   change turned the detector on);
4. SIGKILL at a random moment after the last change — at once (a write under way or due), or
   up to two seconds later.

Then, once: the write rate under a slider dragged for five seconds (SLIDER_SECONDS; a minute in
`make soak-state`) — at most one write a second — and the time from a change to its write. Prints the figures (cycles, how far back
each restored state was, movies kept) for the issue's note.

Usage: test_kill.py [BINARY]   (CYCLES=N, SEED=N, SLIDER_SECONDS=N in the environment)
"""
import os, random, shutil, sys, tempfile, time
from pathlib import Path

import harness
from harness import chosen, change, snapshot

BINARY = Path(sys.argv[1]) if len(sys.argv) > 1 else harness.BINARY
CYCLES = int(os.environ.get("CYCLES", "100"))
SEED = int(os.environ.get("SEED", str(int(time.time()))))
# The promise is a second from a change to its write; the rest is slack for a loaded machine.
PROMISE, SLACK = 1.0, 0.5
# The slider's drag (`make soak-state` drags it a minute, as the goal says).
SLIDER = float(os.environ.get("SLIDER_SECONDS", "5"))


def main():
    rnd = random.Random(SEED)
    home = tempfile.mkdtemp(prefix="vf-kill-")
    broker = harness.Broker(home)
    print(f"{CYCLES} cycles, seed {SEED}, {BINARY}")
    history, kill_at = [], None   # the last cycle's candidates: (acknowledged at, snapshot)
    back, late, movies_expected, events, failures = [], [], 0, 0, []
    via = {"http": 0, "mqtt": 0}  # late: (seconds from the last change to the kill, its state restored)
    try:
        for cycle in range(CYCLES + 1):
            server = harness.Server(home, BINARY, broker=broker)
            try:
                assert broker.online(), f"cycle {cycle}: the server never came online on MQTT"
                report = server.get("/api/state")
                if history:
                    assert report["loadedFrom"] == "current" and report["problems"] == [] and report["dropped"] == [], \
                        f"cycle {cycle}: came back from {report['loadedFrom']}, problems {report['problems']}, dropped {report['dropped']}"
                    now = snapshot(server)
                    # At least every change acknowledged a second (and the slack) before the kill.
                    due = max([i for i, (t, _) in enumerate(history) if t <= kill_at - PROMISE - SLACK] or [0])
                    matches = [i for i, (_, s) in enumerate(history) if s == now and i >= due]
                    if not matches:
                        def diff(a, b):
                            return {k: (a.get(k), b.get(k)) for k in a if a.get(k) != b.get(k)} if isinstance(a, dict) else (a, b)
                        near = [(i, round(kill_at - t, 2), {c: diff(now[c], s[c]) for c in now if now[c] != s[c]}) for i, (t, s) in enumerate(history)]
                        failures.append(f"cycle {cycle}: restored {now}\n  expected one of states {due}…{len(history) - 1}; each state's "
                                        f"seconds before the kill and how the restored one differs from it:\n    "
                                        + "\n    ".join(map(str, near)))
                    else:
                        back.append(len(history) - 1 - matches[-1])
                        late.append((kill_at - history[-1][0], matches[-1] == len(history) - 1))
                    # Home Assistant's view: the new process's retained states, as the HTTP state.
                    want = {c: harness.entities(server.get(f"/api/cameras/{c}/session")) for c in harness.CAMERAS}
                    deadline, seen = time.monotonic() + 10, None
                    while time.monotonic() < deadline:
                        seen = {c: s and harness.entities(s) for c, s in broker.states().items()}
                        if seen == want:
                            break
                        want = {c: harness.entities(server.get(f"/api/cameras/{c}/session")) for c in harness.CAMERAS}
                    if seen != want:
                        failures.append(f"cycle {cycle}: Home Assistant's entities {seen}, the state {want}")
                    # The recordings started here, and any a motion event started (the detector may be on).
                    listed = server.get("/api/movies")["movies"]
                    manual = [m for m in listed if m["trigger"] == "manual"]
                    events = len(listed) - len(manual)
                    if len(manual) != movies_expected or any(m["frames"] <= 0 for m in listed):
                        failures.append(f"cycle {cycle}: {movies_expected} recordings expected, listed "
                                        f"{[(m['id'], m['trigger'], m['frames'], m['reason']) for m in listed][:8]}… ({len(manual)} manual)")
                if cycle == CYCLES:
                    break
                history = [(time.monotonic(), snapshot(server))]
                for _ in range(rnd.randint(1, 8)):
                    via[change(server, rnd)[1]] += 1
                    history.append((time.monotonic(), snapshot(server)))
                if rnd.random() < 0.2:  # a slider dragged: each step a state that may be the one saved
                    main_id = history[-1][1]["main"]
                    for _ in range(20):
                        answer = server.post("/api/session/zoom", {"factor": round(rnd.uniform(1, 4), 2)})
                        history.append((time.monotonic(), {**history[-1][1], main_id: chosen(answer)}))
                    history[-1] = (time.monotonic(), snapshot(server))
                if rnd.random() < 0.3:
                    main_id = history[-1][1]["main"]
                    if not history[-1][1][main_id]["running"]:
                        server.post("/api/session/start", None)
                        history.append((time.monotonic(), snapshot(server)))
                    codec, sound = rnd.choice(["mjpeg", "h264"]), rnd.random() < 0.5
                    server.post("/api/session/recording/start", {"codec": codec, "audio": sound})
                    # Past its first whole fragment (a second): what a kill cannot take from it.
                    deadline = time.monotonic() + 10
                    while server.get("/api/session")["recording"]["duration"] < 1.5 and time.monotonic() < deadline:
                        time.sleep(0.05)
                    movies_expected += 1
                    history.append((time.monotonic(), snapshot(server)))
                time.sleep(rnd.choice([0, 0, rnd.uniform(0, 0.3), rnd.uniform(0, 2)]))
                kill_at = time.monotonic()
            finally:
                err = server.kill()
                broker.forget()
                if "Fatal" in err or "fatal error" in err:
                    failures.append(f"cycle {cycle}: the server crashed by itself:\n{err[-2000:]}")
            if len(failures) >= 5:
                break
    finally:
        broker.stop()
        shutil.rmtree(home, ignore_errors=True)
    print(f"changes: {via['http']} over HTTP, {via['mqtt']} as MQTT commands")
    behind = {n: back.count(n) for n in sorted(set(back))}
    print(f"restored: {len(back)} cycles; changes behind the last acknowledged one: {behind}; recordings kept {movies_expected}, motion events' movies kept {events}")
    after = [ok for gap, ok in late if gap >= PROMISE]
    print(f"killed a second or more after the last change: {len(after)} cycles, {sum(after)} of them with that change restored")
    if failures:
        print("FAIL")
        for f in failures:
            print("  " + f)
        sys.exit(1)
    measure_rate()
    print("PASS")


def measure_rate():
    """A slider dragged for SLIDER seconds: the writes it costs, and how soon the last is on disk."""
    home = tempfile.mkdtemp(prefix="vf-rate-")
    server = harness.Server(home, BINARY)
    try:
        before = server.get("/api/state")["writes"]
        began = time.monotonic()
        n = 0
        while time.monotonic() - began < SLIDER:
            server.post("/api/session/zoom", {"factor": round(1 + (n % 30) / 10, 1)})
            n += 1
        last = time.monotonic()
        while not server.get("/api/state")["saved"] and time.monotonic() - last < 5:
            time.sleep(0.01)
        lag = time.monotonic() - last
        writes = server.get("/api/state")["writes"] - before
        span = last - began
        print(f"slider: {n} changes in {span:.1f} s, {writes} writes ({writes / span:.2f}/s); the last on disk {lag * 1000:.0f} ms after it")
        if writes > span + 2:
            print("FAIL: more than one write a second")
            sys.exit(1)
    finally:
        server.kill()
        shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":
    main()
