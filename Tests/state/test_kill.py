#!/usr/bin/env python3
"""What a user sets survives a SIGKILL (issue 57's fault campaign, the process part). Against
the real server (a process of its own, the synthetic pair, its microphone), CYCLES times
(default 100; `make soak-state` runs 1,000):

1. start the server on the state the last cycle left, and check it came back whole: the state
   file read as `current` (never set aside, never the previous copy), nothing dropped, and each
   camera's settings, whether it runs and which one is main exactly as they were after one of
   the last cycle's acknowledged changes — at least every change acknowledged more than a
   second and a half before the kill (the promise is a second; the half is the machine's);
2. make 1–8 random changes through the API a user calls (zoom and its centre, focus, exposure
   custom / locked with and without values / continuous, white balance, orientation, motion,
   the live caps, the microphone's mute and gain, the format, a camera's own start and stop,
   the main camera), each answered 200, the state after each read back as the next candidate;
   in some cycles a slider dragged (twenty zoom changes at once);
3. in some cycles a movie recording when the kill comes (MJPEG or H.264, with or without
   sound), past its first second: the next start finds it unfinished, repairs it to its last
   whole fragment, and lists it with its frames;
4. SIGKILL at a random moment after the last change — at once (a write under way or due), or
   up to two seconds later.

Then, once: the write rate under a slider dragged for five seconds (at most one write a
second) and the time from a change to its write. Prints the figures (cycles, how far back
each restored state was, movies kept) for the issue's note.

Usage: test_kill.py [BINARY]   (CYCLES=N, SEED=N in the environment)
"""
import json, os, random, re, select, shutil, signal, subprocess, sys, tempfile, time, urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BINARY = Path(sys.argv[1] if len(sys.argv) > 1 else os.environ.get("VIEWFINDER_BINARY", ROOT / ".build/debug/viewfinder"))
CYCLES = int(os.environ.get("CYCLES", "100"))
SEED = int(os.environ.get("SEED", str(int(time.time()))))
CAMERAS = ["rear", "front"]
# The promise is a second from a change to its write; the rest is slack for a loaded machine.
PROMISE, SLACK = 1.0, 0.5


