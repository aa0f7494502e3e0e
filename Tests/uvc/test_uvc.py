#!/usr/bin/python3
"""`make test-uvc`: the session as a client drives it, against virtual USB webcams on the
kernel's real uvcvideo driver (Tests/uvc/uvc-camera: camera 0 a Logitech C920 model,
camera 1 a fixed-focus C270).

Runs inside the VM of `scripts/vm --uvc c920,c270` (only loopback networking there):
starts the built server (.build/debug/viewfinder, port 0, "cameras": "auto"), talks HTTP
with urllib and raw sockets, and checks each answer against the camera itself
(`v4l2-ctl -C`) and against what reached the device (the responder's request log).
Python standard library only. Every wait polls against a deadline. Prints PASS/FAIL per
check and a closing line `N passed, N failed`; exits 1 when anything failed.
"""
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SERVER = os.path.join(REPO, ".build", "debug", "viewfinder")
CTL = os.environ.get("UVC_CAMERA_CTL", "uvc-camera-ctl")
LOG0 = os.environ.get("UVC_RESPONDER_LOG", "/tmp/uvc-responder.log")
C920 = "usb-046d_082d-UVCTB0001"
C270 = "usb-046d_0825-UVCTB0002"
T0 = time.monotonic()

passed = 0
failed = []


def note(msg):
    print("  [%6.1f s] %s" % (time.monotonic() - T0, msg), flush=True)


def check(name, ok, detail=""):
    global passed
    if ok:
        passed += 1
        print("PASS: %s" % name, flush=True)
    else:
        failed.append(name)
        print("FAIL: %s%s" % (name, (" -- " + detail) if detail else ""), flush=True)
    return ok


def poll(fn, timeout, interval=0.1):
    """fn() until it returns a truthy value or `timeout` s pass; the last value."""
    deadline = time.monotonic() + timeout
    while True:
        v = fn()
        if v or time.monotonic() >= deadline:
            return v
        time.sleep(interval)


# ---------------------------------------------------------------- the camera side
def node(cam=0):
    """Camera `cam`'s current capture node (it changes across a replug), or None."""
    r = subprocess.run([CTL, "device", str(cam)], capture_output=True, text=True, timeout=30)
    return r.stdout.strip() or None if r.returncode == 0 else None


def ctrl(name, cam=0):
    """The control's value read from the camera now, or None (no such control / no node)."""
    dev = node(cam)
    if not dev:
        return None
    r = subprocess.run(["v4l2-ctl", "-d", dev, "-C", name], capture_output=True, text=True, timeout=30)
    m = re.search(r"^%s:\s*(-?\d+)" % re.escape(name), r.stdout, re.M)
    return int(m.group(1)) if m else None


def set_ctrl(setting, cam=0):
    r = subprocess.run(["v4l2-ctl", "-d", node(cam) or "/dev/null", "-c", setting],
                       capture_output=True, text=True, timeout=30)
    return r.returncode == 0


def log_lines(path=LOG0):
    try:
        with open(path, errors="replace") as f:
            return f.read().splitlines()
    except OSError:
        return []


def set_cur_lines(lines):
    return [l for l in lines if "CTRL SET_CUR" in l]


# ---------------------------------------------------------------- the server side
class Reply:
    def __init__(self, status, headers, body):
        self.status, self.headers, self.body = status, headers, body

    @property
    def json(self):
        try:
            return json.loads(self.body)
        except ValueError:
            return None

    def __repr__(self):
        return "%s %s" % (self.status, self.body[:400].decode("utf-8", "replace"))


def http(method, path, body=None, timeout=20):
    data = json.dumps(body).encode() if body is not None else (b"" if method == "POST" else None)
    req = urllib.request.Request(BASE + path, data=data, method=method)
    if body is not None:
        req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return Reply(r.status, {k.lower(): v for k, v in r.headers.items()}, r.read())
    except urllib.error.HTTPError as e:
        return Reply(e.code, {k.lower(): v for k, v in e.headers.items()}, e.read())
    except (urllib.error.URLError, OSError) as e:
        return Reply(0, {}, str(e).encode())


def state():
    return http("GET", "/api/session").json or {}


def dig(obj, *keys):
    for k in keys:
        if not isinstance(obj, dict):
            return None
        obj = obj.get(k)
    return obj


def error_of(reply):
    j = reply.json or {}
    return j.get("error") if isinstance(j.get("error"), dict) else {}


