#!/usr/bin/python3
"""`make test-uvc`: the session as a client drives it, against virtual USB webcams on the
kernel's real uvcvideo driver (Tests/uvc/uvc-camera: camera 0 a Logitech C920 model with
its microphone — a uac2 function read by snd-usb-audio — camera 1 a fixed-focus C270).

Runs inside the VM of `scripts/vm --uvc c920,c270` (only loopback networking there):
starts the built server (.build/debug/viewfinder, port 0, "cameras": "auto"), talks HTTP
with urllib and raw sockets, and checks each answer against the camera itself
(`v4l2-ctl -C`), against what reached the device (the responder's request log) and,
for zoom and orientation, against the camera's own picture in decoded pixels (PIL,
python3-pil, which scripts/vm --uvc installs; otherwise the standard library only).
Every wait polls against a deadline. Prints PASS/FAIL per check and a closing line
`N passed, N failed`; exits 1 when anything failed.
"""
import io
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "Tests", "vm"))
import vmtest  # noqa: E402
from vmtest import check, failed, poll, SERVER, jpeg_size, stop_server  # noqa: E402
CTL = os.environ.get("UVC_CAMERA_CTL", "uvc-camera-ctl")
LOG0 = os.environ.get("UVC_RESPONDER_LOG", "/tmp/uvc-responder.log")
LOG1 = (os.environ.get("UVC_RESPONDER_LOGS", "").split() + [None, None])[1] or "/tmp/uvc-responder-1.log"
C920 = "usb-046d_082d-UVCTB0001"
C270 = "usb-046d_0825-UVCTB0002"
T0 = time.monotonic()
RTSP_PORT = None



def note(msg):
    print("  [%6.1f s] %s" % (time.monotonic() - T0, msg), flush=True)


# ---------------------------------------------------------------- the camera side
_nodes = {}       # camera -> its capture node, as last found (forgotten on a replug or a failure)


def node(cam=0):
    """Camera `cam`'s current capture node (it changes across a replug), or None."""
    r = subprocess.run([CTL, "device", str(cam)], capture_output=True, text=True, timeout=30)
    dev = r.stdout.strip() or None if r.returncode == 0 else None
    _nodes[cam] = dev
    return dev


def forget_nodes():
    _nodes.clear()


def v4l2(args, cam=0):
    """v4l2-ctl ARGS on camera `cam`'s node; the node is looked up again (uvc-camera-ctl
    device is slow under TCG) only when the last one is unknown or fails."""
    for attempt in (0, 1):
        dev = _nodes.get(cam) if attempt == 0 else None
        dev = dev or node(cam)
        if not dev:
            return None
        r = subprocess.run(["v4l2-ctl", "-d", dev] + args, capture_output=True, text=True, timeout=30)
        if r.returncode == 0:
            return r
        _nodes.pop(cam, None)
    return r


def ctrls(*names, cam=0):
    """{name: value} read from the camera now in one v4l2-ctl call; None for a value it
    did not give (no such control, no node)."""
    r = v4l2(["-C", ",".join(names)], cam)
    out = {}
    for name in names:
        m = re.search(r"^%s:\s*(-?\d+)" % re.escape(name), r.stdout if r else "", re.M)
        out[name] = int(m.group(1)) if m else None
    return out


def ctrl(name, cam=0):
    """The control's value read from the camera now, or None (no such control / no node)."""
    return ctrls(name, cam=cam)[name]


def set_ctrl(setting, cam=0):
    r = v4l2(["-c", setting], cam)
    return r is not None and r.returncode == 0


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


def jpeg_comments(data):
    out, i = [], 2
    while i + 4 < len(data) and data[i] == 0xFF and data[i + 1] not in (0xDA, 0xD9):
        length = int.from_bytes(data[i + 2:i + 4], "big")
        if data[i + 1] == 0xFE:
            out.append(data[i + 4:i + 2 + length])
        i += 2 + length
    return out


# ---------------------------------------------------------------- pixels (PIL)
_Image = []


def pil():
    """PIL's Image module, imported on first use (~5 s under TCG)."""
    if not _Image:
        from PIL import Image
        _Image.append(Image)
    return _Image[0]