class Server:
    def __init__(self, home):
        self.home = home
        config = Path(home) / "config.json"
        if not config.exists():
            config.write_text(json.dumps({"capture": {"directory": f"{home}/p"}, "recording": {"directory": f"{home}/m"},
                                          "state": {"directory": "state"}, "onvif": {"enabled": False},
                                          "synthetic": {"noise": False}}))
        self.proc = subprocess.Popen([str(BINARY), "--config", str(config), "--port", "0", "--rtsp-port", "0",
                                      "--cameras", "synthetic", "--preset", "352x288", "--log-level", "error"],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        ready, _, _ = select.select([self.proc.stdout], [], [], 60)
        if not ready:
            self.proc.kill()
            raise RuntimeError("viewfinder did not start in 60 s")
        self.port = int(re.search(rb"127\.0\.0\.1:(\d+)", self.proc.stdout.readline()).group(1))

    def kill(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)
        err = self.proc.stderr.read().decode(errors="replace")
        self.proc.stdout.close(), self.proc.stderr.close()
        return err

    def request(self, method, path, body=None):
        data = None if body is None else json.dumps(body).encode()
        r = urllib.request.Request(f"http://127.0.0.1:{self.port}{path}", data=data, method=method,
                                   headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(r, timeout=30) as answer:
                return answer.status, json.loads(answer.read() or b"null")
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read() or b"null")

    def get(self, path):
        status, body = self.request("GET", path)
        assert status == 200, f"GET {path}: {status} {body}"
        return body

    def post(self, path, body):
        status, answer = self.request("POST", path, body)
        assert status == 200, f"POST {path} {json.dumps(body)}: {status} {answer}"
        return answer


def chosen(s):
    """What a user set on one camera, as its state reports it: automatic modes' readings left out."""
    f, e, w, z = s["focus"], s["exposure"], s["whiteBalance"], s["zoom"]
    out = {"preset": s["preset"], "fps": (s["format"] or {}).get("fps"), "zoom": z["factor"], "center": (z["center"]["x"], z["center"]["y"]),
           "focus": f["mode"], "exposure": e["mode"], "bias": e["bias"], "wb": w["mode"],
           "orientation": (s["orientation"]["rotation"], s["orientation"]["mirrored"]),
           "motion": (s["motion"]["enabled"], s["motion"]["threshold"]),
           "live": {l["name"]: l.get("bitrateSet") for l in s.get("live", [])},
           "running": s["state"] != "idle"}
    if f["mode"] == "locked": out["lens"] = f["lensPosition"]
    if e["mode"] in ("custom", "locked"): out["duration"], out["iso"] = e["duration"], e["iso"]
    if w["mode"] == "locked": out["temperature"] = w["temperature"]
    if s.get("audio"): out["audio"] = (s["audio"]["muted"], s["audio"]["gainDb"])
    return out


def snapshot(server):
    main = server.get("/api/session")["camera"]["id"]
    return {"main": main, **{c: chosen(server.get(f"/api/cameras/{c}/session")) for c in CAMERAS}}


def change(server, rnd):
    """One random change a user makes, through its call."""
    c = rnd.choice(CAMERAS)
    at = f"/api/cameras/{c}/session"
    kind = rnd.choice(["zoom", "focus", "exposure", "wb", "orientation", "motion", "live", "audio", "format", "run", "main"])
    if kind == "zoom":
        server.post(at + "/zoom", {"factor": round(rnd.uniform(1, 4), 2), "center": {"x": round(rnd.uniform(0.2, 0.8), 2), "y": round(rnd.uniform(0.2, 0.8), 2)}})
    elif kind == "focus":
        server.post(at + "/focus", rnd.choice([{"mode": "locked", "lensPosition": round(rnd.uniform(0, 1), 3)}, {"mode": "continuous"}, {"mode": "auto"}]))
    elif kind == "exposure":
        server.post(at + "/exposure", rnd.choice([{"duration": round(rnd.uniform(0.001, 0.03), 4), "iso": rnd.choice([100, 200, 400, 800])},
                                                   {"mode": "locked"},
                                                   {"mode": "locked", "duration": round(rnd.uniform(0.001, 0.03), 4), "iso": rnd.choice([100, 400])},
                                                   {"mode": "continuous", "bias": rnd.choice([-1, -0.5, 0, 0.5, 1])}]))
    elif kind == "wb":
        server.post(at + "/white-balance", rnd.choice([{"temperature": rnd.randrange(2500, 7500, 100)}, {"mode": "continuous"}]))
    elif kind == "orientation":
        server.post(at + "/orientation", {"rotation": rnd.choice([0, 90, 180, 270]), "mirrored": rnd.random() < 0.5})
    elif kind == "motion":
        server.post(at + "/motion", {"enabled": rnd.random() < 0.5, "threshold": rnd.randrange(1, 20)})
    elif kind == "live":
        server.post(at + "/live", {"bitrate": rnd.choice([None, 500, 1500, 4000]), "sub": {"bitrate": rnd.choice([None, 200, 400])}})
    elif kind == "audio":
        server.post(at + "/audio", {"muted": rnd.random() < 0.3, "gainDb": rnd.choice([-6, 0, 3, 6])})
    elif kind == "format":
        server.post(at + "/prepare", {"preset": rnd.choice(["352x288", "640x480"]), "fps": rnd.choice([15, 30])})
    elif kind == "run":
        server.post(at + ("/stop" if rnd.random() < 0.5 else "/start"), None)
    else:
        server.post("/api/session/switch", {"camera": c})
    return kind


def main():
    rnd = random.Random(SEED)
    home = tempfile.mkdtemp(prefix="vf-kill-")
    print(f"{CYCLES} cycles, seed {SEED}, {BINARY}")
    history, kill_at = [], None   # the last cycle's candidates: (acknowledged at, snapshot)
    back, late, movies_expected, failures = [], [], 0, []  # late: (seconds from the last change to the kill, its state restored)
    try:
        for cycle in range(CYCLES + 1):
            server = Server(home)
            try:
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
                    listed = server.get("/api/movies")["movies"]
                    if len(listed) != movies_expected or any(m["frames"] <= 0 for m in listed):
                        failures.append(f"cycle {cycle}: {movies_expected} movies expected, listed {[(m['id'], m['frames'], m['reason']) for m in listed]}")
                if cycle == CYCLES:
                    break
                history = [(time.monotonic(), snapshot(server))]
                for _ in range(rnd.randint(1, 8)):
                    change(server, rnd)
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
                if "Fatal" in err or "fatal error" in err:
                    failures.append(f"cycle {cycle}: the server crashed by itself:\n{err[-2000:]}")
            if len(failures) >= 5:
                break
    finally:
        shutil.rmtree(home, ignore_errors=True)
    behind = {n: back.count(n) for n in sorted(set(back))}
    print(f"restored: {len(back)} cycles; changes behind the last acknowledged one: {behind}; movies kept {movies_expected}")
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
    """A slider dragged for five seconds: the writes it costs, and how soon the last is on disk."""
    home = tempfile.mkdtemp(prefix="vf-rate-")
    server = Server(home)
    try:
        before = server.get("/api/state")["writes"]
        began = time.monotonic()
        n = 0
        while time.monotonic() - began < 5:
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