def jpeg_size(data):
    """(width, height) from a JPEG's SOF marker, None if not a JPEG."""
    if data[:2] != b"\xff\xd8":
        return None
    i = 2
    while i + 9 < len(data):
        if data[i] != 0xFF:
            return None
        marker, length = data[i + 1], int.from_bytes(data[i + 2:i + 4], "big")
        if marker in (0xC0, 0xC1, 0xC2):
            return int.from_bytes(data[i + 7:i + 9], "big"), int.from_bytes(data[i + 5:i + 7], "big")
        i += 2 + length
    return None


def jpeg_comments(data):
    out, i = [], 2
    while i + 4 < len(data) and data[i] == 0xFF and data[i + 1] not in (0xDA, 0xD9):
        length = int.from_bytes(data[i + 2:i + 4], "big")
        if data[i + 1] == 0xFE:
            out.append(data[i + 4:i + 2 + length])
        i += 2 + length
    return out


class Reader(threading.Thread):
    """A raw-socket client of a streaming endpoint (/stream or /api/events): keeps reading
    into `buf` until stopped."""

    def __init__(self, path):
        super().__init__(daemon=True)
        self.buf = bytearray()
        self.lock = threading.Lock()
        self.stopped = threading.Event()
        self.sock = socket.create_connection(("127.0.0.1", PORT), timeout=5)
        self.sock.sendall(("GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n" % path).encode())
        self.start()

    def run(self):
        while not self.stopped.is_set():
            try:
                chunk = self.sock.recv(262144)
            except socket.timeout:
                continue
            except OSError:
                break
            if not chunk:
                break
            with self.lock:
                self.buf += chunk

    def data(self):
        """The body received so far: after the response head, chunked coding removed."""
        with self.lock:
            raw = bytes(self.buf)
        head, sep, body = raw.partition(b"\r\n\r\n")
        if not sep:
            return b""
        if not re.search(rb"(?im)^transfer-encoding:\s*chunked", head):
            return body
        out, i = bytearray(), 0
        while True:
            j = body.find(b"\r\n", i)
            if j < 0:
                break
            try:
                n = int(body[i:j].split(b";")[0], 16)
            except ValueError:
                break
            if n == 0 or j + 2 + n > len(body):
                out += body[j + 2:j + 2 + n]         # a partial last chunk counts too
                break
            out += body[j + 2:j + 2 + n]
            i = j + 2 + n + 2
        return bytes(out)

    def close(self):
        self.stopped.set()
        try:
            self.sock.close()
        except OSError:
            pass


def stream_parts(data):
    """JPEG bodies of the complete multipart parts in `data`."""
    parts = []
    for m in re.finditer(rb"--viewfinderframe\r\n(.*?)\r\n\r\n", data, re.S):
        cl = re.search(rb"(?i)content-length:\s*(\d+)", m.group(1))
        if not cl:
            continue
        start, n = m.end(), int(cl.group(1))
        if start + n <= len(data):
            parts.append(data[start:start + n])
    return parts


def sse_states(data):
    out = []
    for block in data.replace(b"\r\n", b"\n").split(b"\n\n"):
        lines = block.decode("utf-8", "replace").split("\n")
        if "event: state" in lines:
            payload = "\n".join(l[6:] for l in lines if l.startswith("data: "))
            try:
                out.append(json.loads(payload))
            except ValueError:
                pass
    return out


# ---------------------------------------------------------------- server
def start_server(tmp):
    cfg = os.path.join(tmp, "config.json")
    with open(cfg, "w") as f:
        json.dump({"server": {"host": "127.0.0.1", "port": 0, "publicDirectory": os.path.join(REPO, "Public")},
                   "cameras": "auto",
                   "session": {"preset": "640x480", "fps": 15, "autostart": True},
                   "capture": {"directory": os.path.join(tmp, "photos")}}, f)
    err = open(os.path.join(tmp, "server.log"), "w")
    p = subprocess.Popen([SERVER, "--config", cfg, "--port", "0"], stdout=subprocess.PIPE, stderr=err,
                         text=True, cwd=tmp)
    port = []

    def read_port():
        for line in p.stdout:
            m = re.search(r"listening on http://[^:]+:(\d+)/", line)
            if m:
                port.append(int(m.group(1)))
                break
    t = threading.Thread(target=read_port, daemon=True)
    t.start()
    t.join(120)
    return p, (port[0] if port else None)


def stop_server(p):
    if p.poll() is None:
        p.send_signal(signal.SIGTERM)
        try:
            p.wait(15)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(5)