def picture(jpeg, crop2x=False, rot180=False):
    """A JPEG decoded and reduced to 80x60 YCbCr (8x8-pixel box averages at 640x480):
    small enough to compare in pure Python under TCG. crop2x: its centre half scaled back to
    the full size (what a 2x digital zoom shows); rot180: turned half a turn."""
    Image = pil()
    im = Image.open(io.BytesIO(jpeg))
    im.load()
    w, h = im.size
    if crop2x:
        im = im.crop((w // 4, h // 4, w - w // 4, h - h // 4)).resize((w, h), Image.BILINEAR)
    if rot180:
        im = im.rotate(180)
    return im.convert("YCbCr").resize((80, 60), Image.BOX)


def distance(a, b):
    """Median absolute difference of two pictures() over all samples (Y, Cb, Cr). The
    model's pattern is a gradient (luma left to right, chroma top to bottom) with a white
    bar at a position that changes every frame: the bar covers a few percent of the samples,
    so the median ignores it where a mean would not. Measured: the same pattern 0-3, a 2x
    centre crop of it ~20, half a turn ~85."""
    d = sorted(abs(x - y) for pa, pb in zip(a.getdata(), b.getdata()) for x, y in zip(pa, pb))
    return d[len(d) // 2]


def camera_jpeg(size, n=0):
    """The exact MJPEG frame n (its "uvc-frame n" counter) the cameras send at WxH, as
    `uvc-camera-ctl jpeg WxH n` prints it — made here by the responder's own functions on the
    frames uvc-camera encoded: under TCG each Python start of that command cost ~10 s. It is
    the pattern the model renders, the same whatever zoom_absolute is (its zoom is a lens: it
    changes no pixels the model draws, so a server that crops for an optical zoom shows a
    different picture)."""
    global _responder
    if _responder is None:
        import importlib.util
        spec = importlib.util.spec_from_file_location(
            "uvc_responder", os.path.join(os.path.dirname(os.path.abspath(__file__)), "uvc-responder.py"))
        _responder = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(_responder)
    if size not in _cycles:
        w, h = (int(v) for v in size.split("x"))
        _cycles[size] = _responder.load_jpegs(os.path.join(os.environ.get("UVC_CAMERA_STATE", "/tmp/uvc-camera"), "jpeg"), w, h)
    cycle = _cycles[size]
    return _responder.jpeg_with_counter(cycle[n % len(cycle)], n) if cycle else b""


_responder = None
_cycles = {}


class Reader(threading.Thread):
    """A raw-socket client of a streaming endpoint (/stream or /api/events): keeps reading
    into `buf` until stopped."""

    def __init__(self, path):
        super().__init__(daemon=True)
        self.buf = bytearray()
        self.marks = []                 # (arrival time, len(buf) after that chunk)
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
            t = time.monotonic()
            with self.lock:
                self.buf += chunk
                self.marks.append((t, len(self.buf)))

    def arrival(self, pred):
        """When the first chunk arrived after which pred(body so far) holds, or None: the
        time the bytes came in, whenever the test thread gets to look."""
        with self.lock:
            raw, marks = bytes(self.buf), list(self.marks)
        for t, end in marks:
            if pred(self.data(raw[:end])):
                return t
        return None

    def data(self, raw=None):
        """The body received so far (or in `raw`): after the response head, chunked coding
        removed."""
        if raw is None:
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
    global RTSP_PORT
    p, ports = vmtest.start_server(tmp, {
        "cameras": "auto",
        "session": {"preset": "640x480", "fps": 15, "autostart": True},
        "capture": {"directory": os.path.join(tmp, "photos")},
        "recording": {"directory": os.path.join(tmp, "movies"), "preset": "ultrafast"},
        "rtsp": {"port": 0}})
    RTSP_PORT = ports.get("rtsp")
    return p, ports.get("http")


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


PICTURES = {"full": ({}, "uncropped"), "crop": ({"crop2x": True}, "cropped 2x"),
            "rot180": ({"rot180": True}, "turned 180"),
            "crop+rot180": ({"crop2x": True, "rot180": True}, "cropped 2x and turned 180")}


def photo_vs_model(label, want, reject):
    """Captures a photo (a frame exposed after the request) and compares its picture with
    the model's own frame: it must be close to `want` and far from `reject` (keys of
    PICTURES: the model's frame as is, its 2x centre crop, turned half a turn)."""
    s = state()
    size = "%sx%s" % (dig(s, "format", "width"), dig(s, "format", "height"))
    r = http("POST", "/api/session/capture", timeout=60)
    if not check("%s: capture -> 200 JPEG" % label, r.status == 200 and jpeg_size(r.body) is not None,
                 "status %s, %d bytes" % (r.status, len(r.body))):
        return
    ref = camera_jpeg(size)
    got = picture(r.body)
    d_want = distance(got, picture(ref, **PICTURES[want][0]))
    d_reject = distance(got, picture(ref, **PICTURES[reject][0]))
    check("%s: the photo is the model's frame %s (median |diff| %d <= 6), not %s (%d >= 12)" % (
              label, PICTURES[want][1], d_want, PICTURES[reject][1], d_reject),
          d_want <= 6 and d_reject >= 12,
          "%s photo, model frame %s (%d bytes)" % (jpeg_size(r.body), size, len(ref)))


def zoom():
    r = http("POST", "/api/session/zoom", {"factor": 2})
    v = ctrl("zoom_absolute")
    check("zoom 2: 200 and zoom_absolute reads 200 right after the answer", r.status == 200 and v == 200,
          "status %s, zoom_absolute %s" % (r.status, v))
    z = dig(r.json, "zoom") or {}
    check("zoom 2: state zoom factor 2, optical 2, digital 1",
          z.get("factor") == 2 and z.get("optical") == 2 and z.get("digital") == 1, "zoom: %s" % z)
    # optical only: the picture is the camera's (the model draws the same whatever its
    # zoom_absolute), no crop on top
    photo_vs_model("zoom 2 (optical)", "full", "crop")
    r = http("POST", "/api/session/zoom", {"factor": 10})
    v = ctrl("zoom_absolute")
    z = dig(r.json, "zoom") or {}
    check("zoom 10: zoom_absolute 500, state optical 5, digital 2",
          r.status == 200 and v == 500 and z.get("optical") == 5 and z.get("digital") == 2,
          "status %s, zoom_absolute %s, zoom: %s" % (r.status, v, z))
    # and the other way round: beyond the lens the 2x crop shows (so the check above can fail)
    photo_vs_model("zoom 10 (optical 5 x digital 2)", "crop", "full")


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
    # First everything manual: the automatic controls off on the camera ...
    AUTO = ("focus_automatic_continuous", "auto_exposure", "white_balance_automatic")
    rf = http("POST", "/api/session/focus", {"mode": "locked", "lensPosition": 0.2})
    re_ = http("POST", "/api/session/exposure", {"mode": "custom", "duration": 0.02})
    rw = http("POST", "/api/session/white-balance", {"mode": "locked", "temperature": 5000})
    v = ctrls(*AUTO)
    check("manual first: focus locked 0.2, exposure custom 0.02 s, white balance locked 5000 K -> 200 each; "
          "focus_automatic_continuous 0, auto_exposure 1, white_balance_automatic 0",
          (rf.status, re_.status, rw.status) == (200, 200, 200)
          and v == {"focus_automatic_continuous": 0, "auto_exposure": 1, "white_balance_automatic": 0},
          "statuses %s %s %s, camera %s; %r %r %r" % (rf.status, re_.status, rw.status, v, rf, re_, rw))
    # ... then each back to continuous: its own automatic control on, the others untouched
    want = {"focus_automatic_continuous": 0, "auto_exposure": 1, "white_balance_automatic": 0}
    for path, key, control, on in (("focus", "focus", "focus_automatic_continuous", 1),
                                   ("exposure", "exposure", "auto_exposure", 3),
                                   ("white-balance", "whiteBalance", "white_balance_automatic", 1)):
        r = http("POST", "/api/session/" + path, {"mode": "continuous"})
        want[control] = on
        v = ctrls(*AUTO)
        mode = dig(r.json, key, "mode")
        check("%s continuous: 200, state mode continuous, %s %d (the other automatic controls as they were: %s)" % (
                  path, control, on, ", ".join("%s %d" % (k, want[k]) for k in AUTO if k != control)),
              r.status == 200 and mode == "continuous" and v == want,
              "status %s, mode %s, camera %s, expected %s" % (r.status, mode, v, want))


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
    rot = dig(state(), "orientation", "rotation")
    other = 180 if rot != 180 else 0
    before = len(set_cur_lines(log_lines()))
    r = http("POST", "/api/session/orientation", {"rotation": other})
    got = dig(r.json, "orientation", "rotation")
    check("orientation %s -> %s: 200, state rotation %s" % (rot, other, other), r.status == 200 and got == other,
          "status %s, rotation %s, %r" % (r.status, got, r))
    digital = dig(r.json, "zoom", "digital")
    if other == 180 and digital in (1, 2):
        # an actual change: the pictures turn (the model's frame is not symmetric); the
        # zoom left by the steps before (10: a 2x crop) stays as it is
        base = "crop" if digital == 2 else "full"
        photo_vs_model("orientation 180 (zoom digital %s)" % digital, base + "+rot180", base)
    r2 = http("POST", "/api/session/orientation", {"rotation": rot})
    time.sleep(1.5)      # bounded: any write the calls caused would be in the log by now
    new = set_cur_lines(log_lines())[before:]
    check("orientation %s and back to %s: 200 and no control written to the camera" % (other, rot),
          r.status == 200 and r2.status == 200 and dig(r2.json, "orientation", "rotation") == rot and not new,
          "statuses %s %s, new SET_CUR: %s" % (r.status, r2.status, new))


def outside_change():
    events = Reader("/api/events")
    try:
        poll(lambda: sse_states(events.data()), 10)          # the initial state event
        seen_before = len(sse_states(events.data()))
        before = dig(state(), "zoom", "optical")
        ok = set_ctrl("zoom_absolute=300")
        t = time.monotonic()                                  # v4l2-ctl has returned: the camera has it
        s = poll(lambda: (lambda s: s if dig(s, "zoom", "optical") == 3 else None)(state()), 1.0, 0.05)
        check("outside change zoom_absolute=300 (zoom optical was %s): GET /api/session shows zoom optical 3 within 1 s" % before,
              ok and before != 3 and bool(s), "v4l2-ctl ok %s; zoom after 1 s: %s" % (ok, dig(state(), "zoom")))

        def carries(body):
            return any(dig(e, "zoom", "optical") == 3 for e in sse_states(body)[seen_before:])
        # wait up to 3 s to tell "late" from "never"; the check is on when the bytes arrived
        poll(lambda: events.arrival(carries), 3.0, 0.05)
        at = events.arrival(carries)
        late = None if at is None else max(0.0, at - t)
        check("outside change: a state event on /api/events carries zoom optical 3 within 1 s of v4l2-ctl returning",
              late is not None and late <= 1.0,
              "%s; %d state event(s) after the change, zoom in them: %s" % (
                  "no such event in 3 s" if late is None else "it came after %.2f s" % late,
                  len(sse_states(events.data())[seen_before:]),
                  [dig(e, "zoom") for e in sse_states(events.data())[seen_before:]][:3]))
        if late is not None:
            note("outside change: the state event came %.2f s after v4l2-ctl returned" % late)
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


def soap(service, body):
    """A SOAP 1.2 call to the ONVIF service (no accounts on loopback: no sign-in): (status, text)."""
    xml = ('<s:Envelope xmlns:s="http://www.w3.org/2003/05/soap-envelope" xmlns:timg="http://www.onvif.org/ver20/imaging/wsdl"'
           ' xmlns:tt="http://www.onvif.org/ver10/schema"><s:Body>%s</s:Body></s:Envelope>' % body)
    req = urllib.request.Request(BASE + "/onvif/" + service, data=xml.encode(), method="POST",
                                 headers={"Content-Type": "application/soap+xml; charset=utf-8"})
    try:
        with urllib.request.urlopen(req, timeout=20) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def onvif_imaging():
    """ONVIF's imaging on the real uvcvideo C920: its brightness and backlight compensation in
    GetOptions at the device's own ranges, SetImagingSettings written to the device (v4l2-ctl
    reads it back), a value outside the range refused with nothing written."""
    src = "<timg:VideoSourceToken>%s</timg:VideoSourceToken>" % C920
    status, text = soap("imaging_service", "<timg:GetOptions>%s</timg:GetOptions>" % src)
    check("ONVIF GetOptions: the C920's Brightness 0-255 and BacklightCompensation OFF/ON",
          status == 200 and re.search(r"<tt:Brightness><tt:Min>0\.0</tt:Min><tt:Max>255\.0</tt:Max>", text) is not None
          and "<tt:BacklightCompensation><tt:Mode>OFF</tt:Mode><tt:Mode>ON</tt:Mode>" in text, (status, text[-600:]))
    status, text = soap("imaging_service", "<timg:SetImagingSettings>%s<timg:ImagingSettings><tt:BacklightCompensation>"
                        "<tt:Mode>ON</tt:Mode></tt:BacklightCompensation><tt:Brightness>77</tt:Brightness></timg:ImagingSettings>"
                        "</timg:SetImagingSettings>" % src)
    check("ONVIF SetImagingSettings Brightness 77, backlight ON: on the device (%s, %s)"
          % (ctrl("brightness"), ctrl("backlight_compensation")),
          status == 200 and ctrl("brightness") == 77 and ctrl("backlight_compensation") == 1, (status, text[-400:]))
    writes = len(set_cur_lines(log_lines(LOG0)))
    status, text = soap("imaging_service", "<timg:SetImagingSettings>%s<timg:ImagingSettings><tt:Brightness>300</tt:Brightness>"
                        "</timg:ImagingSettings></timg:SetImagingSettings>" % src)
    check("ONVIF Brightness 300: a SettingsInvalid fault naming 0-255, nothing written",
          status == 400 and "SettingsInvalid" in text and "0.0…255.0" in text and ctrl("brightness") == 77
          and len(set_cur_lines(log_lines(LOG0))) == writes, (status, text[-400:]))
    status, text = soap("imaging_service", "<timg:GetImagingSettings>%s</timg:GetImagingSettings>" % src)
    check("ONVIF GetImagingSettings reads the device back: Brightness 77, backlight ON",
          "<tt:Brightness>77.0</tt:Brightness>" in text and "<tt:Mode>ON</tt:Mode>" in text, text[-600:])
    set_ctrl("brightness=128")
    set_ctrl("backlight_compensation=0")


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
    listed = (v4l2(["-l"], 1) or subprocess.CompletedProcess([], 1, "", "")).stdout
    check("C270 has no zoom_absolute control", "zoom_absolute" not in listed and "brightness" in listed,
          "node %s" % _nodes.get(1))

    # What it lacks is refused, naming it, and nothing reaches the camera
    keys = ("zoom", "focus", "exposure", "whiteBalance", "camera", "format", "state")
    before, writes = {k: state().get(k) for k in keys}, len(set_cur_lines(log_lines(LOG1)))
    r = http("POST", "/api/session/controls", {"zoom_absolute": 200})
    e = error_of(r)
    supported = e.get("supported", [])
    check("C270 raw control zoom_absolute=200 -> 422 unsupported naming zoom_absolute, supported lists its "
          "controls (brightness) and not zoom_absolute",
          r.status == 422 and e.get("code") == "unsupported" and "zoom_absolute" in str(e.get("message", ""))
          and isinstance(supported, list) and "brightness" in supported and "zoom_absolute" not in supported, repr(r))
    r = http("POST", "/api/session/focus", {"mode": "locked", "lensPosition": 0.5})
    e = error_of(r)
    check("C270 focus locked lensPosition 0.5 -> 422 unsupported naming lensPosition (fixed focus: no lens to move)",
          r.status == 422 and e.get("code") == "unsupported" and "lensPosition" in str(e.get("message", "")), repr(r))
    after, new = {k: state().get(k) for k in keys}, set_cur_lines(log_lines(LOG1))[writes:]
    check("C270 after the two refusals: state unchanged and no control written to the camera",
          after == before and not new,
          "changed: %s; new SET_CUR: %s" % ({k: (before[k], after[k]) for k in keys if before[k] != after[k]}, new))

    # What it has is written and read back: its own ranges (white balance 2800-10000 in
    # steps of 10: 5005 K is stepped to 5010; exposure 1-10000 x 100 us)
    rw = http("POST", "/api/session/white-balance", {"mode": "locked", "temperature": 5005})
    rx = http("POST", "/api/session/exposure", {"mode": "custom", "duration": 0.05})
    v = ctrls("white_balance_automatic", "white_balance_temperature", "auto_exposure", "exposure_time_absolute", cam=1)
    temp, dur = dig(rw.json, "whiteBalance", "temperature"), dig(rx.json, "exposure", "duration")
    check("C270 white balance locked 5005 K: 200, white_balance_automatic 0, white_balance_temperature 5000 or "
          "5010 (stepped), state temperature == the camera's",
          rw.status == 200 and v["white_balance_automatic"] == 0 and v["white_balance_temperature"] in (5000, 5010)
          and isinstance(temp, (int, float)) and abs(temp - v["white_balance_temperature"]) < 0.5,
          "status %s, camera %s, state temperature %s, %r" % (rw.status, v, temp, rw))
    check("C270 exposure custom 0.05 s: 200, auto_exposure 1, exposure_time_absolute 500, state duration 0.05",
          rx.status == 200 and v["auto_exposure"] == 1 and v["exposure_time_absolute"] == 500
          and isinstance(dur, (int, float)) and abs(dur - 0.05) < 1e-4,
          "status %s, camera %s, state duration %s, %r" % (rx.status, v, dur, rx))


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


def mjpeg_frames(size):
    """prepare + start the C920 in MJPEG at `size` (zoom 1, so nothing is decoded) and check
    that a /stream part is the camera's own frame, byte for byte."""
    w, h = (int(x) for x in size.split("x"))
    r = http("POST", "/api/session/prepare", {"camera": C920, "pixelFormat": "MJPG", "preset": size}, timeout=60)
    check("prepare C920 MJPG %s -> 200" % size,
          r.status == 200 and dig(r.json, "format", "pixelFormat") == "MJPG"
          and (dig(r.json, "format", "width"), dig(r.json, "format", "height")) == (w, h), repr(r))
    http("POST", "/api/session/start", timeout=60)
    http("POST", "/api/session/zoom", {"factor": 1})
    viewer = Reader("/stream")
    try:
        def framed():
            for part in stream_parts(viewer.data())[1:]:       # the first may predate the format
                if jpeg_size(part) != (w, h):
                    continue
                for c in jpeg_comments(part):
                    m = re.match(rb"uvc-frame (\d+)", c)
                    if m:
                        return part, int(m.group(1))
            return None
        got = poll(framed, 30)
        check("MJPEG %s: a /stream frame of that size carries the camera's uvc-frame COM segment" % size, bool(got),
              "%d parts, sizes %s" % (len(stream_parts(viewer.data())), [jpeg_size(p) for p in stream_parts(viewer.data())[:3]]))
        if got:
            part, n = got
            ref = camera_jpeg(size, n)
            check("MJPEG %s: the frame equals the camera's JPEG %s %d byte for byte" % (size, size, n),
                  part == ref, "%d bytes served, %d expected" % (len(part), len(ref)))
    finally:
        viewer.close()


def mjpeg_passthrough():
    mjpeg_frames("1280x720")
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
    # the C920 model's largest MJPEG size passes through as well; then 640x480 for the H.264
    # steps: under TCG, libx264 and the MJPEG decode at 1280x720 were most of this run's time
    # (live 96 s, recording 76 s), and their checks need a camera size, not a large one
    mjpeg_frames("1920x1080")
    r = http("POST", "/api/session/prepare", {"camera": C920, "pixelFormat": "MJPG", "preset": "640x480"}, timeout=60)
    check("prepare C920 MJPG 640x480 -> 200", r.status == 200 and dig(r.json, "format", "width") == 640, repr(r))


def live_h264(tmp):
    """Live H.264 from the C920's MJPEG (decoded by libavcodec, encoded once by libx264): RTSP
    over TCP and UDP and live.mp4 decode at the camera's size, and a WHEP offer is answered
    with H.264. The C920 runs MJPG 640x480 after the pass-through step."""
    w, h = dig(state(), "format", "width"), dig(state(), "format", "height")
    check("live: the C920 runs MJPG", dig(state(), "format", "pixelFormat") == "MJPG", repr(dig(state(), "format")))
    if not RTSP_PORT:
        check("live: the server printed its RTSP port", False)
        return
    url = "rtsp://127.0.0.1:%d/main" % RTSP_PORT
    for transport in ("tcp", "udp"):
        r = subprocess.run(["ffprobe", "-v", "error", "-rtsp_transport", transport, "-show_entries", "stream=codec_name,width,height",
                            "-of", "csv=p=0", url], capture_output=True, text=True, timeout=60)
        check("live: ffprobe over RTSP/%s: h264 at %dx%d" % (transport, w, h), r.stdout.strip() == "h264,%d,%d" % (w, h),
              "%r %r" % (r.stdout, r.stderr[-300:]))
    r = subprocess.run(["ffmpeg", "-v", "error", "-rtsp_transport", "tcp", "-i", url, "-frames:v", "30", "-enc_time_base", "-1",
                        "-f", "null", "-"], capture_output=True, text=True, timeout=60)
    check("live: ffmpeg decodes 30 frames over RTSP without an error", r.returncode == 0 and not r.stderr.strip(), r.stderr[-500:])
    viewer = Reader("/live.mp4")
    try:
        poll(lambda: viewer.data().count(b"mdat") >= 20, 30)
        path = os.path.join(tmp, "live.mp4")
        with open(path, "wb") as f:
            f.write(viewer.data())  # the body, its chunked coding undone
    finally:
        viewer.close()
    st = probe(path)
    check("live: /live.mp4 is h264 at %dx%d" % (w, h),
          (st.get("codec_name"), st.get("width"), st.get("height")) == ("h264", w, h), repr(st))
    offer = open(os.path.join(REPO, "Tests/ViewfinderAppTests/Fixtures/chromium-offer.sdp"), "rb").read()
    req = urllib.request.Request(BASE + "/api/whep", data=offer, method="POST", headers={"Content-Type": "application/sdp"})
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            answer, location = resp.read().decode(), resp.headers.get("Location")
        check("live: WHEP answers with H.264 and a Location", "H264/90000" in answer and bool(location), answer[:200])
        if location:
            http("DELETE", location)
    except urllib.error.HTTPError as e:
        check("live: WHEP answers 201", False, "%s %s" % (e.code, e.read()[:200]))


def movie_packets(path, out):
    """The movie's frames as the file holds them (ffmpeg stream copy: no decode)."""
    os.makedirs(out, exist_ok=True)
    subprocess.run(["ffmpeg", "-v", "error", "-i", path, "-c", "copy", "-f", "image2", os.path.join(out, "f%04d.jpg")],
                   timeout=120, check=False)
    return [open(os.path.join(out, f), "rb").read() for f in sorted(os.listdir(out))]


def probe(path):
    r = subprocess.run(["ffprobe", "-v", "error", "-count_frames", "-select_streams", "v:0", "-show_entries",
                        "stream=codec_name,width,height,nb_read_frames", "-of", "json", path],
                       capture_output=True, text=True, timeout=120)
    try:
        return json.loads(r.stdout)["streams"][0]
    except (ValueError, KeyError, IndexError):
        return {}


def recording(tmp):
    """The movie output on the real driver: the C920's MJPEG frames go into the MP4 byte for
    byte; H.264 from them plays; unplugging mid-recording ends the movie as cameraLost and
    keeps what was recorded. The C920 runs MJPEG 640x480 from the step before."""
    movies = os.path.join(tmp, "movies")
    w, h = dig(state(), "format", "width"), dig(state(), "format", "height")

    def recorded_frames(n, timeout=60):
        return poll(lambda: (dig(state(), "recording", "frames") or 0) >= n, timeout, 0.25)

    r = http("POST", "/api/session/recording/start", {"codec": "mjpeg"})
    check("record MJPEG: start -> 200, recording active", r.status == 200 and dig(r.json, "recording", "active") is True, repr(r))
    recorded_frames(15)
    r = http("POST", "/api/session/recording/stop", timeout=60)
    movie = r.json or {}
    check("record MJPEG: stop -> 201 with a %dx%d mjpeg movie of 15 or more frames" % (w, h),
          r.status == 201 and movie.get("codec") == "mjpeg" and (movie.get("width"), movie.get("height")) == (w, h)
          and (movie.get("frames") or 0) >= 15, repr(r))
    if r.status == 201:
        packets = movie_packets(os.path.join(movies, movie["id"] + ".mp4"), os.path.join(tmp, "packets"))
        exact, numbered = 0, 0
        for packet in packets[:5]:
            n = next((int(m.group(1)) for c in jpeg_comments(packet) for m in [re.match(rb"uvc-frame (\d+)", c)] if m), None)
            if n is None:
                continue
            numbered += 1
            exact += packet == camera_jpeg("%dx%d" % (w, h), n)
        check("record MJPEG: the movie's frames are the camera's JPEGs byte for byte",
              numbered >= 3 and exact == numbered, "%d packets, %d numbered, %d exact" % (len(packets), numbered, exact))

    r = http("POST", "/api/session/recording/start")
    check("record H.264 from the MJPEG camera: start -> 200", r.status == 200, repr(r))
    recorded_frames(15)
    r = http("POST", "/api/session/recording/stop", timeout=60)
    movie = r.json or {}
    facts = probe(os.path.join(movies, movie.get("id", "none") + ".mp4")) if r.status == 201 else {}
    check("record H.264: 201; ffprobe reads h264 %dx%d with the movie's frame count" % (w, h),
          r.status == 201 and facts.get("codec_name") == "h264" and (facts.get("width"), facts.get("height")) == (w, h)
          and str(facts.get("nb_read_frames")) == str(movie.get("frames")), "%r; ffprobe %s" % (r, facts))

    # Unplugged mid-recording: the movie ends as cameraLost, what was recorded is kept.
    r = http("POST", "/api/session/recording/start")
    recorded_frames(20)
    u = subprocess.run([CTL, "unplug", "0"], capture_output=True, text=True, timeout=60)
    forget_nodes()
    try:
        def lost():
            for m in (http("GET", "/api/movies").json or {}).get("movies", []):
                if m.get("reason") == "cameraLost":
                    return m
            return None
        m = poll(lost, 30, 0.25)
        facts = probe(os.path.join(movies, m["id"] + ".mp4")) if m else {}
        check("record then unplug: the movie ends as cameraLost and keeps its frames (ffprobe agrees)",
              u.returncode == 0 and bool(m) and (m.get("frames") or 0) > 0
              and str(facts.get("nb_read_frames")) == str(m.get("frames")),
              "unplug rc %s; movie %s; ffprobe %s; state %s" % (u.returncode, m, facts, state().get("recording")))
        check("record then unplug: the state says not recording", dig(state(), "recording", "active") is False,
              "%s" % state().get("recording"))
    finally:
        p = subprocess.run([CTL, "plug", "0"], capture_output=True, text=True, timeout=90)
        forget_nodes()
        s = poll(lambda: state().get("state") == "running", 30, 0.25)
        check("record then unplug: plugged back -> running again", p.returncode == 0 and bool(s),
              "plug rc %s; state %s" % (p.returncode, state().get("state")))


def motion_event(tmp):
    """Motion detection on the real driver: the C920's picture (a bar sweeping down, MJPEG
    640x480 from the steps before, the detector reading its JPEGs' luma) is an event within
    a few seconds, announced with a box; turning detection off ends it, and its movie, from
    the live encoder's pre-roll ring, is listed as a motion movie that ffprobe reads."""
    w, h = dig(state(), "format", "width"), dig(state(), "format", "height")
    events = Reader("/api/events?camera=" + C920)
    try:
        r = http("POST", "/api/session/motion", {"enabled": True, "preRoll": 1, "postRoll": 1})
        check("motion: enable -> 200, motion.enabled", r.status == 200 and dig(r.json, "motion", "enabled") is True, repr(r))
        started = poll(lambda: b'"event":"started"' in events.data() and b"event: motion" in events.data(), 30, 0.2)
        check("motion: the moving bar is an event (event: motion, started)", bool(started),
              "motion %s; outputs %s; events %s" % (state().get("motion"), state().get("outputs"),
                                                    events.data()[-300:].decode("utf-8", "replace")))
        active = poll(lambda: dig(state(), "motion", "active") is True, 10, 0.2)
        check("motion: the state says active", bool(active), "%s" % state().get("motion"))
        time.sleep(2)
        r = http("POST", "/api/session/motion", {"enabled": False})
        check("motion: disable -> 200, the event ended", r.status == 200 and dig(r.json, "motion", "active") is False, repr(r))

        def movie():
            for m in (http("GET", "/api/movies?trigger=motion").json or {}).get("movies", []):
                return m
            return None
        m = poll(movie, 30, 0.25)
        facts = probe(os.path.join(tmp, "movies", m["id"] + ".mp4")) if m else {}
        check("motion: its movie is listed (trigger motion, event times) and ffprobe reads h264 %dx%d" % (w, h),
              bool(m) and m.get("trigger") == "motion" and bool(m.get("event")) and facts.get("codec_name") == "h264"
              and (facts.get("width"), facts.get("height")) == (w, h), "movie %s; ffprobe %s" % (m, facts))
    finally:
        events.close()
        http("POST", "/api/session/motion", {"enabled": False})


def two_cameras():
    """Both webcams at once, each in its own session: the C920 as the main session (MJPEG
    1280x720, prepared here: a size the C270 does not share), the C270 started in its own
    right at 640x480 MJPEG. A control on one writes nothing to the other; one unplugged, the
    other streams on. The C920 stays at 1280x720 for the replugs."""
    c270 = "/api/cameras/%s/session" % C270
    r = http("POST", "/api/session/prepare", {"camera": C920, "pixelFormat": "MJPG", "preset": "1280x720"}, timeout=60)
    check("two cameras: prepare the C920 MJPG 1280x720 -> 200", r.status == 200 and dig(r.json, "format", "width") == 1280, repr(r))
    r = http("POST", c270 + "/prepare", {"pixelFormat": "MJPG", "preset": "640x480"}, timeout=60)
    check("two cameras: prepare the C270's own session -> 200", r.status == 200, repr(r))
    r = http("POST", c270 + "/start", timeout=60)
    check("two cameras: start the C270's own session -> 200 (the C920 keeps running)",
          r.status == 200 and dig(state(), "camera", "id") == C920 and state().get("state") == "running", repr(r))
    cams = {c.get("id"): c for c in (http("GET", "/api/cameras").json or {}).get("cameras", [])}
    check("two cameras: /api/cameras says both run, the C920 is main",
          dig(cams, C920, "state") == "running" and dig(cams, C270, "state") == "running"
          and dig(cams, C920, "main") is True and dig(cams, C270, "main") is False,
          "%s" % {k: (c.get("state"), c.get("main")) for k, c in cams.items()})
    a, b = Reader("/cameras/%s/stream" % C920), Reader("/cameras/%s/stream" % C270)
    try:
        both = poll(lambda: len(stream_parts(a.data())) >= 3 and len(stream_parts(b.data())) >= 3, 60, 0.25)
        sizes = (jpeg_size(stream_parts(a.data())[-1]) if stream_parts(a.data()) else None,
                 jpeg_size(stream_parts(b.data())[-1]) if stream_parts(b.data()) else None)
        check("two cameras: both streams deliver frames at once, each at its own size (1280x720, 640x480)",
              bool(both) and sizes == ((1280, 720), (640, 480)),
              "parts %d / %d, sizes %s" % (len(stream_parts(a.data())), len(stream_parts(b.data())), sizes))

        other_before = len(set_cur_lines(log_lines(LOG1)))
        wb_before = ctrls("white_balance_automatic", "white_balance_temperature", cam=1)
        r = http("POST", "/api/cameras/%s/session/white-balance" % C920, {"mode": "locked", "temperature": 4500})
        mine = ctrls("white_balance_automatic", "white_balance_temperature", cam=0)
        check("two cameras: white balance on the C920 -> the C920 has it (off, 4500)",
              r.status == 200 and mine == {"white_balance_automatic": 0, "white_balance_temperature": 4500},
              "%s; camera %s" % (r.status, mine))
        check("two cameras: ... and nothing reached the C270",
              len(set_cur_lines(log_lines(LOG1))) == other_before
              and ctrls("white_balance_automatic", "white_balance_temperature", cam=1) == wb_before,
              "C270 log: %s" % set_cur_lines(log_lines(LOG1))[other_before:])

        u = subprocess.run([CTL, "unplug", "1"], capture_output=True, text=True, timeout=60)
        forget_nodes()
        s = poll(lambda: (lambda s: s if s.get("state") == "interrupted" else None)(http("GET", c270).json or {}), 10)
        check("two cameras: the C270 unplugged -> its session interrupted", u.returncode == 0 and bool(s),
              "unplug rc %s %s" % (u.returncode, u.stderr.strip()))
        n0 = len(stream_parts(a.data()))
        more = poll(lambda: len(stream_parts(a.data())) >= n0 + 3, 20, 0.25)
        check("two cameras: ... while the C920 streams on, running",
              bool(more) and state().get("state") == "running" and dig(state(), "camera", "id") == C920,
              "%d parts before, %d after; state %s" % (n0, len(stream_parts(a.data())), state().get("state")))
        p = subprocess.run([CTL, "plug", "1"], capture_output=True, text=True, timeout=90)
        forget_nodes()
        s = poll(lambda: (lambda s: s if s.get("state") == "running" else None)(http("GET", c270).json or {}), 30, 0.25)
        check("two cameras: the C270 plugged back -> its own session running again", p.returncode == 0 and bool(s),
              "plug rc %s %s; state %s" % (p.returncode, p.stderr.strip(), (http("GET", c270).json or {}).get("state")))
    finally:
        a.close()
        b.close()
        r = http("POST", c270 + "/stop", timeout=60)
        check("two cameras: stop the C270's own session -> idle", r.status == 200 and (r.json or {}).get("state") == "idle", repr(r))
        http("POST", "/api/cameras/%s/session/white-balance" % C920, {"mode": "continuous"})


def c920_card():
    """The host-side sound card of the C920's uac2 function: (number, id), or (None, None)."""
    try:
        text = open("/proc/asound/cards").read()
    except OSError:
        return None, None
    for m in re.finditer(r"^\s*(\d+) \[(\S+)\s*\]: USB-Audio - (.*)$", text, re.M):
        if "C920" in m.group(3):
            return int(m.group(1)), m.group(2)
    return None, None


def wav_second():
    """A second of the session's audio.wav as the card delivered it: whether it is exactly
    48000 mono 16-bit samples with its headers, and the reply."""
    r = http("GET", "/audio.wav?seconds=1", timeout=30)
    ok = (r.status == 200 and r.headers.get("x-audio-rate") == "48000" and r.headers.get("x-audio-channels") == "1"
          and len(r.body) == 44 + 2 * 48000 and r.body[:4] == b"RIFF")
    return ok, r


def microphone():
    """The C920 model's microphone (a uac2 function on the same USB device, read by
    snd-usb-audio) is the camera's own by "auto": listed with what the device offers, running
    with the session, and served as audio.wav (silence: nothing plays on the gadget's side);
    the C270 model has none."""
    cams = {c.get("id"): c for c in (http("GET", "/api/cameras").json or {}).get("cameras", [])}
    number, card = c920_card()
    mic = dig(cams.get(C920), "audio") or {}
    note("microphone: /proc/asound card %s [%s]; /api/cameras says %s" % (number, card, json.dumps(mic)[:300]))
    check("microphone: snd-usb-audio made a card of the C920's uac2 function", number is not None, open("/proc/asound/cards").read())
    check("microphone: the C920's audio device is that card's capture PCM (hw:CARD=%s,DEV=0)" % card,
          mic.get("device") == "hw:CARD=%s,DEV=0" % card, json.dumps(mic))
    caps = mic  # rates, channels, mixer, gainDb beside the device
    check("microphone: its capabilities read from the device: 48000 Hz, 1 channel", 48000 in (caps.get("rates") or [])
          and caps.get("channels") == [1], json.dumps(mic))
    c270_mic = dig(cams.get(C270), "audio") or {}
    check("microphone: the C270 (modelled without one) has none: \"auto\" finds no card, and says so",
          c270_mic.get("device") == "auto" and "no sound card" in (c270_mic.get("error") or ""), json.dumps(c270_mic))
    s = poll(lambda: (lambda a: a if a.get("running") else None)(state().get("audio") or {}), 15)
    check("microphone: the session's audio runs on it", bool(s) and s.get("device") == mic.get("device"), json.dumps(state().get("audio")))
    # Under TCG the emulated uac2 card holds its samples back and delivers them in bursts
    # (some 100 overruns a minute); the capture clock fills what it lost and drops what a fill
    # already covered, so a clip's timeline is whole (issue 45: the retries that hid clips
    # ended at a "hole" are gone).
    ok, r = wav_second()
    note("microphone: clip: %d bytes, overruns %s" % (len(r.body) if r else 0, (state().get("audio") or {}).get("overruns")))
    check("microphone: audio.wav?seconds=1 is a second of the card's sound, 48 kHz mono", ok, repr(r)[:300])


# What the replugs and the power cut leave on the C920, away from its power-on defaults.
NAMES = ("zoom_absolute", "focus_automatic_continuous", "focus_absolute", "auto_exposure",
         "exposure_time_absolute", "white_balance_automatic", "white_balance_temperature", "brightness")
REPLUG_WANT = {"zoom_absolute": 200, "focus_automatic_continuous": 0, "focus_absolute": (150, 155), "auto_exposure": 1,
               "exposure_time_absolute": 200, "white_balance_automatic": 0, "white_balance_temperature": 3000, "brightness": 90}


def replug(hold):
    label = "replug with the old node held open" if hold else "replug"
    # the session's settings before the unplug, all away from the camera's power-on
    # defaults (zoom_absolute 100, focus automatic at 0, exposure aperture priority 250,
    # white balance automatic 4000): zoom 2 (zoom_absolute 200), focus locked 0.6
    # (focus_absolute 153, on the 5-step: 150 or 155), exposure custom 0.02 s (200), white
    # balance locked 3000 K
    r = http("POST", "/api/session/zoom", {"factor": 2})
    rf = http("POST", "/api/session/focus", {"mode": "locked", "lensPosition": 0.6})
    rx = http("POST", "/api/session/exposure", {"mode": "custom", "duration": 0.02})
    rw = http("POST", "/api/session/white-balance", {"mode": "locked", "temperature": 3000})
    # and one of the camera's own controls by key, which no setting stands for: kept too
    rb = http("POST", "/api/session/controls", {"brightness": 90})
    check("%s: brightness set by key is kept (the state's controls)" % label,
          rb.status == 200 and (state().get("controls") or {}).get("brightness") == 90, "%r; controls %s" % (rb, state().get("controls")))
    want = dict(REPLUG_WANT)

    def matches(v):
        return all(v.get(n) in w if isinstance(w, tuple) else v.get(n) == w for n, w in want.items())
    was = poll(lambda: (lambda v: v if matches(v) else None)(ctrls(*NAMES)), 5)
    if was:
        want["focus_absolute"] = was["focus_absolute"]       # the very value must come back
    old = node(0)
    note("%s: zoom 2, focus, exposure, white balance -> %s %s %s %s; camera before the unplug: %s on %s" % (
        label, r.status, rf.status, rx.status, rw.status, ctrls(*NAMES), old))
    check("%s: before the unplug the camera has the session's settings %s" % (label, want), bool(was),
          "camera %s" % ctrls(*NAMES))
    fd = os.open(old, os.O_RDWR | os.O_NONBLOCK) if hold and old else None
    card_before = c920_card()
    aloop = False
    viewer = Reader("/stream")
    try:
        poll(lambda: len(stream_parts(viewer.data())) >= 1, 20)
        u = subprocess.run([CTL, "unplug", "0"], capture_output=True, text=True, timeout=60)
        forget_nodes()
        s = poll(lambda: (lambda s: s if s.get("state") == "interrupted" else None)(state()), 10)
        check("%s: unplug -> session interrupted within 10 s" % label, u.returncode == 0 and bool(s),
              "unplug rc %s %s; state %s" % (u.returncode, u.stderr.strip(), state().get("state")))
        a = poll(lambda: (lambda a: a if not a.get("running") and a.get("error") else None)(state().get("audio") or {}), 10)
        check("%s: unplug -> the sound stops and audio.error says why" % label, bool(a), json.dumps(state().get("audio")))
        n0 = len(stream_parts(viewer.data()))
        more = poll(lambda: len(stream_parts(viewer.data())) >= n0 + 2, 10)
        check("%s: the stream client keeps receiving parts while unplugged" % label, bool(more),
              "%d parts before, %d after 10 s" % (n0, len(stream_parts(viewer.data()))))
        if hold and card_before[0] is not None:
            # the microphone's card number taken meanwhile (another card, snd-aloop, gets it):
            # the replugged webcam's card comes back under another number, as after a reboot
            # or beside other USB audio
            gone = poll(lambda: c920_card()[0] is None, 10)
            r = subprocess.run(["modprobe", "snd-aloop", "index=%d" % card_before[0]], capture_output=True, text=True)
            aloop = r.returncode == 0
            check("%s: the old card number %d given to snd-aloop" % (label, card_before[0]), bool(gone) and aloop,
                  "card gone %s; modprobe %s %s" % (gone, r.returncode, r.stderr.strip()))
        p = subprocess.run([CTL, "plug", "0"], capture_output=True, text=True, timeout=90)
        forget_nodes()
        new = p.stdout.strip()
        note("%s: camera back as %s (was %s)" % (label, new, old))
        if hold:
            check("%s: the camera came back under another node" % label, p.returncode == 0 and new and new != old,
                  "plug rc %s, node %s, was %s" % (p.returncode, new, old))
        s = poll(lambda: (lambda s: s if s.get("state") == "running" and dig(s, "camera", "id") == C920 else None)(state()), 30, 0.25)
        check("%s: plug -> running again within 30 s, same camera id %s" % (label, C920), p.returncode == 0 and bool(s),
              "plug rc %s %s; state %s camera %s error %s" % (p.returncode, p.stderr.strip(), state().get("state"),
                                                              dig(state(), "camera", "id"), state().get("error")))
        card_after = c920_card()
        a = poll(lambda: (lambda a: a if a.get("running") and not a.get("error") else None)(state().get("audio") or {}), 30, 0.25)
        note("%s: microphone card %s [%s] before, %s [%s] after" % (label, card_before[0], card_before[1], card_after[0], card_after[1]))
        check("%s: the microphone runs again on the replugged card (%s)" % (label, "hw:CARD=%s,DEV=0" % card_after[1]),
              bool(a) and a.get("device") == "hw:CARD=%s,DEV=0" % card_after[1], json.dumps(state().get("audio")))
        if hold:
            check("%s: the microphone came back under another card number" % label,
                  card_after[0] is not None and card_after[0] != card_before[0], "%s -> %s" % (card_before, card_after))
        # A clip ends early at a hole in the sound's timeline. After a replug the emulated
        # card's stream has, on some runs, restarted its timeline at every buffer (each clip
        # 10 ms; whole seconds on others, under the old card number or a new one): left for its
        # own issue (the issue 37 note). Asserted: sound flows again; the clip's length printed.
        got = []
        poll(lambda: (lambda w: got.append(w[1]) or w[0])(wav_second()), 5, 0.5)
        last = got[-1] if got else None
        note("%s: audio.wav?seconds=1 gave %d bytes (a whole second is %d)" % (label, len(last.body) if last else 0, 44 + 96000))
        check("%s: and audio.wav serves its sound again" % label,
              last is not None and last.status == 200 and len(last.body) > 44, repr(last)[:200])
        v = poll(lambda: (lambda v: v if matches(v) else None)(ctrls(*NAMES)), 5) or ctrls(*NAMES)
        for names, what in ((("zoom_absolute",), "zoom_absolute"), (("brightness",), "brightness set by key"),
                            (("focus_automatic_continuous", "focus_absolute"), "focus locked at its lens position"),
                            (("auto_exposure", "exposure_time_absolute"), "manual exposure time"),
                            (("white_balance_automatic", "white_balance_temperature"), "locked white balance temperature")):
            check("%s: %s back at the session's %s (the camera came up at its defaults)" % (
                      label, what, ", ".join("%s %s" % (n, want[n]) for n in names)),
                  all(v.get(n) in want[n] if isinstance(want[n], tuple) else v.get(n) == want[n] for n in names),
                  "camera %s 5 s after running again" % {n: v.get(n) for n in names})
    finally:
        viewer.close()
        if fd is not None:
            os.close(fd)
        if aloop:
            subprocess.run(["rmmod", "snd_aloop"], capture_output=True)


def power_cut(tmp, proc):
    """Issue 57: the server SIGKILLed and the C920 unplugged and plugged back while it is down
    (a power cut for both: the camera comes back at its defaults). The next server puts every
    setting the session had back on the camera — a lock's exposure time and a control set by
    key among them — and its state and saved-state report say so."""
    global BASE, PORT
    r = http("POST", "/api/session/exposure", {"mode": "locked"})  # holds the custom 0.02 s (200)
    check("power cut: the custom exposure locked where it is", r.status == 200 and dig(r.json, "exposure", "mode") == "locked"
          and ctrl("exposure_time_absolute") == 200, "%r; camera %s" % (r, ctrl("exposure_time_absolute")))
    want = dict(REPLUG_WANT)
    was = ctrls(*NAMES)
    if isinstance(want["focus_absolute"], tuple) and was.get("focus_absolute") in want["focus_absolute"]:
        want["focus_absolute"] = was["focus_absolute"]
    saved = poll(lambda: (http("GET", "/api/state").json or {}).get("saved") is True, 5)
    check("power cut: everything on disk before the kill (GET /api/state saved)", bool(saved), repr(http("GET", "/api/state")))
    proc[0].kill()
    proc[0].wait(10)
    u = subprocess.run([CTL, "unplug", "0"], capture_output=True, text=True, timeout=60)
    forget_nodes()
    p = subprocess.run([CTL, "plug", "0"], capture_output=True, text=True, timeout=90)
    forget_nodes()
    fresh = poll(lambda: node(0), 30) and ctrls(*NAMES)
    check("power cut: the camera came back at its defaults (brightness 128, automatic exposure)",
          u.returncode == 0 and p.returncode == 0 and bool(fresh) and fresh.get("brightness") == 128 and fresh.get("auto_exposure") != 1,
          "unplug %s plug %s %s; camera %s" % (u.returncode, p.returncode, p.stderr.strip(), fresh))
    proc[0], PORT = start_server(tmp)
    BASE = "http://127.0.0.1:%d" % (PORT or 0)
    s = poll(lambda: (lambda s: s if s.get("state") == "running" and dig(s, "camera", "id") == C920 else None)(state()), 30, 0.25)
    check("power cut: the server starts again on the C920, running", bool(PORT) and bool(s), "port %s state %s" % (PORT, state().get("state")))
    v = poll(lambda: (lambda v: v if all(v.get(n) in w if isinstance(w, tuple) else v.get(n) == w for n, w in want.items()) else None)(ctrls(*NAMES)), 5) or ctrls(*NAMES)
    check("power cut: every setting back on the camera %s" % want,
          all(v.get(n) in w if isinstance(w, tuple) else v.get(n) == w for n, w in want.items()), "camera %s" % v)
    st = state()
    check("power cut: the state says the same (exposure locked at 0.02 s, brightness 90 kept, zoom 2)",
          dig(st, "exposure", "mode") == "locked" and dig(st, "exposure", "duration") == 0.02
          and (st.get("controls") or {}).get("brightness") == 90 and dig(st, "zoom", "factor") == 2, json.dumps({k: st.get(k) for k in ("exposure", "controls", "zoom")}))
    rep = http("GET", "/api/state").json or {}
    check("power cut: the saved state read whole, nothing dropped", rep.get("loadedFrom") == "current" and rep.get("dropped") == []
          and rep.get("problems") == [], json.dumps({k: rep.get(k) for k in ("loadedFrom", "dropped", "problems")}))


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
             ("microphone", microphone), ("zoom", zoom), ("focus locked", focus_locked), ("automatic modes", automatic_modes),
             ("exposure custom", exposure_custom), ("white balance locked", white_balance_locked),
             ("unrelated call", unrelated_call), ("outside change", outside_change),
             ("refused write", refused_write), ("ONVIF imaging", onvif_imaging), ("C270", c270), ("stream and photo", stream_and_photo),
             ("MJPEG pass-through", mjpeg_passthrough), ("live H.264 from MJPEG", lambda: live_h264(tmp)),
             ("recording", lambda: recording(tmp)), ("motion event", lambda: motion_event(tmp)),
             ("two cameras at once", two_cameras),
             ("unplug/replug", lambda: replug(False)),
             ("unplug/replug, node held", lambda: replug(True)),
             ("power cut", lambda: power_cut(tmp, proc))]
    # UVC_STEPS="microphone,zoom": only those steps (after discovery and the C920's selection),
    # for working on one; CI runs them all.
    only = [n.strip() for n in os.environ.get("UVC_STEPS", "").split(",") if n.strip()]
    if only:
        steps = [s for s in steps if s[0] in only or s[0] in ("discovery", "select the C920")]
    proc = [server]  # the power cut starts another
    try:
        for name, fn in steps:
            note("-- %s" % name)
            try:
                fn()
            except Exception as e:        # one broken step must not hide the others
                check("%s: ran without an exception" % name, False, "%s: %s" % (type(e).__name__, e))
            if proc[0].poll() is not None:
                check("the server is still running after '%s'" % name, False, "exit status %s" % proc[0].returncode)
                break
    finally:
        stop_server(proc[0])
    if failed:
        tail = open(os.path.join(tmp, "server.log"), errors="replace").read().splitlines()[-25:]
        print("server log (last lines):\n  " + "\n  ".join(tail))
    status = vmtest.summary()
    note("done")
    return status


if __name__ == "__main__":
    sys.exit(main())
