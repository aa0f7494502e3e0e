#!/usr/bin/python3
"""A WebRTC viewer behind a slow link, for real (issue 38, item 7).

Headless Chromium runs in a network namespace of its own, joined to the server by a veth pair
whose server side is shaped by `tc tbf` at 1 Mbit/s with a queue bounded at 300 ms, as a home
router's uplink is (this kernel has no netem: delay and loss of their own need the VM's). The
server (the debug build) serves a synthetic 1280x720 camera at 30 fps with its sensor noise
and its timecode (the main stream needs its 2.2 Mbit/s cap) on the veth's address. The page's
WebRTC preview is read in the browser at each requestVideoFrameCallback: the frame's capture
time from its timecode against the time it was presented — glass to glass, on the one clock
of this machine.

1. Adaptive (the default): the viewer starts on the sub stream and probes the main one 2 s
   later; 8 s after connecting it must be on the sub stream, the page's badge must say so,
   and over the next 20 s the preview must keep >= 10 fps with glass-to-glass p50 <= 400 ms,
   and the page's own requests (over TCP, beside the media) take at most 8 KB/s of the link.
   Each second's frames, the link's drops and the page's TCP bytes are printed.
   Then the shaping is removed: the viewer must be back on the main stream within 30 s.
2. With `--compare` only: adaptation off (`webrtc.adaptive` false), the same link, the main
   stream alone. It checks nothing (it is the problem being solved: no frame gets through, and
   the page gives up WebRTC for MJPEG), so it is not part of `make test`: `make bench` runs both
   phases side by side with the release build (bench/slow_link.py) and writes their figures.

Needs root (namespaces, tc). Run by `make test`: /usr/bin/python3 Tests/live/test_slow_link.py
"""
import json
import os
import re
import select
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BINARY = Path(os.environ.get("VIEWFINDER_BINARY", ROOT / ".build/debug/viewfinder"))
NS = f"vfslow{os.getpid() % 100000}"
HOST_IF, NS_IF = f"vsh{os.getpid() % 100000}", f"vsn{os.getpid() % 100000}"
SERVER_IP, VIEWER_IP = "10.213.7.1", "10.213.7.2"
SHAPE = ["rate", "1mbit", "burst", "32kbit", "latency", "300ms"]

# In the browser: every presented frame's presentation time and age (from its timecode),
# kept until Python takes them; and the picture's size.
WATCH = r"""
const video = document.getElementById('live');
window.__frames = [];
const c = document.createElement('canvas'), g = c.getContext('2d', {willReadFrequently: true});
const step = (now, meta) => {
  if (video.videoWidth) {
    if (c.width !== video.videoWidth) { c.width = video.videoWidth; c.height = video.videoHeight; }
    g.drawImage(video, 0, 0);
    const rows = Math.max(8, Math.floor(c.height / 45)), px = g.getImageData(0, Math.floor(rows / 2), c.width, 1).data;
    const cell = (i) => { const x = Math.floor((i + 0.5) * c.width / 64) * 4; return (px[x] + px[x + 1] + px[x + 2]) / 3; };
    const white = cell(0), black = cell(1);
    if (white - black > 64) {
      let ms = 0;
      for (let i = 2; i < 50; i++) ms = ms * 2 + (cell(i) > (white + black) / 2 ? 1 : 0);
      const at = performance.timeOrigin + meta.presentationTime;
      window.__frames.push([at, at - ms, video.videoWidth]);
    }
  }
  video.requestVideoFrameCallback(step);
};
video.requestVideoFrameCallback(step);
"""