# ---------------------------------------------------------------- checks
def discovery():
    r = http("GET", "/api/cameras")
    cams = {c.get("id"): c for c in (r.json or {}).get("cameras", [])}
    note("cameras: %s" % ", ".join("%s (%s)" % (c.get("id"), c.get("device")) for c in cams.values()))
    c920, c270 = cams.get(C920), cams.get(C270)
    check("discovery: the C920 is listed as %s" % C920, c920 is not None, "ids: %s" % list(cams))
    z = dig(c920, "capabilities", "zoom") or {}
    check("discovery: C920 capabilities.zoom.optical == true, opticalMax == 5",
          z.get("optical") is True and z.get("opticalMax") == 5, "zoom capability: %s" % z)
    check("discovery: the C270 is listed as %s" % C270, c270 is not None, "ids: %s" % list(cams))
    z = dig(c270, "capabilities", "zoom") or {}
    fm = dig(c270, "capabilities", "focusModes")
    check("discovery: C270 has no optical zoom and focusModes == [\"locked\"]",
          c270 is not None and z.get("optical") is False and fm == ["locked"], "zoom %s, focusModes %s" % (z, fm))


def select(camera, **extra):
    body = {"camera": camera}
    body.update(extra)
    r = http("POST", "/api/session/prepare", body, timeout=60)
    check("prepare %s -> 200" % json.dumps(body), r.status == 200, repr(r))
    r = http("POST", "/api/session/start", timeout=60)
    check("start -> 200", r.status == 200, repr(r))
    s = poll(lambda: (lambda s: s if s.get("state") == "running" and dig(s, "camera", "id") == camera else None)(state()), 30)
    check("session running on %s" % camera, bool(s), "state: %s" % json.dumps(state())[:400])


def zoom():
    r = http("POST", "/api/session/zoom", {"factor": 2})
    v = ctrl("zoom_absolute")
    check("zoom 2: 200 and zoom_absolute reads 200 right after the answer", r.status == 200 and v == 200,
          "status %s, zoom_absolute %s" % (r.status, v))
    z = dig(r.json, "zoom") or {}
    check("zoom 2: state zoom factor 2, optical 2, digital 1",
          z.get("factor") == 2 and z.get("optical") == 2 and z.get("digital") == 1, "zoom: %s" % z)
    r = http("POST", "/api/session/zoom", {"factor": 10})
    v = ctrl("zoom_absolute")
    z = dig(r.json, "zoom") or {}
    check("zoom 10: zoom_absolute 500, state optical 5, digital 2",
          r.status == 200 and v == 500 and z.get("optical") == 5 and z.get("digital") == 2,
          "status %s, zoom_absolute %s, zoom: %s" % (r.status, v, z))


def focus_locked():
    before = len(log_lines())
    r = http("POST", "/api/session/focus", {"mode": "locked", "lensPosition": 0.4})
    auto, absolute = ctrl("focus_automatic_continuous"), ctrl("focus_absolute")
    check("focus locked 0.4: 200, focus_automatic_continuous 0, focus_absolute 100 or 105 (stepped)",
          r.status == 200 and auto == 0 and absolute in (100, 105),
          "status %s, focus_automatic_continuous %s, focus_absolute %s, %r" % (r.status, auto, absolute, r))
    lp = dig(r.json, "focus", "lensPosition")
    check("focus locked: state focus.lensPosition == focus_absolute/255 (read back, not the request)",
          absolute is not None and isinstance(lp, (int, float)) and abs(lp - absolute / 255) < 1e-3,
          "lensPosition %s, focus_absolute %s (%.4f)" % (lp, absolute, (absolute or 0) / 255))
    new = log_lines()[before:]
    auto_i = [i for i, l in enumerate(new) if "SET_CUR ct.focus_auto <-" in l]
    abs_i = [i for i, l in enumerate(new) if "SET_CUR ct.focus_absolute <-" in l]
    bad = [l for l in new if "refused" in l or "STALL" in l]
    check("focus locked: the device got focus_auto before focus_absolute, nothing refused",
          bool(auto_i) and bool(abs_i) and auto_i[0] < abs_i[0] and not bad,
          "log: %s" % [l for l in set_cur_lines(new)] + (" refused: %s" % bad if bad else ""))


