#!/usr/bin/python3
"""`make test-libcamera`: a camera through libcamera (issue 56), on a real libcamera pipeline:
libcamera's vimc pipeline handler (and its IPA, Debian's libcamera-ipa) on the kernel's vimc
driver — a raw-Bayer sensor, a debayer and a scaler in a media-controller graph, the shape of a
Raspberry Pi's unicam path. Cross-checked with libcamera's own `cam`: the camera `cam -l`
lists is the one `viewfinder cameras` lists (as `libcamera`, its id as the device), and none
of vimc's own V4L2 nodes is offered a second time as a V4L2 camera. Then the server with that
camera configured: /api/cameras says what it is, a snapshot is a JPEG of the size asked, the
MJPEG stream delivers, and a libcamera id that does not exist is refused by name while the
other camera serves.

Runs inside `scripts/vm --vimc`. Standard library only. Every wait polls against a deadline.
Prints PASS/FAIL per check and `N passed, N failed`; exits 1 when anything failed.
"""
import json
import os
import re
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "vm"))
import vmtest  # noqa: E402
from vmtest import check, failed, poll, SERVER, jpeg_size  # noqa: E402
CAMERA = "platform/vimc.0 Sensor B"
SIZE = (1920, 1080)  # vimc 0.0.3 takes multiples of 6 only: 640x480 would be 636x480


def http(port, path, timeout=60, method="GET", body=None):
    data = json.dumps(body).encode() if body is not None else (b"" if method == "POST" else None)
    req = urllib.request.Request("http://127.0.0.1:%d%s" % (port, path), method=method, data=data,
                                 headers={"Content-Type": "application/json"} if body is not None else {})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()
    except (urllib.error.URLError, OSError) as e:
        return 0, {}, json.dumps({"error": str(e)}).encode()


def sensor_control(name):
    """vimc's sensor subdevice's V4L2 control, as v4l2-ctl reads it from the driver."""
    for n in sorted(os.listdir("/sys/class/video4linux")):
        if n.startswith("v4l-subdev") and open("/sys/class/video4linux/%s/name" % n).read().strip() == "Sensor B":
            out = subprocess.run(["v4l2-ctl", "-d", "/dev/" + n, "--get-ctrl", name], capture_output=True, text=True).stdout
            m = re.search(r":\s*(-?\d+)", out)
            return int(m.group(1)) if m else None
    return None


def mean_luma(jpeg):
    from PIL import Image
    import io
    img = Image.open(io.BytesIO(jpeg)).convert("L").resize((64, 36))
    return sum(img.getdata()) / (64 * 36)


def controls(port):
    """pi's own controls by key, as GET …/controls answers them."""
    status, _, body = http(port, "/api/cameras/pi/session/controls")
    try:
        return status, {c["key"]: c for c in json.loads(body)["controls"]}
    except (ValueError, KeyError, TypeError):
        return status, {"body": body[-300:]}


