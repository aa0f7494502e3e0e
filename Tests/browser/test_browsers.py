#!/usr/bin/python3
"""The camera page in the engines besides Chromium (test_page.py's) that a new user may open it
with: Firefox ESR, headless, driven through Marionette, and WebKitGTK (Safari's engine: its
MiniBrowser driven through WebKitWebDriver, under Xvfb).

Each browser loads the page from a viewfinder of its own (two synthetic cameras, port 0, a
temporary config) and the test checks that the preview shows frames (a picture that changes);
that the transport badge says how they come: WebRTC, or MJPEG with the reason. Firefox here
has no OpenH264 (a fresh profile that downloads nothing, as on a machine without internet), so
its offer has VP8, VP9 and AV1: it must play WebRTC in VP8 (the server's VP8 rendition; with
OpenH264 it would be H.264). WebKitGTK has no RTCPeerConnection: "MJPEG ·
no WebRTC in this browser". And that the preview, shutter, switch and tiles fit a 1280x720 and a
1280x657 viewport and a 390x844 phone (a frame of that size: neither browser opens a window
that narrow), with nothing in the controls column cut at its right edge. Screenshots go to
Tests/browser/out/. Which badge each browser got is printed.

marionette_driver comes from PyPI into .build/marionette-venv (pinned in
Tests/browser/requirements.txt, installed on first use); the script then runs itself again with
that venv's python, which also sees Debian's python3-selenium. Firefox ESR, WebKitWebDriver
and Xvfb are Debian's (scripts/install-deps --test).

VIEWFINDER_BIN (or VIEWFINDER_BINARY) picks the server binary, .build/debug/viewfinder by
default (harness.py, shared with test_page.py and test_grid.py). Run by `make test`: /usr/bin/python3 Tests/browser/test_browsers.py
"""
import glob
import json
import os
import re
import select
import shutil
import subprocess
import sys
import time
import unittest
import urllib.parse
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "Tests/browser/out"
VENV = ROOT / ".build/marionette-venv"
REQUIREMENTS = Path(__file__).resolve().parent / "requirements.txt"
FIREFOX = shutil.which("firefox-esr") or shutil.which("firefox") or "/usr/bin/firefox-esr"
WEBKITWEBDRIVER = shutil.which("WebKitWebDriver") or "/usr/bin/WebKitWebDriver"
MINIBROWSER = next(iter(sorted(glob.glob("/usr/lib/*/webkit2gtk-4.*/MiniBrowser")) + sorted(glob.glob("/usr/lib/*/webkitgtk-6.*/MiniBrowser"))),
                   "/usr/lib/x86_64-linux-gnu/webkit2gtk-4.1/MiniBrowser")


def marionette_venv():
    """The venv's python (scripts/py-venv: made once, again when the requirements change); it
    sees the system's packages too (python3-selenium)."""
    subprocess.run([str(ROOT / "scripts/py-venv"), str(VENV), "--system-site-packages", "--",
                    "--no-deps", "-r", str(REQUIREMENTS)], check=True)
    return VENV / "bin/python3"


try:
    from marionette_driver.marionette import Marionette
except ImportError:
    if __name__ != "__main__":
        raise
    python = marionette_venv()
    os.execv(python, [str(python), str(Path(__file__).resolve()), *sys.argv[1:]])

from selenium import webdriver  # noqa: E402
from selenium.webdriver.remote.remote_connection import RemoteConnection  # noqa: E402
from selenium.webdriver.webkitgtk.options import Options as WebKitGTKOptions  # noqa: E402

from harness import TEMPS, Viewfinder, end, run, spawn, temporary, until  # noqa: E402

# Selenium 4.8's WebKitGTK options still carry `platform`, which it converts with a warning.
warnings.filterwarnings("ignore", "platform is not a w3c capability", DeprecationWarning)
RemoteConnection.set_timeout(60)  # a WebDriver call (a new session: a browser that never comes) fails in 60 s

# Two cameras configured as a list (as test_page.py's layout test): the tiles row shows.
TWO_CAMERAS = [{"id": "rear", "source": "synthetic", "position": "rear"},
               {"id": "front", "source": "synthetic", "position": "front", "preset": "352x288"}]


class Server(Viewfinder):
    """viewfinder on 127.0.0.1, port 0, two synthetic cameras, photos and movies in a temp dir."""

    def __init__(self):
        super().__init__({"cameras": TWO_CAMERAS}, ["--preset", "640x480"], prefix="vf-browsers-")