def automatic_modes():
    r = http("POST", "/api/session/focus", {"mode": "continuous"})
    v = ctrl("focus_automatic_continuous")
    check("focus continuous: focus_automatic_continuous 1", r.status == 200 and v == 1, "status %s, value %s, %r" % (r.status, v, r))
    r = http("POST", "/api/session/exposure", {"mode": "continuous"})
    v = ctrl("auto_exposure")
    check("exposure continuous: auto_exposure 3", r.status == 200 and v == 3, "status %s, value %s, %r" % (r.status, v, r))
    r = http("POST", "/api/session/white-balance", {"mode": "continuous"})
    v = ctrl("white_balance_automatic")
    check("white balance continuous: white_balance_automatic 1", r.status == 200 and v == 1, "status %s, value %s, %r" % (r.status, v, r))


def exposure_custom():
    r = http("POST", "/api/session/exposure", {"mode": "custom", "duration": 0.01})
    ae, t = ctrl("auto_exposure"), ctrl("exposure_time_absolute")
    check("exposure custom 0.01 s: auto_exposure 1, exposure_time_absolute 100",
          r.status == 200 and ae == 1 and t == 100, "status %s, auto_exposure %s, exposure_time_absolute %s, %r" % (r.status, ae, t, r))


def white_balance_locked():
    r = http("POST", "/api/session/white-balance", {"mode": "locked", "temperature": 3000})
    a, t = ctrl("white_balance_automatic"), ctrl("white_balance_temperature")
    check("white balance locked 3000 K: white_balance_automatic 0, white_balance_temperature 3000",
          r.status == 200 and a == 0 and t == 3000, "status %s, automatic %s, temperature %s, %r" % (r.status, a, t, r))


def unrelated_call():
    before = len(set_cur_lines(log_lines()))
    r = http("POST", "/api/session/orientation", {"rotation": 0})
    time.sleep(1.5)      # bounded: any write it caused would be in the log by now
    new = set_cur_lines(log_lines())[before:]
    check("orientation 0: 200 and no control written to the camera", r.status == 200 and not new,
          "status %s, new SET_CUR: %s" % (r.status, new))


def outside_change():
    events = Reader("/api/events")
    try:
        poll(lambda: sse_states(events.data()), 10)          # the initial state event
        seen_before = len(sse_states(events.data()))
        ok = set_ctrl("zoom_absolute=300")
        t = time.monotonic()
        s = poll(lambda: (lambda s: s if dig(s, "zoom", "optical") == 3 else None)(state()), 1.0, 0.05)
        check("outside change zoom_absolute=300: GET /api/session shows zoom optical 3 within 1 s",
              ok and bool(s), "v4l2-ctl ok %s; zoom after 1 s: %s" % (ok, dig(state(), "zoom")))
        ev = poll(lambda: [e for e in sse_states(events.data())[seen_before:] if dig(e, "zoom", "optical") == 3], 3.0, 0.05)
        check("outside change: a state event on /api/events carries zoom optical 3", bool(ev),
              "%d state event(s) after the change, zoom in them: %s (%.1f s)" % (
                  len(sse_states(events.data())[seen_before:]),
                  [dig(e, "zoom") for e in sse_states(events.data())[seen_before:]][:3], time.monotonic() - t))
    finally:
        events.close()


def refused_write():
    http("POST", "/api/session/focus", {"mode": "continuous"})
    keys = ("zoom", "focus", "exposure", "whiteBalance", "camera", "format", "state")
    before = {k: state().get(k) for k in keys}
    value_before = ctrl("focus_absolute")
    r = http("POST", "/api/session/controls", {"focus_absolute": 50})
    e = error_of(r)
    check("refused write: focus_absolute while focus is continuous -> 409 control_refused naming focus_absolute",
          r.status == 409 and e.get("code") == "control_refused" and "focus_absolute" in str(e.get("message", "")),
          repr(r))
    after = {k: state().get(k) for k in keys}
    check("refused write: state and the camera unchanged",
          after == before and ctrl("focus_absolute") == value_before,
          "changed: %s" % {k: (before[k], after[k]) for k in keys if before[k] != after[k]})


def c270():
    select(C270)
    r = http("POST", "/api/session/focus", {"mode": "continuous"})
    e = error_of(r)
    supported = e.get("supported", (r.json or {}).get("supported"))
    check("C270 focus continuous -> 422 with supported [\"locked\"]", r.status == 422 and supported == ["locked"], repr(r))
    r = http("POST", "/api/session/zoom", {"factor": 2})
    z = dig(r.json, "zoom") or {}
    check("C270 zoom 2: digital only (state optical 1, digital 2)",
          r.status == 200 and z.get("optical") == 1 and z.get("digital") == 2, "status %s, zoom %s" % (r.status, z))
    dev = node(1)
    listed = subprocess.run(["v4l2-ctl", "-d", dev or "/dev/null", "-l"], capture_output=True, text=True, timeout=30).stdout
    check("C270 has no zoom_absolute control", dev is not None and "zoom_absolute" not in listed and "brightness" in listed,
          "node %s" % dev)