def adjustments(port):
    """libcamera's picture adjustments as the camera's own controls, set, read back from the
    driver under libcamera (the sensor's V4L2 control), seen in the picture, and kept over a
    stop and start; a value out of range clamped, a control it lacks refused by name."""
    status, listed = controls(port)
    b = listed.get("brightness", {})
    check("the camera's controls are libcamera's adjustments, in thousandths (brightness -1000…1000)",
          status == 200 and sorted(listed) == ["brightness", "contrast", "saturation"]
          and (b.get("minimum"), b.get("maximum")) == (-1000, 1000), listed)
    lumas = {}
    for value in (-750, 750):
        status, _, body = http(port, "/api/cameras/pi/session/controls", method="POST", body={"brightness": value})
        got = {c["key"]: c for c in json.loads(body).get("controls", [])} if status == 200 else {}
        # libcamera's vimc handler writes 128 + 128 x Brightness to the sensor's brightness (0…255).
        want = 128 + round(value / 1000 * 128)
        check("brightness %d: answered as set, and the sensor's V4L2 brightness is %d" % (value, want),
              got.get("brightness", {}).get("value") == value and poll(lambda: sensor_control("brightness") == want, 10),
              (status, body[-300:], sensor_control("brightness")))
        # The answer came once a request carrying the setting had completed; the snapshot may
        # still be a frame encoded before it: the picture is awaited (the sensor's 32 of 255 is
        # dark, 224 bright).
        def snapshot_luma():
            status, _, snap = http(port, "/cameras/pi/snapshot", timeout=120)
            lumas[value] = mean_luma(snap) if status == 200 else None
            return lumas[value] is not None and (lumas[value] < 80 if value < 0 else lumas[value] > 140)
        poll(snapshot_luma, 30, 0.5)
    check("the picture is dark at -750 and bright at +750 (%s)" % lumas,
          None not in lumas.values() and lumas[-750] < 80 and lumas[750] > 140, lumas)
    status, _, body = http(port, "/api/cameras/pi/session/controls", method="POST", body={"brightness": 5000})
    check("brightness 5000 is clamped to 1000", status == 200 and controls(port)[1].get("brightness", {}).get("value") == 1000
          and poll(lambda: sensor_control("brightness") == 255, 10), (status, body[-300:], sensor_control("brightness")))
    status, _, body = http(port, "/api/cameras/pi/session/controls", method="POST", body={"focus_absolute": 3})
    err = json.loads(body).get("error", {}) if body else {}
    check("a control it lacks: 422 naming it, the supported ones listed",
          status == 422 and "focus_absolute" in json.dumps(err) and "brightness" in json.dumps(err), (status, body[-400:]))
    http(port, "/api/cameras/pi/session/controls", method="POST", body={"brightness": 500})
    http(port, "/api/cameras/pi/session/stop", method="POST")
    http(port, "/api/cameras/pi/session/start", method="POST")
    running = poll(lambda: json.loads(http(port, "/api/cameras/pi/session")[2]).get("state") == "running", 120, 1)
    check("after a stop and a start the camera has its brightness again (500: the sensor's 192)",
          running and poll(lambda: sensor_control("brightness") == 192, 10)
          and controls(port)[1].get("brightness", {}).get("value") == 500,
          (running, sensor_control("brightness")))
    # Set while stopped: the camera holds it (the answer and the controls say so) for its start.
    http(port, "/api/cameras/pi/session/stop", method="POST")
    status, _, body = http(port, "/api/cameras/pi/session/controls", method="POST", body={"brightness": 250})
    answered = {c["key"]: c for c in json.loads(body).get("controls", [])}.get("brightness", {}).get("value") if status == 200 else None
    listed = controls(port)[1].get("brightness", {}).get("value")
    http(port, "/api/cameras/pi/session/start", method="POST")
    running = poll(lambda: json.loads(http(port, "/api/cameras/pi/session")[2]).get("state") == "running", 120, 1)
    check("brightness 250 set while stopped: answered and listed so, and the sensor's 160 once it runs",
          answered == 250 and listed == 250 and running and poll(lambda: sensor_control("brightness") == 160, 10),
          (status, answered, listed, running, sensor_control("brightness")))


def facade_versions():
    """The facade on each libcamera Tests/libcamera/facade-versions built it against (Debian 12's
    0.0.3, bookworm-backports' 0.3.2): facade-smoke lists, configures, streams, sets a control
    and reads it back, and is refused out of range, on vimc's camera."""
    base = os.path.join(vmtest.REPO, ".build", "libcamera-facade")
    versions = sorted(os.listdir(base)) if os.path.isdir(base) else []
    check("the facade was built against libcamera 0.0.3 and 0.3.2 (%s)" % versions, {"0.0.3", "0.3.2"} <= set(versions), base)
    for v in versions:
        env = dict(os.environ)
        with open(os.path.join(base, v, "env")) as f:
            env.update(line.strip().split("=", 1) for line in f if "=" in line)
        r = subprocess.run([os.path.join(base, v, "facade-smoke"), CAMERA, str(SIZE[0]), str(SIZE[1]), "Brightness", "0.5"],
                           capture_output=True, text=True, timeout=300, env=env)
        lines = [line for line in r.stdout.splitlines() if not line.startswith("control:")]
        check("libcamera %s: the facade streams vimc's camera, sets Brightness and reads it back" % v,
              r.returncode == 0 and lines[-1:] == ["ok"] and ("version: v" + v) in lines, "\n".join(lines) + r.stderr[-800:])


def start_server(tmp, cameras):
    p, ports = vmtest.start_server(tmp, {
        "cameras": cameras, "session": {"preset": "%dx%d" % SIZE, "fps": 15}, "rtsp": {"enabled": False},
        "onvif": {"enabled": False},
        "capture": {"directory": os.path.join(tmp, "p")}, "recording": {"directory": os.path.join(tmp, "m")}}, 180)
    if "http" not in ports:
        p.kill()
        sys.exit("the server did not start: " + vmtest.server_log(tmp))
    return p, ports["http"]


