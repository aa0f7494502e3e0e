"""What the benchmarks share: the release server (.build/release/viewfinder, or a binary given)
started from a temporary config, its port read from the first line it
prints, and stopped; its HTTP API (GET, JSON GET and POST, the session); the C viewer
bench/out/viewers and the fps it counted; a measurement window with one viewer on `/stream` (the
server's utime+stime from /proc/PID/stat over SECONDS after the viewer's 1 s warm-up, `stream.fps`
sampled once a second) and the summary of a pair of windows (without / with the feature measured)
over the runs; the CPU time of a child process (RUSAGE_CHILDREN); and the run around a benchmark:
its binaries checked, the load average before and after, its section's "Written by" line, the
section printed and put into bench/RESULTS.md.

A process's CPU seconds and threads and the machine's description come from bench/procfs.py.
"""
import json
import re
import resource
import select
import statistics
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from procfs import cpu_seconds, machine, threads  # noqa: E402  (bench/procfs.py)
import results  # noqa: E402  (bench/results.py: a section of RESULTS.md)

ROOT = Path(__file__).resolve().parent.parent
BIN = ROOT / ".build/release/viewfinder"
VIEWERS = ROOT / "bench/out/viewers"


# ---------------------------------------------------------------- HTTP

def get(port, path, timeout=5):
    """The body (bytes) of a GET."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=timeout) as r:
        return r.read()


def request(port, path, body=None, timeout=10):
    """(status, parsed JSON) of a GET, or of a POST when `body` is given (b"" for none)."""
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=body,
                                 method="GET" if body is None else "POST")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"null")


def post(port, path, obj):
    """The parsed answer to `obj` POSTed as JSON; RuntimeError unless the status is 200."""
    status, body = request(port, path, json.dumps(obj).encode())
    if status != 200:
        raise RuntimeError(f"POST {path}: {status} {body}")
    return body


def session(port):
    return request(port, "/api/session")[1]


# ---------------------------------------------------------------- the server

def start_server(args, workdir, ready=lambda port: None, *, binary=None, log_level="warning",
                 stderr=subprocess.DEVNULL, timeout=30):
    """Starts the server (`binary`, else the release build) with `args` and `--log-level` in
    `workdir`, reads its port from the first line it prints (within `timeout` s), then returns
    (process, port, ready(port)): `ready` waits until the server is ready for the benchmark (and
    may measure: its answer is returned). `stderr` is where its log goes. The process is stopped
    if any of it fails. Every benchmark starts the server here (bench/v4l2.py excepted: it runs
    µStreamer and viewfinder through one command line of its own, on a fixed port in the VM)."""
    p = subprocess.Popen([str(binary or BIN), *args, "--log-level", log_level],
                         stdout=subprocess.PIPE, stderr=stderr, cwd=workdir)
    try:
        ready_, _, _ = select.select([p.stdout], [], [], timeout)
        line = p.stdout.readline().decode() if ready_ else ""
        m = re.search(r"127\.0\.0\.1:(\d+)", line)
        if not m:
            raise RuntimeError(f"viewfinder did not start: {line!r}")
        port = int(m.group(1))
        return p, port, ready(port)
    except BaseException:
        stop_server(p)
        raise


def encoded_by_camera(port):
    """viewfinder_frames_encoded_total by camera, from /metrics."""
    text = get(port, "/metrics", timeout=10).decode()
    return {m.group(1): int(float(m.group(2)))
            for m in re.finditer(r'^viewfinder_frames_encoded_total\{camera="([^"]+)"\} (\S+)', text, re.M)}


def encoded(port):
    """viewfinder_frames_encoded_total summed over the cameras."""
    return sum(encoded_by_camera(port).values())


def many_viewers_config(work, name, quality):
    """A config file `work/name` for a server many local viewers watch: a free port, the page,
    `server.maxConnectionsPerAddress` 1000 (they all come from 127.0.0.1), photos under `work`,
    `stream.quality`."""
    path = work / name
    path.write_text(json.dumps({
        "server": {"port": 0, "publicDirectory": str(ROOT / "Public"), "maxConnectionsPerAddress": 1000},
        "capture": {"directory": str(work / "photos")},
        "stream": {"quality": quality},
    }, indent=1))
    return path


def wait_until(probe, done, failure, timeout=30):
    """probe() every 50 ms until done(its result), which is returned; after `timeout` s,
    RuntimeError(failure(the last result))."""
    deadline = time.monotonic() + timeout
    while True:
        x = probe()
        if done(x):
            return x
        if time.monotonic() > deadline:
            raise RuntimeError(failure(x))
        time.sleep(0.05)


def running_session(port, size):
    """The session once it is running at `size` (WxH)."""
    return wait_until(lambda: session(port),
                      lambda s: s["state"] == "running" and f"{s['format']['width']}x{s['format']['height']}" == size,
                      lambda s: f"session not running at {size}: {s['state']} {s['format']}")


def stop_server(p):
    p.terminate()
    try:
        p.wait(10)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait(10)


# ---------------------------------------------------------------- viewers and windows

def viewer(port, seconds, path=None):
    """bench/out/viewers with one MJPEG viewer on `path` (by default /stream) for `seconds`."""
    return subprocess.Popen([str(VIEWERS), str(port), "1", str(seconds), *([path] if path else [])],
                            stdout=subprocess.PIPE, text=True)


def viewer_fps(v):
    """The median fps a finished viewer counted, 0 if its stream did not stay open."""
    r = json.loads(v.communicate(timeout=30)[0])
    return r["fpsMedian"] if r["open"] else 0.0


def window(p, port, seconds, counter, sample=lambda s: None):
    """One window with one viewer on /stream: the server's CPU in % of one core over `seconds`
    after the viewer's 1 s warm-up; the viewer's fps; the lowest `stream.fps` in the session,
    sampled once a second in the window, and `sample(session)` at each of those times
    (`samples`); `counter(port)` per second over the window (`perSecond`); the session after
    the window; the server's threads."""
    v = viewer(port, seconds + 0.5)
    try:
        time.sleep(1.0)  # the viewer's own warm-up second
        n0 = counter(port)
        c0, t0 = cpu_seconds(p.pid), time.monotonic()
        stream_fps, samples = [], []
        end = t0 + seconds
        while (left := end - time.monotonic()) > 0:
            time.sleep(min(1.0, left))
            if end - time.monotonic() > 0.05:
                s = session(port)
                stream_fps.append(s["stream"]["fps"])
                samples.append(sample(s))
        c1, t1 = cpu_seconds(p.pid), time.monotonic()
        n1 = counter(port)
        s1 = session(port)
        nthreads = threads(p.pid)
        fps = viewer_fps(v)
    finally:
        if v.poll() is None:
            v.kill()
            v.wait(10)
    time.sleep(0.5)  # let the closed viewer drain
    return dict(cpu=(c1 - c0) / (t1 - t0) * 100, viewerFps=fps,
                streamFpsMin=min(stream_fps) if stream_fps else s1["stream"]["fps"],
                perSecond=(n1 - n0) / (t1 - t0), samples=samples, session=s1, threads=nthreads)