def stream_and_photo():
    s = state()
    want = (dig(s, "format", "width"), dig(s, "format", "height"))
    r = http("GET", "/snapshot", timeout=30)
    check("snapshot: a JPEG of the format's size %sx%s" % want,
          r.status == 200 and jpeg_size(r.body) == want, "status %s, size %s" % (r.status, jpeg_size(r.body)))
    r = http("POST", "/api/session/capture", timeout=60)
    check("capture: 200/201 with a JPEG", r.status in (200, 201) and jpeg_size(r.body) is not None
          and r.headers.get("content-type", "").startswith("image/jpeg"),
          "status %s, type %s, %d bytes" % (r.status, r.headers.get("content-type"), len(r.body)))


def mjpeg_passthrough():
    r = http("POST", "/api/session/prepare", {"camera": C920, "pixelFormat": "MJPG", "preset": "1280x720"}, timeout=60)
    check("prepare C920 MJPG 1280x720 -> 200", r.status == 200 and dig(r.json, "format", "pixelFormat") == "MJPG", repr(r))
    http("POST", "/api/session/start", timeout=60)
    http("POST", "/api/session/zoom", {"factor": 1})
    viewer = Reader("/stream")
    try:
        def framed():
            for part in stream_parts(viewer.data())[1:]:       # the first may predate the format
                for c in jpeg_comments(part):
                    m = re.match(rb"uvc-frame (\d+)", c)
                    if m:
                        return part, int(m.group(1))
            return None
        got = poll(framed, 30)
        check("MJPEG: a /stream frame carries the camera's uvc-frame COM segment", bool(got),
              "%d parts, sizes %s" % (len(stream_parts(viewer.data())), [jpeg_size(p) for p in stream_parts(viewer.data())[:3]]))
        if got:
            part, n = got
            ref = subprocess.run([CTL, "jpeg", "1280x720", str(n)], capture_output=True, timeout=60).stdout
            check("MJPEG: the frame equals uvc-camera-ctl jpeg 1280x720 %d byte for byte" % n,
                  part == ref, "%d bytes served, %d expected" % (len(part), len(ref)))
    finally:
        viewer.close()
    # Transforms still work on MJPEG: rotation stays lossless (sizes swap); 10x is the lens
    # at 5x and a 2x crop that keeps the frame's size.
    http("POST", "/api/session/orientation", {"rotation": 90})
    r = http("POST", "/api/session/capture", timeout=60)
    check("MJPEG: a photo at rotation 90 is 720x1280", r.status == 200 and jpeg_size(r.body) == (720, 1280),
          "status %s, size %s" % (r.status, jpeg_size(r.body) if r.status == 200 else None))
    http("POST", "/api/session/orientation", {"rotation": 0})
    r = http("POST", "/api/session/zoom", {"factor": 10})
    zoom = dig(r.json, "zoom") or {}
    photo = http("POST", "/api/session/capture", timeout=60)
    check("MJPEG: zoom 10 is optical 5 x digital 2 and the photo keeps 1280x720",
          zoom.get("optical") == 5 and zoom.get("digital") == 2 and photo.status == 200
          and jpeg_size(photo.body) == (1280, 720) and ctrl("zoom_absolute") == 500,
          "zoom %s, photo %s" % (zoom, jpeg_size(photo.body) if photo.status == 200 else photo.status))
    http("POST", "/api/session/zoom", {"factor": 1})