class Firefox:
    """Firefox ESR, headless, in a fresh profile, driven through Marionette (its own port,
    which it writes to the profile's MarionetteActivePort). No OpenH264 is downloaded (as on a
    machine without internet); ICE over loopback, host candidates as addresses (no mDNS)."""
    name = "firefox"
    PREFS = {"marionette.port": 0,
             "media.peerconnection.ice.loopback": True,
             "media.peerconnection.ice.obfuscate_host_addresses": False,
             "media.gmp-manager.updateEnabled": False,
             "media.autoplay.default": 0,
             "browser.shell.checkDefaultBrowser": False,
             "toolkit.startup.max_resumed_crashes": -1}

    def __init__(self):
        if not os.path.exists(FIREFOX):
            raise RuntimeError(f"no {FIREFOX}: scripts/install-deps --test installs firefox-esr")
        self.profile = temporary("vf-firefox-")
        (Path(self.profile) / "user.js").write_text(
            "".join(f"user_pref({json.dumps(k)}, {json.dumps(v)});\n" for k, v in self.PREFS.items()))
        self.log = open(OUT / "firefox.log", "wb")
        self.proc = spawn([FIREFOX, "--headless", "--marionette", "--no-remote", "--profile", self.profile,
                           "--width", "1280", "--height", "800", "about:blank"],
                          stdout=self.log, stderr=subprocess.STDOUT, env=dict(os.environ, MOZ_HEADLESS="1"))
        port_file = Path(self.profile) / "MarionetteActivePort"

        def port():
            if self.proc.poll() is not None:
                raise RuntimeError(f"Firefox exited ({self.proc.returncode}): see {OUT / 'firefox.log'}")
            try:
                return int(port_file.read_text())
            except (OSError, ValueError):
                return None
        self.m = Marionette(host="127.0.0.1", port=until(port, "Firefox's Marionette listens", timeout=60, every=0.1),
                            socket_timeout=60)
        self.m.start_session()
        self.m.timeout.page_load = 30
        self.m.timeout.script = 15
        self.version = self.m.session_capabilities.get("browserVersion")

    def js(self, script, *args):
        # sandbox=None: the page's own window (its globals), not an Xray view of it.
        return self.m.execute_script(script, script_args=list(args), sandbox=None, new_sandbox=False)

    def js_async(self, script, *args):
        return self.m.execute_async_script(script, script_args=list(args), sandbox=None, new_sandbox=False)

    def go(self, url):
        self.m.navigate(url)

    def window(self, width, height):
        self.m.set_window_rect(width=width, height=height)

    def screenshot(self, path):
        path.write_bytes(self.m.screenshot(format="binary", full=False))

    def into_frame(self, css):
        self.m.switch_to_frame(self.m.find_element("css selector", css))

    def out_of_frame(self):
        self.m.switch_to_frame()

    def quit(self):
        try:
            self.m.delete_session()
        except Exception:
            pass
        end(self.proc)
        self.log.close()
        shutil.rmtree(self.profile, ignore_errors=True)
        TEMPS.discard(self.profile)