def paired(without, with_):
    """The preview's figures of two windows on one server, without and with the feature measured."""
    return dict(viewerFps=(without["viewerFps"], with_["viewerFps"]),
                streamFpsMin=(without["streamFpsMin"], with_["streamFpsMin"]),
                threads=(without["threads"], with_["threads"]))


def paired_summary(rs):
    """Those of `paired` over the runs `rs`: median, lowest and each run's viewer fps, the lowest
    stream.fps, the most threads; each a (without, with) pair."""
    med = statistics.median
    return dict(viewerFps=(med(r["viewerFps"][0] for r in rs), med(r["viewerFps"][1] for r in rs)),
                viewerFpsMin=(min(r["viewerFps"][0] for r in rs), min(r["viewerFps"][1] for r in rs)),
                viewerFpsRuns=([r["viewerFps"][0] for r in rs], [r["viewerFps"][1] for r in rs]),
                streamFpsMin=(min(r["streamFpsMin"][0] for r in rs), min(r["streamFpsMin"][1] for r in rs)),
                threads=(max(r["threads"][0] for r in rs), max(r["threads"][1] for r in rs)))


def preview_kept(rows, fps, label, feature, sharing):
    """The paragraph on the preview's rate over `rows` (each with `paired_summary`'s figures):
    where it fell below `fps`, or that it kept it. `label(row)` names a row's case, `feature` is
    what the second window had ("recording"), `sharing` who shares the 2 cores."""
    slow = [r for r in rows if min(r["viewerFpsMin"]) < fps - 1 or min(r["streamFpsMin"]) < fps - 2]
    if slow:
        return ["The preview fell below 30 fps in: " + "; ".join(
            f"{label(r)} (viewer's lowest run {r['viewerFpsMin'][0]:.2f} without, "
            f"{r['viewerFpsMin'][1]:.2f} with {feature}; stream fps down to {r['streamFpsMin'][0]:g} / "
            f"{r['streamFpsMin'][1]:g})" for r in slow) + ". See the load average: the 2 cores are shared "
                f"by {sharing}.", ""]
    low = min(rows, key=lambda r: min(r["viewerFpsMin"]))
    return [f"The preview kept its 30 fps with {feature} as without: the viewer's lowest run was "
            f"{min(low['viewerFpsMin']):.2f} fps ({label(low)}, runs without {feature} "
            f"{', '.join(f'{f:.2f}' for f in low['viewerFpsRuns'][0])}, with "
            f"{', '.join(f'{f:.2f}' for f in low['viewerFpsRuns'][1])}), `stream.fps` never under "
            f"{min(min(r['streamFpsMin']) for r in rows):g}.", ""]


# ---------------------------------------------------------------- references

def child_cpu(cmd, **run):
    """(CPU seconds, user+system by RUSAGE_CHILDREN, of `subprocess.run(cmd, **run)`; its result)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run(cmd, **run)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), out


# ---------------------------------------------------------------- the run

def require_binaries():
    """Exits with how to make them when bench/out/viewers or the release server is missing."""
    if not VIEWERS.exists():
        sys.exit("bench/out/viewers missing: run bench/run (make bench), or "
                 "gcc -O2 -Wall -o bench/out/viewers bench/viewers.c")
    if not BIN.exists():
        sys.exit(f"{BIN} missing: swift build -c release --product viewfinder")


def load_average():
    """The 1-minute load average, as /proc/loadavg gives it."""
    return Path("/proc/loadavg").read_text().split()[0]


def timed(bench):
    """Runs bench(): (what it returned, when it started (UTC), (load average before, after),
    the seconds it took)."""
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    load0 = load_average()
    t = time.monotonic()
    out = bench()
    took = time.monotonic() - t
    return out, started, (load0, load_average()), took


def written_by(script, started, load, took=None, make="make bench"):
    """A section's line on when, where and on how loaded a machine `bench/{script}` ran."""
    when = started if took is None else f"{started}, {took:.0f} s"
    return (f"Written by `{make}` or `python3 bench/{script}` ({when}). Machine: {machine()}. "
            f"Load average before / after: {load[0]} / {load[1]}.")


def publish(name, section, took):
    """Prints `section` (lines, its heading first) and puts it into bench/RESULTS.md."""
    print("\n".join(section))
    print(f"{name}: {took:.0f} s", file=sys.stderr)
    results.write_section(section[0], section)
