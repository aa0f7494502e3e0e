#!/usr/bin/env python3
"""The threads of a server with four cameras (issue 36, item 3): one execution model. Four
synthetic cameras, each started in its own right, each with an MJPEG viewer, a live.mp4
client, a photo taken, motion detection and a metadata scan on, and the fleet's ring on: every
output of every camera has worked. Then the process's threads are listed by name
(/proc/PID/task/*/comm) and the test asserts what ARCHITECTURE.md says remains:

- one capture thread per camera (`synthetic-<id>`, `v4l2-<device>`), and one per microphone
  (`mic-<device>`: the synthetic cameras' microphone, issue 37);
- the shared pool (`encode-N`, one per core) — every output's work, whatever the camera;
- libmicrohttpd's polling threads, GStreamer's, Dispatch's and the runtime's own;
- no thread named after an output of a camera (`rear-photo`, `front-live`, `motion-snapshot`…).

Prints the count by kind, the figure ARCHITECTURE.md and the issue's note quote.

Usage: test_threads.py [BINARY]
"""
import collections, json, os, re, select, shutil, socket, subprocess, sys, tempfile, time, urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BINARY = Path(sys.argv[1] if len(sys.argv) > 1 else os.environ.get("VIEWFINDER_BINARY", ROOT / ".build/debug/viewfinder"))
CAMERAS = ["rear", "front", "desk", "door"]
# Thread names an output's own thread had (before issue 36): none may remain.
OUTPUT_SUFFIXES = ("-photo", "-live", "-ring", "-metadata", "-movie", "-encode")


def start_server(directory):
    config = Path(directory) / "config.json"
    config.write_text(json.dumps({
        "capture": {"directory": f"{directory}/p"}, "recording": {"directory": f"{directory}/m"},
        "cameras": [{"id": c, "source": "synthetic", "position": "rear" if i == 0 else "front" if i == 1 else "external",
                     "autostart": True} for i, c in enumerate(CAMERAS)],
        "mqtt": None,
    }))
    proc = subprocess.Popen([str(BINARY), "--config", str(config), "--port", "0", "--rtsp-port", "0",
                             "--preset", "640x480", "--log-level", "error"],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    ready, _, _ = select.select([proc.stdout], [], [], 60)
    if not ready:
        proc.kill()
        raise RuntimeError("viewfinder did not start in 60 s")
    port = int(re.search(rb"127\.0\.0\.1:(\d+)", proc.stdout.readline()).group(1))
    return proc, port


def http(port, method, path, body=None):
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=data, method=method,
                                     headers={"Content-Type": "application/json"} if data else {})
    with urllib.request.urlopen(request, timeout=30) as r:
        return r.status, r.read()


def read_until(sock, needle, limit, deadline):
    """Reads from sock until `needle` was seen `limit` times (bounded by `deadline`)."""
    buf = b""
    while buf.count(needle) < limit:
        if time.monotonic() > deadline:
            raise TimeoutError(f"{needle!r} x{limit}")
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError("closed")
        buf += chunk
    return buf


def open_stream(port, path):
    s = socket.create_connection(("127.0.0.1", port), timeout=20)
    s.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
    return s


def threads(pid):
    names = []
    for t in os.listdir(f"/proc/{pid}/task"):
        try:
            names.append(Path(f"/proc/{pid}/task/{t}/comm").read_text().strip())
        except FileNotFoundError:
            pass  # a thread that ended while listed
    return names


def kind(name):
    if re.fullmatch(r"encode-\d+", name):
        return "pool"
    if name.startswith(("synthetic-", "v4l2-", "image-")):
        return "capture"
    if name.startswith("mic-"):
        return "microphone"
    if name.startswith("mhd") or name.startswith("MHD"):
        return "libmicrohttpd"
    return name


def main():
    directory = tempfile.mkdtemp(prefix="vf-threads-")
    proc, port = start_server(directory)
    sockets = []
    try:
        deadline = time.monotonic() + 60
        for c in CAMERAS:
            # Every output at work: viewers, a photo, motion, a scan, the ring.
            http(port, "POST", f"/api/cameras/{c}/session/motion", {"enabled": True})
            http(port, "POST", f"/api/cameras/{c}/session/metadata", {"types": ["qr"]})
            sockets.append(open_stream(port, f"/cameras/{c}/stream"))
            sockets.append(open_stream(port, f"/cameras/{c}/live.mp4"))
            status, _ = http(port, "POST", f"/api/cameras/{c}/session/capture")
            assert status == 200, status
        for s in sockets[0::2]:
            read_until(s, b"--viewfinderframe", 3, deadline)
        for s in sockets[1::2]:
            read_until(s, b"moof", 3, deadline)
        names = threads(proc.pid)
        counts = collections.Counter(kind(n) for n in names)
        print(f"threads with {len(CAMERAS)} cameras at work: {len(names)}")
        for k, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
            print(f"  {n:3d}  {k}")
        own = [n for n in names if any(n.startswith(c) and n.endswith(OUTPUT_SUFFIXES) for c in CAMERAS)
               or n.startswith(("motion-snapshot", "metadata", "movie"))]
        assert not own, f"outputs started threads of their own: {sorted(own)}"
        assert counts["capture"] == len(CAMERAS), f"one capture thread per camera: {counts['capture']}"
        assert counts["microphone"] == len(CAMERAS), f"one capture thread per microphone: {counts['microphone']}"
        assert counts["pool"] == os.cpu_count(), f"one pool thread per core: {counts['pool']}"
        print("1 passed, 0 failed")
    finally:
        for s in sockets:
            s.close()
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        shutil.rmtree(directory, ignore_errors=True)


if __name__ == "__main__":
    main()
