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


def http(port, path, timeout=60, method="GET"):
    req = urllib.request.Request("http://127.0.0.1:%d%s" % (port, path), method=method, data=b"" if method == "POST" else None)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()
    except (urllib.error.URLError, OSError) as e:
        return 0, {}, json.dumps({"error": str(e)}).encode()


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
        status, headers, snap = http(port, "/cameras/pi/snapshot", timeout=120)
        check("a snapshot is a %dx%d JPEG of the camera (online)" % SIZE,
              status == 200 and jpeg_size(snap) == SIZE and headers.get("X-Viewfinder-Online") != "false", (status, jpeg_size(snap), headers))
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
    finally:
        p.terminate()
        try:
            code = p.wait(60)
        except subprocess.TimeoutExpired:
            p.kill()
            code = None
        check("the server stops on SIGTERM", code == 0, code)
        if failed:
            print(open(os.path.join(tmp, "server.log")).read()[-3000:], file=sys.stderr)
    sys.exit(vmtest.summary())


main()