def replug(hold):
    label = "replug with the old node held open" if hold else "replug"
    # the session's zoom: factor 2, i.e. zoom_absolute 200 on the C920 (its default is 100)
    r = http("POST", "/api/session/zoom", {"factor": 2})
    want = 200
    was = poll(lambda: ctrl("zoom_absolute") == want, 5)
    old = node(0)
    note("%s: zoom 2 -> %s; zoom_absolute %s on %s before the unplug%s" % (
        label, r.status, ctrl("zoom_absolute"), old, "" if was else " (not yet 200 after 5 s)"))
    fd = os.open(old, os.O_RDWR | os.O_NONBLOCK) if hold and old else None
    viewer = Reader("/stream")
    try:
        poll(lambda: len(stream_parts(viewer.data())) >= 1, 20)
        u = subprocess.run([CTL, "unplug", "0"], capture_output=True, text=True, timeout=60)
        s = poll(lambda: (lambda s: s if s.get("state") == "interrupted" else None)(state()), 10)
        check("%s: unplug -> session interrupted within 10 s" % label, u.returncode == 0 and bool(s),
              "unplug rc %s %s; state %s" % (u.returncode, u.stderr.strip(), state().get("state")))
        n0 = len(stream_parts(viewer.data()))
        more = poll(lambda: len(stream_parts(viewer.data())) >= n0 + 2, 10)
        check("%s: the stream client keeps receiving parts while unplugged" % label, bool(more),
              "%d parts before, %d after 10 s" % (n0, len(stream_parts(viewer.data()))))
        p = subprocess.run([CTL, "plug", "0"], capture_output=True, text=True, timeout=90)
        new = p.stdout.strip()
        note("%s: camera back as %s (was %s)" % (label, new, old))
        if hold:
            check("%s: the camera came back under another node" % label, p.returncode == 0 and new and new != old,
                  "plug rc %s, node %s, was %s" % (p.returncode, new, old))
        s = poll(lambda: (lambda s: s if s.get("state") == "running" and dig(s, "camera", "id") == C920 else None)(state()), 30, 0.25)
        check("%s: plug -> running again within 30 s, same camera id %s" % (label, C920), p.returncode == 0 and bool(s),
              "plug rc %s %s; state %s camera %s error %s" % (p.returncode, p.stderr.strip(), state().get("state"),
                                                              dig(state(), "camera", "id"), state().get("error")))
        v = poll(lambda: ctrl("zoom_absolute") == want, 5)
        check("%s: zoom_absolute back at the session's value %s (the camera came up at defaults)" % (label, want),
              bool(v), "zoom_absolute %s 5 s after running again" % ctrl("zoom_absolute"))
    finally:
        viewer.close()
        if fd is not None:
            os.close(fd)


def main():
    global BASE, PORT
    for var in ("UVC_DEVICE", "UVC_DEVICES"):
        if var not in os.environ:
            print("test_uvc.py: %s unset: run me through scripts/vm --uvc c920,c270" % var, file=sys.stderr)
            return 2
    if len(os.environ["UVC_DEVICES"].split()) < 2:
        print("test_uvc.py: needs two cameras (scripts/vm --uvc c920,c270)", file=sys.stderr)
        return 2
    if not os.access(SERVER, os.X_OK):
        print("test_uvc.py: no %s (swift build first)" % SERVER, file=sys.stderr)
        return 2
    tmp = tempfile.mkdtemp(prefix="viewfinder-uvc-")
    server, PORT = start_server(tmp)
    if not PORT:
        print("test_uvc.py: the server did not start:\n" + open(os.path.join(tmp, "server.log")).read()[-3000:], file=sys.stderr)
        stop_server(server)
        return 1
    BASE = "http://127.0.0.1:%d" % PORT
    note("server on port %d; C920 %s, C270 %s" % (PORT, node(0), node(1)))
    steps = [("discovery", discovery), ("select the C920", lambda: select(C920, preset="640x480")),
             ("zoom", zoom), ("focus locked", focus_locked), ("automatic modes", automatic_modes),
             ("exposure custom", exposure_custom), ("white balance locked", white_balance_locked),
             ("unrelated call", unrelated_call), ("outside change", outside_change),
             ("refused write", refused_write), ("C270", c270), ("stream and photo", stream_and_photo),
             ("MJPEG pass-through", mjpeg_passthrough), ("unplug/replug", lambda: replug(False)),
             ("unplug/replug, node held", lambda: replug(True))]
    try:
        for name, fn in steps:
            note("-- %s" % name)
            try:
                fn()
            except Exception as e:        # one broken step must not hide the others
                check("%s: ran without an exception" % name, False, "%s: %s" % (type(e).__name__, e))
            if server.poll() is not None:
                check("the server is still running after '%s'" % name, False, "exit status %s" % server.returncode)
                break
    finally:
        stop_server(server)
    if failed:
        tail = open(os.path.join(tmp, "server.log"), errors="replace").read().splitlines()[-25:]
        print("server log (last lines):\n  " + "\n  ".join(tail))
    print("%d passed, %d failed" % (passed, len(failed)))
    note("done")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
