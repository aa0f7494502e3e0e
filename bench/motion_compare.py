#!/usr/bin/env python3
"""Motion detection: Viewfinder's detector next to Motion 4.5 (Debian's `motion`, the reference),
both fed the same staged scenes at 1280x720, 30 fps, at the same time.

One viewfinder (`--config FILE --cameras synthetic --preset 1280x720 --fps 30`, FILE with
`"motion": {"enabled": true, "record": false}` and the synthetic sensor's noise on) runs the
whole time; its detector's events are read from `GET /api/events?camera=rear` (`event: motion`,
`started` / `ended`). Beside it, for the whole run, Motion 4.5 in the foreground
(`motion -n -c CONF`) in each of VARIANTS, each reading the same camera's MJPEG stream
(`netcam_url http://127.0.0.1:PORT/cameras/rear/stream`: Motion's ffmpeg netcam, which decodes
every JPEG), with its web control and stream ports off and no pictures or movies; each event's
start and end is a line its `on_event_start` / `on_event_end` command appends (a shell script
stamping `date +%s.%N`). The rear camera's own bouncing block holds still (`POST
/api/cameras/rear/scene {"moving": false}`), so what moves is what is staged:

  a) still, 60 s at ISO 100 and 60 s at ISO 3200 (custom exposure, the duration chosen so the
     picture is as bright as auto-exposure had it: only the noise grows): expect no event;
  b) 10 walkers (`{"walker": {"after", "duration": 3, "size": 0.5}}`, a person-shaped figure
     crossing left to right), one every 8 s, under continuous exposure: expect 10 events; a
     walker is found when an event starts between its `startsAt` and 1 s after its `endsAt`;
     the detection delay is that start minus `startsAt` (when the detector said so: Motion's
     command ran, Viewfinder's `started` reached the client);
  c) brightness steps with the scene still: torch on / off and exposure bias +1.5 / 0 / -1.5 / 0
     every 5 s for 40 s: expect no event.

Before each scene's window the settings change and SETTLE s pass; events that start then are
shown apart, and an event still under way when a still scene's window opens counts as a false
one. CPU: Motion's process (utime+stime, /proc/PID/stat), split by thread (its netcam thread
reads the stream, decodes each JPEG and converts it to YUV 4:2:0; its motion loop detects), and
Viewfinder's detection alone (`viewfinder_motion_detect_seconds_total`, /metrics: CPU seconds in
the detector), each over each scene's window, in % of one core.

`bench/run` (make bench) calls it last; `python3 bench/motion_compare.py` runs only this and
rewrites its section of bench/RESULTS.md. `python3 bench/motion_compare.py --motion-only` checks
the Motion half alone against any release build (no `motion` config, no staging): the rear
camera's block moves all the time, so each Motion should report an event; the view is then
zoomed 4x onto the still bars (the event ends after event_gap) and back. It prints what it read
and writes nothing. BENCH_MOTION_STILL, _WALKERS, _PERIOD, _WALK, _SETTLE, _WARMUP and _GAP
(seconds or counts) change the run.
"""
import http.client
import json
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from server import (BIN, ROOT, get, post, publish, running_session, start_server, stop_server,  # noqa: E402
                    timed, written_by)  # (bench/server.py: the server, its API, the run)

SIZE, FPS = "1280x720", 30
WIDTH, HEIGHT = 1280, 720
STILL = float(os.environ.get("BENCH_MOTION_STILL", "60"))        # each still window (a)
WALKERS = int(os.environ.get("BENCH_MOTION_WALKERS", "10"))      # (b)
PERIOD = float(os.environ.get("BENCH_MOTION_PERIOD", "8"))       # one walker every PERIOD s
WALK = float(os.environ.get("BENCH_MOTION_WALK", "3"))           # a walker's crossing, s
WALKER_SIZE = 0.5                                                # its height, in frame heights
STEP = 5.0                                                       # (c): a brightness step every STEP s
STEPS = [("torch", "on"), ("torch", "off"), ("bias", 1.5), ("bias", 0.0),
         ("bias", -1.5), ("bias", 0.0), ("torch", "on"), ("torch", "off")]  # 8 × 5 s = 40 s
SETTLE = float(os.environ.get("BENCH_MOTION_SETTLE", "10"))      # after a change, before a window
WARMUP = float(os.environ.get("BENCH_MOTION_WARMUP", "10"))      # Motion connected, before the first
GAP = int(os.environ.get("BENCH_MOTION_GAP", "2"))               # Motion's event_gap, s
MATCH_AFTER = 1.0  # an event starting up to 1 s after a walker has left still counts as finding it
HEADING = "## Motion detection compared with Motion 4.5"