def main():
    media = os.environ.get("V4L2_VM_VIMC_MEDIA", "")
    check("vimc's media device is there (%s)" % media, bool(media) and os.path.exists(media))
    topology = subprocess.run(["media-ctl", "-d", media, "-p"], capture_output=True, text=True).stdout if media else ""
    check("media-ctl: vimc's graph (sensor, debayer, scaler)", all(e in topology for e in ("Sensor B", "Debayer B", "Scaler")), topology[-500:])

    listed = subprocess.run(["cam", "-l"], capture_output=True, text=True, timeout=120)
    check("cam -l lists %s" % CAMERA, CAMERA in listed.stdout, listed.stdout + listed.stderr)

    out = subprocess.run([SERVER, "cameras", "--cameras", "auto", "--json"], capture_output=True, text=True, timeout=180)
    try:
        cameras = json.loads(out.stdout)["cameras"]
    except ValueError:
        cameras = []
    ours = [c for c in cameras if c.get("kind") == "libcamera"]
    check("viewfinder cameras lists the libcamera camera cam lists, and only it",
          [c.get("device") for c in ours] == [CAMERA] and ours[0]["id"] == "platform-vimc.0-sensor-b", out.stdout[-1500:] + out.stderr[-500:])
    vimc_nodes = {"/dev/" + n for n in os.listdir("/sys/class/video4linux")
                  if open("/sys/class/video4linux/%s/name" % n).read().strip() in ("Raw Capture 0", "Raw Capture 1", "RGB/YUV Capture")}
    check("none of vimc's V4L2 nodes is a V4L2 camera of its own",
          vimc_nodes and not any(c.get("device") in vimc_nodes for c in cameras if c.get("kind") == "v4l2"), (vimc_nodes, cameras))
    sizes = {(f["width"], f["height"]) for c in ours for f in c.get("formats", [])}
    check("its formats are sizes libcamera takes as they are (%s among them, 640x480 not)" % ("%dx%d" % SIZE),
          SIZE in sizes and (640, 480) not in sizes, sorted(sizes))

    facade_versions()

    tmp = tempfile.mkdtemp(prefix="vf-vimc-")
    p, port = start_server(tmp, [{"id": "pi", "source": "libcamera", "device": CAMERA, "autostart": True},
                                 {"id": "gone", "source": "libcamera", "device": "platform/no-such-camera"}])
    try:
        _, _, body = http(port, "/api/cameras")
        listing = {c["id"]: c for c in json.loads(body)["cameras"]}
        pi = listing.get("pi", {})
        check("/api/cameras: pi is a libcamera camera named by its id", pi.get("kind") == "libcamera" and pi.get("device") == CAMERA, pi)
        running = poll(lambda: json.loads(http(port, "/api/cameras/pi/session")[2]).get("state") == "running", 180, 1)
        check("pi's session runs", running, http(port, "/api/cameras/pi/session")[2][-800:])
        # The first frame is the first request completed, seconds after "running" under TCG at 1080p.
        status, headers, snap = poll(lambda: (lambda r: r if r[0] == 200 else None)(http(port, "/cameras/pi/snapshot", timeout=120)), 60) \
            or http(port, "/cameras/pi/snapshot", timeout=120)
        check("a snapshot is a %dx%d JPEG of the camera (online)" % SIZE,
              status == 200 and jpeg_size(snap) == SIZE and headers.get("X-Viewfinder-Online") != "false",
              (status, jpeg_size(snap), headers, snap[-200:] if status != 200 else b""))
        # Frames come from the camera, not a placeholder: while a viewer watches, the preview's
        # sequence (the camera's own frame numbers) moves.
        seq = lambda: json.loads(http(port, "/api/cameras/pi/session")[2]).get("frames", {}).get("sequence", 0)
        viewer = subprocess.Popen(["curl", "-s", "-m", "30", "http://127.0.0.1:%d/cameras/pi/stream" % port], stdout=subprocess.PIPE)
        first = poll(seq, 20)
        check("pi's frames come (the sequence moves past %d)" % first, poll(lambda: seq() >= first + 3, 25, 0.5), seq())
        parts = viewer.communicate(timeout=60)[0].count(b"Content-Type: image/jpeg")
        check("the MJPEG stream delivers (%d parts in 30 s)" % parts, parts >= 3)
        log = open(os.path.join(tmp, "server.log")).read()
        check("a libcamera id that does not exist is left out, by name, the other camera served",
              "gone" not in listing and "platform/no-such-camera" in log and "pi" in listing, (sorted(listing), log[-800:]))
        check("pi is still running", json.loads(http(port, "/api/cameras/pi/session")[2]).get("state") == "running")
        caps = pi.get("capabilities", {})
        check("its capabilities are what vimc's ControlInfoMap has: no focus, exposure or white balance to set",
              caps.get("focusModes") == ["locked"] and caps.get("exposureModes") == ["continuous"] and not caps.get("lensPosition"), caps)
        adjustments(port)
    finally:
        p.terminate()
        try:
            code = p.wait(60)
        except subprocess.TimeoutExpired:
            p.kill()
            code = None
        check("the server stops on SIGTERM", code == 0, code)
        if failed:
            log = open(os.path.join(tmp, "server.log"), errors="replace").read()
            crash = log.find("💣")
            crash = crash if crash >= 0 else log.find("crashed")
            print(log[max(crash - 3000, 0):crash + 5000] if crash >= 0 else log[-3000:], file=sys.stderr)
    sys.exit(vmtest.summary())


main()