class WebKitGTK:
    """Debian's WebKitGTK: MiniBrowser through WebKitWebDriver (its own port, found in /proc),
    on an Xvfb display of its own (the display number Xvfb picks, told through -displayfd)."""
    name = "webkitgtk"

    def __init__(self):
        for tool in (WEBKITWEBDRIVER, MINIBROWSER, shutil.which("Xvfb") or "/usr/bin/Xvfb"):
            if not os.path.exists(tool):
                raise RuntimeError(f"no {tool}: scripts/install-deps --test installs webkit2gtk-driver and xvfb")
        self.driver = None
        self.log = open(OUT / "webkitgtk.log", "wb")
        r, w = os.pipe()
        self.xvfb = spawn(["Xvfb", "-displayfd", str(w), "-screen", "0", "1920x1200x24", "-nolisten", "tcp"],
                          pass_fds=(w,), stdout=self.log, stderr=subprocess.STDOUT)
        os.close(w)
        told, deadline = b"", time.monotonic() + 20
        try:  # the number, then a newline, in two writes: all of it before the pipe closes
            while not told.endswith(b"\n") and select.select([r], [], [], max(0, deadline - time.monotonic()))[0]:
                chunk = os.read(r, 64)
                if not chunk:
                    break
                told += chunk
        finally:
            os.close(r)
        display = told.decode().strip()
        if not told.endswith(b"\n") or not display.isdigit():
            raise RuntimeError(f"Xvfb did not start in 20 s: see {OUT / 'webkitgtk.log'}")
        env = dict(os.environ, DISPLAY=f":{display}", GDK_BACKEND="x11", NO_AT_BRIDGE="1")
        env.pop("WAYLAND_DISPLAY", None)
        self.proc = spawn([WEBKITWEBDRIVER, "--port=0"], env=env, stdout=self.log, stderr=subprocess.STDOUT)

        def port():
            if self.proc.poll() is not None:
                raise RuntimeError(f"WebKitWebDriver exited ({self.proc.returncode}): see {OUT / 'webkitgtk.log'}")
            return listening_port(self.proc.pid)
        port = until(port, "WebKitWebDriver listens", timeout=20)
        options = WebKitGTKOptions()
        options.binary_location = MINIBROWSER
        options.add_argument("--automation")
        self.driver = webdriver.Remote(command_executor=f"http://127.0.0.1:{port}", options=options)
        self.driver.set_page_load_timeout(30)
        self.driver.set_script_timeout(15)
        self.version = self.driver.capabilities.get("browserVersion")

    def js(self, script, *args):
        return self.driver.execute_script(script, *args)

    def js_async(self, script, *args):
        return self.driver.execute_async_script(script, *args)

    def go(self, url):
        self.driver.get(url)

    def window(self, width, height):
        self.driver.set_window_rect(width=width, height=height)

    def screenshot(self, path):
        self.driver.save_screenshot(str(path))

    def into_frame(self, css):
        self.driver.switch_to.frame(self.driver.find_element("css selector", css))

    def out_of_frame(self):
        self.driver.switch_to.default_content()

    def quit(self):
        if self.driver:
            try:
                self.driver.quit()
            except Exception:
                pass
        end(self.proc)
        end(self.xvfb)
        self.log.close()


def listening_port(pid):
    """The TCP port process `pid` listens on (its sockets' inodes in its /proc/net tables)."""
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            link = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if link.startswith("socket:["):
            inodes.add(link[8:-1])
    for table in ("tcp", "tcp6"):
        with open(f"/proc/{pid}/net/{table}") as f:
            for line in f.read().splitlines()[1:]:
                fields = line.split()
                if fields[3] == "0A" and fields[9] in inodes:  # LISTEN
                    return int(fields[1].rsplit(":", 1)[1], 16)
    return None


# A checksum of the picture the preview shows now, drawn small into a canvas (the synthetic
# camera's time code and frame number change every frame).
PICTURE = """
const el = window.viewfinderPreview.element(), c = document.createElement("canvas");
c.width = 160; c.height = 120;
const g = c.getContext("2d");
g.drawImage(el, 0, 0, c.width, c.height);
const px = g.getImageData(0, 0, c.width, c.height).data;
let h = 0;
for (let i = 0; i < px.length; i++) h = (Math.imul(h, 31) + px[i]) | 0;
return h;"""