def run(*cmd, check=True):
    return subprocess.run(cmd, check=check, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def viewer(url, seconds):
    """In the namespace: the page in Chromium, a JSON line a second: frames presented (capture
    time, age ms, width) and the transport badge."""
    sys.path.insert(0, str(ROOT / "Tests/browser"))
    from test_page import browser
    # Ended by the test with SIGTERM: leave through `finally`, so Chromium goes with it.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    d = browser("--autoplay-policy=no-user-gesture-required")
    try:
        d.get(url)
        deadline = time.time() + 20
        while time.time() < deadline:
            if d.execute_script("return window.viewfinderPreview && window.viewfinderPreview.transport()") == "WebRTC":
                break
            time.sleep(0.2)
        d.execute_script(WATCH)
        end = time.time() + seconds
        while time.time() < end:
            time.sleep(1)
            frames = d.execute_script("const f = window.__frames; window.__frames = []; return f;")
            badge = d.execute_script("return window.viewfinderPreview.badge()")
            print(json.dumps({"t": time.time(), "frames": frames, "badge": badge}), flush=True)
    finally:
        d.quit()


class Server:
    def __init__(self, adaptive):
        self.dir = tempfile.mkdtemp(prefix="vf-slow-")
        config = Path(self.dir) / "config.json"
        config.write_text(json.dumps({
            "auth": "none", "server": {"host": SERVER_IP},
            "cameras": [{"id": "rear", "source": "synthetic", "position": "rear", "preset": "1280x720", "timecode": True}],
            "synthetic": {"noise": True, "microphone": False},
            "webrtc": {"adaptive": adaptive}, "rtsp": {"enabled": False},
            "capture": {"directory": str(Path(self.dir) / "photos")}, "recording": {"directory": str(Path(self.dir) / "movies")}}))
        self.proc = subprocess.Popen([str(BINARY), "--config", str(config), "--port", "0", "--public-directory", str(ROOT / "Public"),
                                      "--log-level", "info"], stdout=subprocess.PIPE, stderr=open(Path(self.dir) / "log", "w"))
        ready, _, _ = select.select([self.proc.stdout], [], [], 60)
        if not ready:
            self.stop()
            raise RuntimeError("viewfinder did not start in 60 s")
        self.port = int(re.search(r"http://[\d.]+:(\d+)", self.proc.stdout.readline().decode()).group(1))
        self.url = f"http://{SERVER_IP}:{self.port}/"

    def outputs(self):
        import urllib.request
        with urllib.request.urlopen(self.url + "api/session", timeout=10) as r:
            return {o["type"]: o for o in json.loads(r.read())["outputs"]}

    def log(self):
        return (Path(self.dir) / "log").read_text(errors="replace")

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        shutil.rmtree(self.dir, ignore_errors=True)


def link_up():
    run("ip", "netns", "add", NS)
    run("ip", "link", "add", HOST_IF, "type", "veth", "peer", "name", NS_IF)
    run("ip", "link", "set", NS_IF, "netns", NS)
    run("ip", "addr", "add", f"{SERVER_IP}/24", "dev", HOST_IF)
    run("ip", "link", "set", HOST_IF, "up")
    run("ip", "netns", "exec", NS, "ip", "addr", "add", f"{VIEWER_IP}/24", "dev", NS_IF)
    run("ip", "netns", "exec", NS, "ip", "link", "set", NS_IF, "up")
    run("ip", "netns", "exec", NS, "ip", "link", "set", "lo", "up")


def link_down():
    run("ip", "link", "del", HOST_IF, check=False)
    run("ip", "netns", "del", NS, check=False)


def shape(on):
    if on:
        run("tc", "qdisc", "replace", "dev", HOST_IF, "root", "tbf", *SHAPE)
    else:
        run("tc", "qdisc", "del", "dev", HOST_IF, "root", check=False)


def start_viewer(server, seconds):
    return subprocess.Popen(["ip", "netns", "exec", NS, sys.executable, __file__, "--viewer", server.url, str(seconds)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def joined_viewer(server, seconds):
    """A viewer whose WHEP session reached the server within 45 s, or None. A browser that could
    not start (it has failed to, once, under make test's load) is started again, once; what it
    said is printed."""
    for attempt in range(2):
        proc = start_viewer(server, seconds)
        if wait_for(lambda: stream_of(server) is not None or proc.poll() is not None, 45) and proc.poll() is None:
            return proc
        proc.terminate()
        try:
            _, err = proc.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            _, err = proc.communicate()
        print(f"the viewer (attempt {attempt + 1}) did not join; it said:\n" + "\n".join((err or "").splitlines()[-15:]))
    return None


def lines(proc, until):
    """The viewer's JSON lines until `until` (a time) or its end."""
    out = []
    while time.time() < until:
        ready, _, _ = select.select([proc.stdout], [], [], max(0.0, until - time.time()))
        if not ready:
            break
        line = proc.stdout.readline()
        if not line:
            break
        sample = json.loads(line)
        sample.update(link())
        out.append(sample)
    return out


def link():
    """The shaped link's counters now: packets the queue dropped, and bytes the server has sent
    the page over TCP (its API calls and pictures, beside the WebRTC media)."""
    st = run("tc", "-s", "qdisc", "show", "dev", HOST_IF, check=False).stdout
    m = re.search(r"\(dropped (\d+),", st)
    tcp = run("ss", "-tinH", "dst", VIEWER_IP, check=False).stdout
    return {"dropped": int(m.group(1)) if m else 0, "tcp": sum(int(x) for x in re.findall(r"bytes_sent:(\d+)", tcp))}


def per_second(window, key):
    """Each second's increase of a counter (TCP's per connection: a closed one only resets it)."""
    return " ".join(str(max(0, b[key] - a[key])) for a, b in zip(window, window[1:]))


def figures(samples):
    frames = [f for s in samples for f in s["frames"]]
    seconds = len(samples)
    ages = sorted(f[1] for f in frames)
    fps = len(frames) / seconds if seconds else 0
    p50 = statistics.median(ages) if ages else float("inf")
    p95 = ages[int(len(ages) * 0.95)] if ages else float("inf")
    return fps, p50, p95


def stream_of(server):
    o = server.outputs()
    if o["liveSub"]["clients"].get("webrtc"):
        return "sub"
    if o["live"]["clients"].get("webrtc"):
        return "main"
    return None


def wait_for(cond, timeout):
    end = time.time() + timeout
    while time.time() < end:
        if cond():
            return True
        time.sleep(0.25)
    return False


def adaptive_phase():
    """(failures, figures): figures are the shaped window's fps, p50, p95 and how long the viewer
    took to be back on the main stream once the link was restored (None: not within 30 s)."""
    server = Server(adaptive=True)
    failures, result = [], {}
    try:
        shape(True)
        proc = joined_viewer(server, 90)
        if proc is None:
            failures.append("the page's WebRTC viewer never reached the server")
            return failures, result
        connected = time.time()
        # It starts on the sub stream and probes the main one after 2 s of quiet: on this link
        # the probe fails and it is back on the sub stream within seconds.
        lines(proc, connected + 8)
        if not wait_for(lambda: stream_of(server) == "sub", 5):  # (a move in progress is on neither)
            failures.append(f"8 s after connecting the viewer is on the {stream_of(server)} stream, not the sub stream")
        # 20 s of it: a viewer who stays gets a probe at most every 20 s, which may fall within.
        window = lines(proc, time.time() + 20)
        fps, p50, p95 = figures(window)
        result.update(fps=fps, p50=p50, p95=p95)
        badges = {s["badge"] for s in window}
        print(f"adaptive, 1 Mbit/s: {fps:.1f} fps, glass-to-glass p50 {p50:.0f} ms, p95 {p95:.0f} ms; badge {sorted(badges)}")
        print("adaptive: frames presented each second: " + " ".join(str(len(s["frames"])) for s in window))
        print("adaptive: packets the link dropped each second: " + per_second(window, "dropped"))
        print("adaptive: bytes to the page over TCP each second: " + per_second(window, "tcp"))
        sub = server.outputs()["liveSub"]
        print(f"adaptive: the sub stream's output: {json.dumps({k: sub.get(k) for k in ('framesIn', 'framesDropped', 'msPerFrame', 'viewers')})}")
        if fps < 10:
            failures.append(f"{fps:.1f} fps on the shaped link (goal >= 10)")
        if p50 > 400:
            failures.append(f"glass-to-glass p50 {p50:.0f} ms on the shaped link (goal <= 400)")
        # The page's own requests (its state every 2 s: ~3 KB) leave the link to the preview; a
        # hidden tile's full-size snapshot every 2 s once took a sixth of it, in bursts that
        # overflowed the queue and cost the preview a keyframe's worth of frames each time.
        tcp_rate = sum(max(0, b["tcp"] - a["tcp"]) for a, b in zip(window, window[1:])) / max(1, len(window) - 1)
        if tcp_rate > 8000:
            failures.append(f"the page took {tcp_rate / 1000:.1f} KB/s of the link over TCP (goal <= 8)")
        if "WebRTC · sub" not in badges:
            failures.append(f"the badge never said the sub stream: {sorted(badges)}")
        shape(False)
        restored = time.time()
        back = wait_for(lambda: stream_of(server) == "main", 30)
        result["back"] = time.time() - restored if back else None
        print(f"adaptive: link restored; back on the main stream: {back} after {time.time() - restored:.1f} s")
        if not back:
            failures.append("not back on the main stream within 30 s of the link's restoring")
        proc.terminate()
        proc.wait(20)
        moves = [l for l in server.log().splitlines() if "WHEP session" in l and "stream (" in l]
        print("adaptive: the server's moves:\n  " + "\n  ".join(m.split("[ViewfinderApp] ")[-1] for m in moves))
    finally:
        shape(False)
        if failures:
            print("the server's log, last lines:\n" + "\n".join(server.log().splitlines()[-30:]))
        server.stop()
    return failures, result


def fixed_phase():
    """The shaped window's fps, p50 and p95 with adaptation off, or None if no viewer joined."""
    server = Server(adaptive=False)
    try:
        shape(True)
        proc = joined_viewer(server, 25)
        if proc is None:
            print("adaptation off: the viewer never reached the server")
            return None
        lines(proc, time.time() + 3)
        window = lines(proc, time.time() + 15)
        fps, p50, p95 = figures(window)
        print(f"adaptation off, 1 Mbit/s, the main stream: {fps:.1f} fps, glass-to-glass p50 {p50:.0f} ms, p95 {p95:.0f} ms")
        proc.terminate()
        proc.wait(20)
        return {"fps": fps, "p50": p50, "p95": p95}
    finally:
        shape(False)
        server.stop()


def in_namespace(body):
    """body() with the namespace and its veth up, torn down after whatever happens."""
    if os.geteuid() != 0:
        sys.exit("test_slow_link: needs root (a network namespace and tc)")
    link_down()
    link_up()
    try:
        return body()
    finally:
        link_down()


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "--viewer":
        viewer(sys.argv[2], float(sys.argv[3]))
        return
    compare = "--compare" in sys.argv[1:]

    def both():
        failures, _ = adaptive_phase()
        if compare:
            fixed_phase()
        return failures
    failures = in_namespace(both)
    if failures:
        print("FAIL:\n  " + "\n  ".join(failures))
        sys.exit(1)
    print("test_slow_link: passed")


if __name__ == "__main__":
    main()