# Motion's settings beside its built-in defaults, the same for every variant: where it reads, what
# it does not write, and events ending after GAP s without motion (default 60: ten walkers 8 s
# apart would be one event). Detection (threshold 1500 changed pixels, noise_level 32 with
# noise_tune on, no despeckle, lightswitch_percent 0 (off), minimum_motion_frames 1,
# smart_mask_speed 0, no mask) is Motion's own default unless a variant says otherwise.
# framerate 30: the camera's rate (Motion's default is 15, its range 2–100); with an http://
# netcam it is also the rate Motion's ffmpeg capture thread reads at (netcam_params capture_rate).


def caption_mask(path):
    """A PGM mask (white counts, black is left out) leaving out the synthetic camera's caption:
    the camera name, frame counter and clock drawn into the bottom-left of every frame (scale
    max(1, h/160), 8-pixel font + 2 rows; its digits change every frame). Left out: the left half
    of the bottom 12 × scale rows."""
    scale = max(1, HEIGHT // 160)
    top = HEIGHT - 12 * scale
    rows = bytearray()
    for y in range(HEIGHT):
        rows += (bytes([0]) * (WIDTH // 2) + bytes([255]) * (WIDTH - WIDTH // 2)) if y >= top else bytes([255]) * WIDTH
    path.write_bytes(b"P5\n%d %d\n255\n" % (WIDTH, HEIGHT) + bytes(rows))
    return f"the left half of the bottom {12 * scale} rows (y ≥ {top})"


# (name, label, extra settings, what they mean): Motion as shipped, and Motion as a user of this
# scene would set it (the clock masked, sudden light changes ignored).
VARIANTS = [
    ("defaults", "Motion 4.5, defaults", {}, "detection as shipped"),
    ("tuned", "Motion 4.5, tuned", {"mask_file": "MASK", "lightswitch_percent": 50},
     "`mask_file` over the caption's changing clock, `lightswitch_percent 50` (a frame in which "
     "more than half the picture changed is a light switching: detection pauses for "
     "`lightswitch_frames`, 5)"),
]


# ---------------------------------------------------------------- Motion 4.5

HOOK = """#!/bin/sh
# Motion's on_event_start / on_event_end: KIND EVENT PIXELS NOISE -> "KIND UNIX-SECONDS EVENT PIXELS NOISE"
printf '%s %s %s %s %s\\n' "$1" "$(date +%s.%N)" "$2" "$3" "$4" >> "$(dirname "$0")/events.log"
"""


class Motion:
    """One `motion -n -c CONF` reading `url`, with `extra` settings; its events and CPU."""

    def __init__(self, work, name, url, extra):
        self.name = name
        self.dir = work / f"motion-{name}"
        (self.dir / "out").mkdir(parents=True, exist_ok=True)
        hook = self.dir / "hook.sh"
        hook.write_text(HOOK)
        hook.chmod(0o755)
        self.events_path = self.dir / "events.log"
        self.log_path = self.dir / "motion.log"
        settings = {
            "daemon": "off", "setup_mode": "off", "log_file": str(self.log_path), "log_level": 6,
            "target_dir": str(self.dir / "out"),
            "netcam_url": url, "width": WIDTH, "height": HEIGHT, "framerate": FPS,
            "event_gap": GAP, "pre_capture": 0, "post_capture": 0,
            "picture_output": "off", "movie_output": "off", "snapshot_interval": 0,
            "webcontrol_port": 0, "stream_port": 0,
            **extra,
            "on_event_start": f"{hook} start %v %D %N",
            "on_event_end": f"{hook} end %v %D %N",
        }
        self.settings = settings
        self.conf = self.dir / "motion.conf"
        self.conf.write_text("".join(f"{k} {v}\n" for k, v in settings.items()))
        self.proc = subprocess.Popen(["motion", "-n", "-c", str(self.conf)], cwd=self.dir,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def wait_connected(self, timeout=30):
        """Until Motion's log says its camera connected; RuntimeError with the log's tail otherwise."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                break
            if self.log_path.exists() and re.search(r"netcam_rtsp_connect: .*connected", self.log_path.read_text()):
                return
            time.sleep(0.1)
        tail = self.log_path.read_text()[-2000:] if self.log_path.exists() else "(no log)"
        raise RuntimeError(f"motion {self.name} did not connect (exit {self.proc.poll()}): {tail}")

    def events(self):
        """Its events: [{"n", "start", "end" (the end command's time, None while under way),
        "lastMotion" (end − event_gap: Motion ends an event event_gap s after its last motion),
        "pixels"}], from the lines its commands appended."""
        out = {}
        if not self.events_path.exists():
            return []
        for line in self.events_path.read_text().splitlines():
            f = line.split()
            if len(f) < 3 or f[0] not in ("start", "end"):
                continue
            e = out.setdefault(f[2], {"n": f[2], "start": None, "end": None, "lastMotion": None, "pixels": None})
            if f[0] == "start":
                e["start"] = float(f[1])
                e["pixels"] = int(f[3]) if len(f) > 3 and f[3].isdigit() else None
            else:
                e["end"] = float(f[1])
                e["lastMotion"] = float(f[1]) - GAP
        return sorted((e for e in out.values() if e["start"] is not None), key=lambda e: e["start"])

    def cpu(self):
        """(process CPU seconds, {thread kind: CPU seconds}): kinds `capture` (its netcam
        thread, nc*: the HTTP stream, JPEG decode, conversion), `detect` (its motion loop, ml*)
        and `other`."""
        total = proc_cpu(f"/proc/{self.proc.pid}/stat")
        kinds = {"capture": 0.0, "detect": 0.0, "other": 0.0}
        for task in Path(f"/proc/{self.proc.pid}/task").iterdir():
            try:
                comm = (task / "comm").read_text().strip()
                t = proc_cpu(task / "stat")
            except (FileNotFoundError, ProcessLookupError):
                continue
            kinds["capture" if comm.startswith("nc") else "detect" if comm.startswith("ml") else "other"] += t
        return total, kinds

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)

    def conf_text(self):
        """Its config without this run's paths and port: what the section shows."""
        shown = []
        for k, v in self.settings.items():
            v = str(v)
            if k in ("log_file", "target_dir"):
                v = "TMPDIR/…"
            elif k == "netcam_url":
                v = re.sub(r"127\.0\.0\.1:\d+", "127.0.0.1:PORT", v)
            elif k == "mask_file":
                v = "caption.pgm"
            elif k.startswith("on_event"):
                v = re.sub(r"^\S+", "hook.sh", v)
            shown.append(f"{k} {v}")
        return shown


TICK = os.sysconf("SC_CLK_TCK")


def proc_cpu(stat_path):
    fields = Path(stat_path).read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK  # utime + stime


# ---------------------------------------------------------------- Viewfinder's events and CPU

class ViewfinderEvents:
    """A reader thread on `GET /api/events?camera=ID`: every `event: motion`'s data, with the time
    (Unix seconds) it reached this client."""

    def __init__(self, port, camera):
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        self.conn.connect()
        self.sock = self.conn.sock  # the response takes it over from the connection
        self.conn.request("GET", f"/api/events?camera={camera}")
        self.r = self.conn.getresponse()
        if self.r.status != 200 or "text/event-stream" not in (self.r.getheader("Content-Type") or ""):
            raise RuntimeError(f"GET /api/events: {self.r.status}")
        self.sock.settimeout(None)
        self.received, self.closing, self.failure = [], threading.Event(), []
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self):
        name, data = None, []
        try:
            while True:
                line = self.r.readline()
                if not line:
                    break
                line = line.decode().rstrip("\r\n")
                if line.startswith("event:"):
                    name = line[6:].strip()
                elif line.startswith("data:"):
                    data.append(line[5:].lstrip())
                elif line == "":
                    if name == "motion" and data:
                        self.received.append((time.time(), json.loads("\n".join(data))))
                    name, data = None, []
        except Exception as e:  # noqa: BLE001 (reported below unless we closed it)
            if not self.closing.is_set():
                self.failure.append(e)
        if not self.closing.is_set() and not self.failure:
            self.failure.append(RuntimeError("the server closed the event stream"))

    def events(self):
        """Its events as Motion's are kept: start (when `started` reached us), end (when `ended`
        did), lastMotion (the ended event's last moving frame), firstFrame (the started event's
        first moving frame), score (the peak's, else the ended event's)."""
        out = {}
        for at, d in list(self.received):
            key = d.get("start", d.get("at"))
            e = out.setdefault(key, {"n": key, "start": None, "end": None, "lastMotion": None,
                                     "firstFrame": key, "score": None})
            if d.get("event") == "started":
                e["start"] = at
            elif d.get("event") == "ended":
                e["end"] = at
                e["lastMotion"] = d.get("end", d.get("at"))
                e["score"] = (d.get("peak") or {}).get("score", d.get("score"))
        return sorted((e for e in out.values() if e["start"] is not None), key=lambda e: e["start"])

    def close(self):
        self.closing.set()
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.thread.join(5)
        self.r.close()
        self.conn.close()


def detect_seconds(port, camera):
    """viewfinder_motion_detect_seconds_total of `camera` (CPU seconds in the detector), or None."""
    text = get(port, "/metrics", timeout=10).decode()
    m = re.search(rf'^viewfinder_motion_detect_seconds_total\{{camera="{re.escape(camera)}"\}} (\S+)', text, re.M)
    return float(m.group(1)) if m else None


# ---------------------------------------------------------------- scoring

def in_progress(e, t):
    """The event had started and not yet been declared over at `t`."""
    return e["start"] < t and (e["end"] is None or e["end"] > t)


def score_still(events, t0, t1):
    """A still scene: every event starting in [t0, t1] is false, and so is one under way at t0."""
    false = [e for e in events if t0 <= e["start"] <= t1]
    carried = [e for e in events if in_progress(e, t0)]
    return dict(events=len(false) + len(carried), found=None, missed=None, false=len(false) + len(carried),
                carried=len(carried), delays=[])


def score_walkers(events, walkers, t0, t1):
    """Each walker found by the first unused event starting in [startsAt, endsAt + MATCH_AFTER];
    events in [t0, t1] that found none are false (and one under way at t0 too)."""
    used, delays, missed = set(), [], []
    for w in walkers:
        hit = next((e for e in events if id(e) not in used
                    and w["startsAt"] <= e["start"] <= w["endsAt"] + MATCH_AFTER), None)
        if hit is None:
            inside = next((e for e in events if in_progress(e, w["startsAt"])), None)
            missed.append(dict(walker=w, inside=inside))
            continue
        used.add(id(hit))
        delays.append(hit["start"] - w["startsAt"])
    false = [e for e in events if t0 <= e["start"] <= t1 and id(e) not in used]
    carried = [e for e in events if in_progress(e, t0)]
    return dict(events=len([e for e in events if t0 <= e["start"] <= t1]), found=len(walkers) - len(missed),
                missed=len(missed), missedDetail=missed, false=len(false) + len(carried), carried=len(carried),
                delays=delays)


# ---------------------------------------------------------------- the run

def write_config(work, with_motion=True):
    config = {
        "server": {"port": 0, "publicDirectory": str(ROOT / "Public")},
        "capture": {"directory": str(work / "photos")},
        "recording": {"directory": str(work / "movies")},
        "synthetic": {"noise": True},
    }
    if with_motion:
        config["motion"] = {"enabled": True, "record": False}
    path = work / "config.json"
    path.write_text(json.dumps(config, indent=1))
    return path


def supports_motion(work):
    """Whether the release build takes the `motion` config (False: built before motion detection)."""
    cfg = write_config(work)
    r = subprocess.run([str(BIN), "check-config", "--config", str(cfg)], capture_output=True, text=True, timeout=30)
    return r.returncode == 0


def start(work, with_motion=True):
    """The server at 1280x720, 30 fps: (process, port, camera id)."""
    cfg = write_config(work, with_motion)
    return start_server(["--config", str(cfg), "--cameras", "synthetic", "--preset", SIZE, "--fps", str(FPS)],
                        work, lambda port: running_session(port, SIZE)["camera"]["id"])


class Run:
    """The server, the Motions and the event reader for one run, and the CPU samples at each
    scene's edges."""

    def __init__(self, work, port, proc, camera, motions, vf_events):
        self.work, self.port, self.proc, self.camera = work, port, proc, camera
        self.motions, self.vf = motions, vf_events
        self.api = f"/api/cameras/{camera}"

    def sample(self):
        return dict(t=time.monotonic(), motion={m.name: m.cpu() for m in self.motions},
                    detect=detect_seconds(self.port, self.camera), server=proc_cpu(f"/proc/{self.proc.pid}/stat"))

    def exposure(self, body):
        return post(self.port, f"{self.api}/session/exposure", body)

    def torch(self, mode):
        return post(self.port, f"{self.api}/session/torch", {"mode": mode})

    def settle(self):
        t = time.time()
        time.sleep(SETTLE)
        return t

    def window(self, name, expect, body):
        """Runs `body()` (which returns (t0, t1, walkers)) between two CPU samples."""
        s0 = self.sample()
        t0, t1, walkers = body()
        s1 = self.sample()
        return dict(name=name, expect=expect, t0=t0, t1=t1, walkers=walkers, cpu0=s0, cpu1=s1)


def auto_exposure(run):
    """Duration × ISO that continuous exposure settled on (the picture's brightness)."""
    e = get_json(run.port, f"{run.api}/session")["exposure"]
    return e["duration"] * e["iso"], e


def get_json(port, path):
    return json.loads(get(port, path, timeout=10))


def still_scene(run, iso, ev, caps):
    d = min(max(ev / iso, caps["exposureDuration"]["min"]), caps["exposureDuration"]["max"])
    run.exposure({"mode": "custom", "iso": iso, "duration": round(d, 6)})
    settled = run.settle()

    def body():
        t0 = time.time()
        time.sleep(STILL)
        return t0, time.time(), []
    w = run.window(f"still, ISO {iso}", "0 events", body)
    return dict(w, settleFrom=settled, setting=f"custom exposure ISO {iso}, {d * 1000:.2f} ms")


def walker_scene(run):
    run.exposure({"mode": "continuous", "bias": 0})
    settled = run.settle()

    def body():
        t0 = time.time()
        walkers = []
        base = time.time() + 2.0
        for i in range(WALKERS):
            due = base + i * PERIOD
            time.sleep(max(0.0, due - 1.0 - time.time()))  # staged 1 s ahead
            answer = post(run.port, f"{run.api}/scene",
                          {"walker": {"after": round(due - time.time(), 3), "duration": WALK, "size": WALKER_SIZE}})
            w = answer.get("walker") or get_json(run.port, f"{run.api}/scene").get("walker")
            if not w or "startsAt" not in w:
                raise RuntimeError(f"walker not staged: {answer}")
            walkers.append(dict(startsAt=float(w["startsAt"]), endsAt=float(w["endsAt"])))
        time.sleep(max(0.0, walkers[-1]["endsAt"] + GAP + 3 - time.time()))
        return t0, time.time(), walkers
    w = run.window(f"{WALKERS} walkers", f"{WALKERS} events", body)
    return dict(w, settleFrom=settled, setting="continuous exposure")


def light_scene(run):
    run.exposure({"mode": "continuous", "bias": 0})
    run.torch("off")
    settled = run.settle()

    def body():
        t0 = time.time()
        for i, (what, value) in enumerate(STEPS):
            time.sleep(max(0.0, t0 + i * STEP - time.time()))
            if what == "torch":
                run.torch(value)
            else:
                run.exposure({"bias": value})
        time.sleep(max(0.0, t0 + len(STEPS) * STEP + GAP + 3 - time.time()))
        return t0, time.time(), []
    w = run.window("brightness steps", "0 events", body)
    steps = ", ".join(f"torch {v}" if k == "torch" else f"bias {v:+g}" for k, v in STEPS)
    return dict(w, settleFrom=settled, setting=f"continuous exposure; every {STEP:g} s: {steps}")


def bench_motion():
    work = Path(tempfile.mkdtemp(prefix="vf-bench-motion-"))
    motions, vf, p = [], None, None
    try:
        if not supports_motion(work):
            sys.exit(f"{BIN} has no motion detection (its config refuses `motion`): rebuild it "
                     "(swift build -c release --product viewfinder), or run with --motion-only")
        p, port, camera = start(work)
        caps = next(c for c in get_json(port, "/api/cameras")["cameras"] if c["id"] == camera)["capabilities"]
        post(port, f"/api/cameras/{camera}/scene", {"moving": False})
        vf = ViewfinderEvents(port, camera)
        mask = work / "caption.pgm"
        masked = caption_mask(mask)
        url = f"http://127.0.0.1:{port}/cameras/{camera}/stream"
        for name, _, extra, _ in VARIANTS:
            extra = {k: (str(mask) if v == "MASK" else v) for k, v in extra.items()}
            motions.append(Motion(work, name, url, extra))
        for m in motions:
            m.wait_connected()
        run = Run(work, port, p, camera, motions, vf)
        time.sleep(WARMUP)
        ev, exposure0 = auto_exposure(run)
        scenes = [still_scene(run, 100, ev, caps), still_scene(run, 3200, ev, caps), walker_scene(run), light_scene(run)]
        time.sleep(1.0)
        for m in motions:
            if m.proc.poll() is not None:
                raise RuntimeError(f"motion {m.name} exited ({m.proc.returncode}) during the run: "
                                   f"{m.log_path.read_text()[-2000:]}")
        if vf.failure:
            raise RuntimeError(f"event stream: {vf.failure[0]}")
        state = get_json(port, f"/api/cameras/{camera}/session").get("motion")
        found = dict(viewfinder=vf.events(), **{m.name: m.events() for m in motions})
        confs = {m.name: m.conf_text() for m in motions}
        logs = {m.name: m.log_path.read_text()[-4000:] for m in motions}
    finally:
        for m in motions:
            m.stop()
        if vf is not None:
            vf.close()
        if p is not None:
            stop_server(p)
        shutil.rmtree(work, ignore_errors=True)
    return dict(scenes=scenes, events=found, confs=confs, logs=logs, state=state, exposure0=exposure0,
                ev=ev, masked=masked)


# ---------------------------------------------------------------- the section

def detectors():
    return [("viewfinder", "Viewfinder")] + [(name, label) for name, label, _, _ in VARIANTS]


def cpu_in(scene, name):
    """(CPU % of one core over the scene's window, {kind: %} or None) for a detector."""
    s0, s1 = scene["cpu0"], scene["cpu1"]
    dt = s1["t"] - s0["t"]
    if name == "viewfinder":
        if s0["detect"] is None or s1["detect"] is None:
            return None, None
        return (s1["detect"] - s0["detect"]) / dt * 100, None
    (a, ka), (b, kb) = s0["motion"][name], s1["motion"][name]
    return (b - a) / dt * 100, {k: (kb[k] - ka[k]) / dt * 100 for k in ka}


def fmt_delays(ds):
    if not ds:
        return "—"
    return f"{statistics.median(ds):.2f} / {max(ds):.2f}"


def markdown(r, started, load, took):
    ev = r["events"]
    lines = [
        HEADING,
        "",
        written_by("motion_compare.py", started, load, took),
        "",
        f"Server: `viewfinder --config FILE --cameras synthetic --preset {SIZE} --fps {FPS}`, FILE with "
        '`"motion": {"enabled": true, "record": false}` and `"synthetic": {"noise": true}`; the rear camera\'s '
        'own block held still (`POST /api/cameras/rear/scene {"moving": false}`), so what moves is what is '
        "staged. Its detector's events: `event: motion` on `GET /api/events?camera=rear`. Beside it for the "
        "whole run, fed the same frames at the same time: Motion 4.5 (Debian's `motion`, `motion -n -c CONF`) "
        "reading `http://127.0.0.1:PORT/cameras/rear/stream` (the MJPEG stream at quality 80; Motion's ffmpeg "
        "netcam decodes every JPEG and converts it to YUV 4:2:0), once per variant below; an event's start "
        "and end are the times its `on_event_start` / `on_event_end` command ran (`date +%s.%N`).",
        "",
        f"Scenes, in this order, each after {SETTLE:g} s for the detectors to settle on its settings (events "
        "that started then are in the settle column; one still under way when the window opens counts as "
        f"false): (a) still, {STILL:g} s at ISO 100 and {STILL:g} s at ISO 3200 (custom exposure, the "
        f"duration chosen so that ISO × duration is what continuous exposure had reached, "
        f"{r['exposure0']['iso']:g} × {r['exposure0']['duration'] * 1000:.2f} ms: the same brightness, only "
        f"the noise grows); (b) {WALKERS} walkers (`POST …/scene "
        f'{{"walker": {{"after": s, "duration": {WALK:g}, "size": {WALKER_SIZE:g}}}}}`: a person-shaped '
        f"figure half the frame high crossing left to right in {WALK:g} s), one every {PERIOD:g} s, under "
        "continuous exposure; a walker is found by the first event starting between its `startsAt` and "
        f"{MATCH_AFTER:g} s after its `endsAt`; other events in the window are false; delay: that start − "
        "`startsAt` (the figure's first frame at the left edge), when the detector said so (Motion's command "
        "ran; Viewfinder's `started` reached the client); (c) brightness steps with the scene still: "
        + ", ".join(f"torch {v}" if k == "torch" else f"bias {v:+g}" for k, v in STEPS)
        + f", one every {STEP:g} s under continuous exposure (then {GAP + 3} s more). CPU: over each "
        "window, in % of one core; Viewfinder's is its detector alone "
        "(`viewfinder_motion_detect_seconds_total`), Motion's its whole process (`/proc/PID/stat`), which "
        "also reads and decodes the stream.",
        "",
        "| scene | expected | detector | events | found | missed | false | settle | delay median / max, s | CPU % of a core |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    scored = {}
    for sc in r["scenes"]:
        for name, label in detectors():
            events = ev[name]
            if sc["walkers"]:
                s = score_walkers(events, sc["walkers"], sc["t0"], sc["t1"])
            else:
                s = score_still(events, sc["t0"], sc["t1"])
            s["settle"] = len([e for e in events if sc["settleFrom"] <= e["start"] < sc["t0"]])
            cpu, _ = cpu_in(sc, name)
            scored[(sc["name"], name)] = s
            found = "—" if s["found"] is None else f"{s['found']}/{len(sc['walkers'])}"
            missed = "—" if s["missed"] is None else str(s["missed"])
            false = f"{s['false']}" + (f" ({s['carried']} under way)" if s["carried"] else "")
            lines.append(f"| {sc['name']} | {sc['expect']} | {label} | {s['events']} | {found} | {missed} | "
                         f"{false} | {s['settle']} | {fmt_delays(s['delays'])} | "
                         f"{'n/a' if cpu is None else f'{cpu:.1f}'} |")
    lines += ["", "Scene settings: " + "; ".join(f"{sc['name']}: {sc['setting']}" for sc in r["scenes"]) + ".", ""]

    # CPU over the whole run (all windows), Motion split by thread.
    cpu_lines = ["| detector | CPU % of a core, all windows | of which |", "|---|---|---|"]
    total_t = sum(sc["cpu1"]["t"] - sc["cpu0"]["t"] for sc in r["scenes"])
    for name, label in detectors():
        if name == "viewfinder":
            parts = [(sc["cpu1"]["detect"], sc["cpu0"]["detect"]) for sc in r["scenes"]]
            if any(a is None or b is None for a, b in parts):
                cpu_lines.append(f"| {label} | n/a (no `viewfinder_motion_detect_seconds_total` in /metrics) | |")
                continue
            det = sum(a - b for a, b in parts) / total_t * 100
            srv = sum(sc["cpu1"]["server"] - sc["cpu0"]["server"] for sc in r["scenes"]) / total_t * 100
            cpu_lines.append(f"| {label} | {det:.1f} | detection only (the server's whole process: {srv:.1f}, "
                             "with capture, the synthetic scene and the JPEG encode of the stream Motion reads) |")
        else:
            tot = sum(sc["cpu1"]["motion"][name][0] - sc["cpu0"]["motion"][name][0] for sc in r["scenes"])
            kinds = {k: sum(sc["cpu1"]["motion"][name][1][k] - sc["cpu0"]["motion"][name][1][k] for sc in r["scenes"])
                     for k in ("capture", "detect", "other")}
            cpu_lines.append(
                f"| {label} | {tot / total_t * 100:.1f} | netcam thread (HTTP, JPEG decode, YUV 4:2:0) "
                f"{kinds['capture'] / total_t * 100:.1f}, motion loop (detection) {kinds['detect'] / total_t * 100:.1f}, "
                f"other {kinds['other'] / total_t * 100:.1f} |")
    lines += cpu_lines + [""]

    # Per-walker delays, and what was missed.
    walk = next(sc for sc in r["scenes"] if sc["walkers"])
    for name, label in detectors():
        s = scored[(walk["name"], name)]
        said = []
        if s["delays"]:
            said.append(f"delay per walker found (s): {', '.join(f'{d:.2f}' for d in s['delays'])}")
        if s["missedDetail"]:
            numbers = {id(w): i + 1 for i, w in enumerate(walk["walkers"])}
            said.append("missed walkers " + ", ".join(
                f"{numbers[id(m['walker'])]}" + (f" (inside an event begun {m['walker']['startsAt'] - m['inside']['start']:.1f} s "
                                                 "before it)" if m["inside"] else "") for m in s["missedDetail"]))
        if said:
            lines.append(f"{label}: " + "; ".join(said) + ".")
    vf_first = [e["firstFrame"] - w["startsAt"] for w in walk["walkers"] for e in ev["viewfinder"]
                if e.get("firstFrame") is not None and w["startsAt"] <= e["start"] <= w["endsAt"] + MATCH_AFTER]
    if vf_first:
        lines.append(f"Viewfinder's events' first moving frame (`start`), after `startsAt`: median "
                     f"{statistics.median(vf_first):.2f} s, max {max(vf_first):.2f} s (its `started` is sent once "
                     "the event is confirmed).")
    lines.append("")

    st = r["state"] or {}
    vf_settings = ", ".join(f"`{k}` {st[k]}" for k in ("threshold", "preRoll", "postRoll") if k in st)
    lines += [
        "Settings. Viewfinder: as shipped" + (f" ({vf_settings})" if vf_settings else "") + ". Motion: its "
        "built-in detection defaults (`threshold` 1500 changed pixels, `noise_level` 32 with `noise_tune` on, "
        "no `despeckle_filter`, `lightswitch_percent` 0 = off, `minimum_motion_frames` 1, `smart_mask_speed` 0) "
        f"but `event_gap` {GAP} (default 60: one event would span all walkers; an event ends {GAP} s after its "
        f"last motion) and `framerate` {FPS} (default 15: every frame of the 30 fps camera); web control and "
        "stream ports 0 (off), no pictures or movies. Variants:",
        "",
    ]
    for name, label, _, what in VARIANTS:
        lines.append(f"- {label}: {what}" + (f"; mask: {r['masked']} of the {WIDTH}x{HEIGHT} frame" if name == "tuned" else "")
                     + ".")
    lines += ["", "Motion's config (variant `tuned`; `defaults` lacks `mask_file` and `lightswitch_percent`), "
              "`hook.sh` appending `KIND $(date +%s.%N) EVENT PIXELS NOISE` to a file:", "", "```"]
    lines += r["confs"].get("tuned", next(iter(r["confs"].values())))
    lines += ["```", ""]
    return lines


# ---------------------------------------------------------------- --motion-only: the Motion half now

def motion_only():
    """Motion against any release build: the rear camera's block moves all the time (an event),
    then the view zooms 4x onto the still bars for 25 s (the event ends) and back (another). Prints
    what it read; writes nothing; fails unless each Motion reported an event that ended."""
    work = Path(tempfile.mkdtemp(prefix="vf-bench-motion-only-"))
    motions, p = [], None
    try:
        p, port, camera = start(work, with_motion=False)
        mask = work / "caption.pgm"
        caption_mask(mask)
        url = f"http://127.0.0.1:{port}/cameras/{camera}/stream"
        for name, _, extra, _ in VARIANTS:
            motions.append(Motion(work, name, url, {k: (str(mask) if v == "MASK" else v) for k, v in extra.items()}))
        for m in motions:
            m.wait_connected()
        t0 = time.time()
        c0 = {m.name: (m.cpu(), time.monotonic()) for m in motions}
        marks = [("block moving", time.time())]
        time.sleep(8)
        post(port, f"/api/cameras/{camera}/session/zoom", {"factor": 4})
        marks.append(("zoomed 4x (still)", time.time()))
        time.sleep(25)  # Motion as shipped takes a while to take the new picture for background
        post(port, f"/api/cameras/{camera}/session/zoom", {"factor": 1})
        marks.append(("zoom 1x (block moving)", time.time()))
        time.sleep(6)
        c1 = {m.name: (m.cpu(), time.monotonic()) for m in motions}
        print(f"Motion against {url} (camera {camera}, {SIZE} at {FPS} fps)")
        print("marks: " + ", ".join(f"{what} at +{t - t0:.1f} s" for what, t in marks))
        ok = True
        for m in motions:
            evs = m.events()
            (a, ka), ta = c0[m.name]
            (b, kb), tb = c1[m.name]
            dt = tb - ta
            print(f"\n[{m.name}] {len(evs)} events; CPU {(b - a) / dt * 100:.1f} % of a core "
                  f"(netcam thread {(kb['capture'] - ka['capture']) / dt * 100:.1f}, motion loop "
                  f"{(kb['detect'] - ka['detect']) / dt * 100:.1f}, other {(kb['other'] - ka['other']) / dt * 100:.1f})")
            for e in evs:
                end = f"end +{e['end'] - t0:.2f} s (last motion ≈ +{e['lastMotion'] - t0:.2f} s)" if e["end"] else "under way"
                print(f"  event {e['n']}: start +{e['start'] - t0:.2f} s, {e['pixels']} changed pixels; {end}")
            print("  config: " + "; ".join(m.conf_text()))
            ok &= bool(evs) and any(e["end"] for e in evs)
        return 0 if ok else 1
    finally:
        for m in motions:
            m.stop()
        if p is not None:
            stop_server(p)
        shutil.rmtree(work, ignore_errors=True)


def main():
    if not BIN.exists():
        sys.exit(f"{BIN} missing: swift build -c release --product viewfinder")
    if not shutil.which("motion"):
        sys.exit("motion missing: apt-get install --no-install-recommends motion (make bench installs it)")
    if sys.argv[1:] == ["--motion-only"]:
        return motion_only()
    r, started, load, took = timed(bench_motion)
    publish("motion_compare", markdown(r, started, load, took), took)


if __name__ == "__main__":
    sys.exit(main())