# What of the main view is not within the viewport, or of the controls not within their
# column (as its scrolling box shows it: what passes its right edge is cut), or scrolls.
LAYOUT = """
const out = [], vw = document.documentElement.clientWidth, vh = innerHeight;
const rect = (el) => el.getBoundingClientRect();
const where = (r) => `${Math.round(r.left)}..${Math.round(r.right)} x ${Math.round(r.top)}..${Math.round(r.bottom)}`;
for (const sel of ["#stage", "#preview:not([hidden]), #live:not([hidden])", "#shutter", "#switch", "#tiles", ".controls"]) {
  const el = document.querySelector(sel);
  if (!el) { out.push(`${sel}: missing`); continue; }
  const r = rect(el);
  if (r.width <= 0 || r.height <= 0) out.push(`${sel}: no size`);
  if (r.left < -0.5 || r.top < -0.5 || r.right > vw + 0.5 || r.bottom > vh + 0.5) out.push(`${sel} at ${where(r)}: outside ${vw}x${vh}`);
}
const c = document.querySelector(".controls"), cr = rect(c);
const left = cr.left + c.clientLeft, right = left + c.clientWidth;
if (c.scrollWidth > c.clientWidth + 1) out.push(`.controls scroll sideways: ${c.scrollWidth} > ${c.clientWidth}`);
for (const el of c.querySelectorAll("fieldset, legend, label, input, select, button, output, meter, p")) {
  if (!el.getClientRects().length) continue; // not shown
  const r = rect(el);
  if (r.left < left - 0.5 || r.right > right + 0.5)
    out.push(`${el.id || el.tagName.toLowerCase()} "${(el.textContent || el.value || "").trim().slice(0, 20)}" at ${where(r)}: the controls show ${Math.round(left)}..${Math.round(right)}`);
}
if (document.documentElement.scrollWidth > vw + 1) out.push(`the page scrolls sideways: ${document.documentElement.scrollWidth} > ${vw}`);
if (scrollX !== 0 || scrollY !== 0) out.push(`scrolled to ${scrollX},${scrollY}`);
const s = rect(document.getElementById("stage")), sh = rect(document.getElementById("shutter"));
if (vw > 800 ? cr.left < s.right : cr.top < sh.bottom) out.push(`the controls (${where(cr)}) not ${vw > 800 ? "beside the preview" : "below the shutter"}`);
return out;"""


class BrowserTest:
    """The checks, for the browser `browser_class` makes (a server and a browser per class)."""
    browser_class = None

    @classmethod
    def setUpClass(cls):
        OUT.mkdir(parents=True, exist_ok=True)
        cls.server = Server()
        try:
            cls.browser = cls.browser_class()
        except BaseException:
            cls.server.stop()
            raise

    @classmethod
    def tearDownClass(cls):
        cls.browser.quit()
        cls.server.stop()

    def screenshot(self, name):
        """Tests/browser/out/<browser>-<name>.png, once two frames have painted (WebKitGTK shows
        the picture of before a resize for a moment after it)."""
        b = self.browser
        b.js_async("const done = arguments[arguments.length - 1]; requestAnimationFrame(() => requestAnimationFrame(() => done(true)));")
        b.screenshot(OUT / f"{b.name}-{name}.png")

    def fail_with_screenshot(self, name):
        try:
            self.browser.screenshot(OUT / f"{self.browser.name}-{name}-failure.png")
        except Exception:
            pass

    def viewport(self, width, height, timeout=15):
        """Resizes the window so the page's viewport is width x height: the window that size
        plus its toolbars' room (outer less inner size, measured again until it holds: the
        inner size follows a resize a moment later)."""
        b = self.browser
        deadline = time.monotonic() + timeout
        while True:
            outer_w, outer_h, inner_w, inner_h = b.js("return [outerWidth, outerHeight, innerWidth, innerHeight]")
            if [inner_w, inner_h] == [width, height]:
                return
            if time.monotonic() > deadline:
                raise AssertionError(f"no {width}x{height} viewport within {timeout} s: {inner_w}x{inner_h}")
            b.window(width + outer_w - inner_w, height + outer_h - inner_h)
            settle = time.monotonic() + 2
            while time.monotonic() < settle and b.js("return [innerWidth, innerHeight]") != [width, height]:
                time.sleep(0.05)

    def layout(self, timeout=3):
        """LAYOUT's problems once there are none, or the last ones at the deadline (a resize's
        layout may take a frame or two to follow)."""
        deadline = time.monotonic() + timeout
        while True:
            problems = self.browser.js(LAYOUT)
            if not problems or time.monotonic() > deadline:
                return problems
            time.sleep(0.05)

    def load(self, url):
        b = self.browser
        b.go(url)
        until(lambda: b.js("return !!window.viewfinderPreview && window.viewfinderPreview.size()[0] === 640"),
              "the preview shows the rear camera's 640x480 frames", timeout=15)

    def badge(self):
        """The transport badge once it has settled: WebRTC, or MJPEG with a reason."""
        b = self.browser

        def settled():
            text = b.js("return window.viewfinderPreview.badge()")
            return text if re.fullmatch(r"WebRTC( · .+)?|MJPEG · .+", text or "") else None
        return until(settled, "the transport badge says WebRTC, or MJPEG and why", timeout=20), \
            b.js("return document.getElementById('transport').title")

    def check_badge(self, text, title, has_webrtc):
        raise NotImplementedError

    def test_the_preview_plays_and_the_badge_says_how(self):
        b = self.browser
        try:
            self.viewport(1280, 720)
            self.load(self.server.url)
            text, title = self.badge()
            transport = b.js("return window.viewfinderPreview.transport()")
            has_webrtc = b.js("return !!window.RTCPeerConnection")
            print(f"\n{b.name} {b.version}: badge {text!r}, title {title!r}", file=sys.stderr, flush=True)
            self.check_badge(text, title, has_webrtc)
            # Frames, not one picture: the shown element's picture changes.
            first = b.js(PICTURE)
            until(lambda: b.js(PICTURE) != first, f"the {transport} preview's picture changes", timeout=10)
            if transport == "WebRTC":
                until(lambda: b.js_async("const done = arguments[arguments.length - 1];"
                                         "window.viewfinderPreview.framesDecoded().then(done, () => done(0));") > 0,
                      "WebRTC frames decoded")
                codec = b.js_async("const done = arguments[arguments.length - 1];"
                                   "window.viewfinderPreview.videoCodec().then(done, () => done(null));")
                print(f"{b.name}: WebRTC in {codec}", file=sys.stderr, flush=True)
                self.assertIn(codec, ("video/H264", "video/VP8"))
            else:
                self.assertTrue(b.js("const p = document.getElementById('preview');"
                                     "return !p.hidden && p.src.includes('/stream?')"), "the MJPEG stream shows")
            self.screenshot("page")
        except BaseException:
            self.fail_with_screenshot("badge")
            raise

    def test_the_page_fits_the_window(self):
        """1280x720 and 1280x657 viewports, and a 390x844 phone (a frame that size: Firefox and
        MiniBrowser windows go no narrower than some 450-500 px)."""
        b = self.browser
        self.viewport(1280, 720)
        self.load(self.server.url)
        for width, height in ((1280, 720), (1280, 657)):
            with self.subTest(width=width, height=height):
                self.viewport(width, height)
                b.js("window.scrollTo(0, 0); document.querySelector('.controls').scrollTop = 0")
                problems = self.layout()
                self.screenshot(f"{width}x{height}")
                self.assertFalse(problems, f"{b.name} at {width}x{height}:\n  " + "\n  ".join(problems))
        with self.subTest(width=390, height=844):
            self.viewport(1280, 900)
            b.go("data:text/html," + urllib.parse.quote(
                f'<!doctype html><body style="margin:0;background:#333"><iframe src="{self.server.url}" '
                f'style="border:0;width:390px;height:844px"></iframe></body>'))
            b.into_frame("iframe")
            try:
                until(lambda: b.js("return [innerWidth, innerHeight]") == [390, 844], "the 390x844 frame")
                until(lambda: b.js("return !!window.viewfinderPreview && window.viewfinderPreview.size()[0] === 640"),
                      "the preview in the phone-sized frame", timeout=15)
                problems = self.layout()
            finally:
                b.out_of_frame()
            self.screenshot("390x844")
            self.assertFalse(problems, f"{b.name} at 390x844:\n  " + "\n  ".join(problems))


# WebRTC (the main or sub stream, H.264 or VP8), or MJPEG because the server sends no codec the
# browser's offer has; never a WebRTC that failed to connect (over loopback it must not).
REASONED = r"^(WebRTC( · sub)?|MJPEG · (no H\.264 in this browser|no H\.264 or VP8 in this browser|no common codec))$"


class FirefoxTest(BrowserTest, unittest.TestCase):
    browser_class = Firefox

    def check_badge(self, text, title, has_webrtc):
        self.assertTrue(has_webrtc, "Firefox has RTCPeerConnection")
        # WebRTC, always: with OpenH264 its offer has H.264; without it (a machine that could
        # not download it, as this one) VP8, VP9 and AV1 — and the server answers VP8.
        self.assertRegex(text, r"WebRTC( · .+)?", "Firefox plays the preview by WebRTC (H.264, or VP8 without OpenH264)")


class WebKitGTKTest(BrowserTest, unittest.TestCase):
    browser_class = WebKitGTK

    def check_badge(self, text, title, has_webrtc):
        if has_webrtc:  # a WebKitGTK built with WebRTC: as Firefox
            self.assertRegex(text, REASONED)
        else:
            self.assertEqual(text, "MJPEG · no WebRTC in this browser")
            self.assertIn("RTCPeerConnection", title)


if __name__ == "__main__":
    run("browsers")
