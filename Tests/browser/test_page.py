#!/usr/bin/python3
"""The camera page in a real browser: Debian's headless Chromium driven by selenium.

Starts the built viewfinder (synthetic cameras, a temporary photo store, port 0), loads the
page, waits for preview frames, then uses switch, torch, zoom, tap-to-focus and the
shutter, checking after each that the server's state changed; checks that a second tab
follows within a second, that the photo shows in the gallery and can be deleted, and that
the console stayed clean. Records a movie with the record button (its time counting), plays
it in the gallery and deletes it. Shows a QR code to the synthetic camera, turns detection on
from the Codes panel and finds its box over the preview and its value in the list of codes.
Draws motion masks by clicking on the preview; turns motion detection on from the Motion
panel and finds a walker crossing the scene outlined, listed as an event and recorded.
With two cameras configured, starts, switches to and stops them
from their tiles; checks that preview, shutter and switch fit a 1280x720 window (and
1280x657, and a 390x844 phone) without scrolling. Saves screenshots to Tests/browser/out/.

Run by `make test` (after the Swift build): /usr/bin/python3 Tests/browser/test_page.py
"""
import array
import json
import os
import re
import signal
import subprocess
import sys
import time
import unittest
import urllib.error
import urllib.request
from pathlib import Path

from selenium import webdriver
from selenium.common.exceptions import TimeoutException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import WebDriverWait

from harness import Viewfinder, run

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "Tests/browser/out"


def account(name, role, password, realm="Viewfinder"):
    """An auth.users entry as `viewfinder user add` writes it: hashes only."""
    import crypt  # sha512-crypt here; the server verifies any scheme libcrypt knows
    import hashlib
    ha1 = f"{name}:{realm}:{password}".encode()
    return {"name": name, "role": role, "password": crypt.crypt(password, crypt.mksalt(crypt.METHOD_SHA512)),
            "digestMD5": hashlib.md5(ha1).hexdigest(), "digestSHA256": hashlib.sha256(ha1).hexdigest()}


# Two cameras configured as a list, each with its own session and size.
TWO_CAMERAS = [{"id": "rear", "source": "synthetic", "position": "rear"},
               {"id": "front", "source": "synthetic", "position": "front", "preset": "352x288"}]


class Server(Viewfinder):
    """viewfinder on 127.0.0.1, a free port, synthetic cameras (`--cameras synthetic`, or
    the list given), photos and movies in a temp dir."""

    def __init__(self, auth=None, cameras=None):
        settings = {}
        if auth:
            settings["auth"] = auth
        if cameras:
            settings["cameras"] = cameras
        super().__init__(settings, ([] if cameras else ["--cameras", "synthetic"]) + ["--preset", "640x480"])

    def post(self, path, body):
        """POSTs JSON; the answer's JSON (an HTTP error fails with the server's message)."""
        request = urllib.request.Request(self.url.rstrip("/") + path, data=json.dumps(body).encode(), method="POST",
                                         headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=10) as r:
                return json.loads(r.read())
        except urllib.error.HTTPError as e:
            raise AssertionError(f"POST {path} {body}: HTTP {e.code} {e.read().decode(errors='replace')}") from None

    def state(self):
        return self.get("/api/session")

    def cameras(self):
        """{id: (state, main)} as GET /api/cameras says."""
        return {c["id"]: (c["state"], c["main"]) for c in self.get("/api/cameras")["cameras"]}


def browser(*extra):
    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1280,1000",
                "--disable-gpu", "--no-first-run", "--disable-extensions",
                # WebRTC host candidates as addresses, not mDNS names (no mDNS here)
                "--disable-features=WebRtcHideLocalIpsWithMdns") + extra:
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
    # A page that never loads fails in 30 s, not chromedriver's 300 (a sign-in prompt, which
    # headless Chromium shows to no one, holds the load for ever).
    driver.set_page_load_timeout(30)
    return driver


class ServedPage(unittest.TestCase):
    """A server (with `server_options`) and a browser for the class's tests."""
    server_options = {}

    @classmethod
    def setUpClass(cls):
        OUT.mkdir(parents=True, exist_ok=True)
        cls.server = Server(**cls.server_options)
        cls.driver = browser()

    @classmethod
    def tearDownClass(cls):
        cls.driver.quit()
        cls.server.stop()


class PageTest(ServedPage):
    def wait(self, condition, message, timeout=10):
        """Waits for a condition on the page or the server, bounded in time."""
        try:
            return WebDriverWait(self.driver, timeout, poll_frequency=0.05).until(lambda _: condition(), message)
        except TimeoutException:
            self.driver.save_screenshot(str(OUT / "failure.png"))
            raise

    def js(self, script, *args):
        return self.driver.execute_script(script, *args)

    def test_the_page_drives_the_camera(self):
        d, server = self.driver, self.server
        d.get(server.url)

        # Live preview: frames decode into the <img>; the badge says running.
        self.wait(lambda: self.js("return window.viewfinderPreview.size()[0]") == 640,
                  "preview frames arrive")
        self.wait(lambda: d.find_element(By.ID, "status").text == "running", "status badge shows running")
        self.assertFalse(d.find_element(By.ID, "offline").is_displayed(), "no offline overlay while running")
        # Controls were generated from the capabilities.
        modes = [o.get_attribute("value") for o in d.find_elements(By.CSS_SELECTOR, "#focus-mode option")]
        self.assertEqual(modes, ["locked", "auto", "continuous"])
        d.save_screenshot(str(OUT / "page.png"))
        # Where other programs reach it (GET /api/cameras' services): the ONVIF device's
        # address at the host the page asked, discovery off on loopback, RTSP for this camera.
        text = lambda id: self.js("return document.getElementById(arguments[0]).textContent", id)
        self.wait(lambda: text("onvif-url") == server.url.rstrip("/") + "/onvif/device_service",
                  "the Connect panel shows the ONVIF device's address")
        self.assertFalse(self.js("return document.getElementById('connect-group').hidden"))
        self.assertIn("127.0.0.1 only", text("onvif-discovery"))
        if not self.js("return document.getElementById('rtsp-row').hidden"):
            self.assertRegex(text("rtsp-url"), r"^rtsp://127\.0\.0\.1:\d+/rear$")

        # A second tab follows the first one's changes through /api/events.
        first = d.current_window_handle
        d.switch_to.new_window("tab")
        second = d.current_window_handle
        d.get(server.url)
        self.wait(lambda: self.js("return document.getElementById('camera').value") == "rear", "second tab loaded")
        d.switch_to.window(first)

        # Switch camera.
        d.find_element(By.ID, "switch").click()
        self.wait(lambda: server.state()["camera"]["id"] == "front", "the server switched to front")
        self.wait(lambda: "front" in d.find_element(By.ID, "format").text, "the page shows the front camera")
        d.switch_to.window(second)
        started = time.monotonic()
        self.wait(lambda: self.js("return document.getElementById('camera').value") == "front",
                  "the second tab follows within a second", timeout=1.5)
        self.assertLess(time.monotonic() - started, 1.5)
        d.close()
        d.switch_to.window(first)

        # Torch.
        d.find_element(By.ID, "torch").click()
        self.wait(lambda: server.state()["torch"]["mode"] == "on", "torch on at the server")
        self.wait(lambda: d.find_element(By.ID, "torch").get_attribute("aria-pressed") == "true", "torch button pressed")

        # Zoom with the keyboard on the slider (keyboard reachable), then with the wheel.
        zoom = d.find_element(By.ID, "zoom")
        zoom.send_keys(Keys.END)
        self.wait(lambda: server.state()["zoom"]["factor"] == 8, "zoom slider to the maximum")
        zoom.send_keys(Keys.HOME)
        self.wait(lambda: server.state()["zoom"]["factor"] == 1, "zoom slider back to 1×")
        self.js("""document.getElementById('stage').dispatchEvent(
                   new WheelEvent('wheel', {deltaY: -400, bubbles: true, cancelable: true}))""")
        self.wait(lambda: server.state()["zoom"]["factor"] > 1.5, "wheel zooms in")

        # Tap to focus: a click on the preview's lower left sets the point of interest there.
        preview = d.find_element(By.ID, "stage")
        rect = self.js("const r = document.getElementById('stage').getBoundingClientRect();"
                       "return {w: r.width, h: r.height};")
        ActionChains(d).move_to_element_with_offset(preview, -rect["w"] * 0.3, rect["h"] * 0.3).click().perform()
        self.wait(lambda: server.state()["focus"]["point"] != {"x": 0.5, "y": 0.5}, "focus point moved")
        point = server.state()["focus"]["point"]
        self.assertLess(point["x"], 0.5)
        self.assertGreater(point["y"], 0.5)
        # Rendered (its animation starts at opacity 0, which selenium's is_displayed counts as hidden).
        self.assertEqual(self.js("return getComputedStyle(document.getElementById('focus-ring')).display"), "block")

        # Shutter: a stored photo appears in the gallery and as the thumbnail.
        d.find_element(By.ID, "shutter").click()
        self.wait(lambda: len(server.get("/api/photos")["photos"]) == 1, "a photo is stored")
        photo = server.get("/api/photos")["photos"][0]
        self.wait(lambda: len(d.find_elements(By.CSS_SELECTOR, f"#photos li[data-id='{photo['id']}']")) == 1,
                  "the photo is in the gallery")
        self.wait(lambda: self.js("return document.querySelector('#photos li img').naturalWidth") == 640,
                  "the gallery image loads")
        self.assertEqual(photo["camera"], "front")
        self.assertEqual(d.find_element(By.CSS_SELECTOR, "#photos li .caption").text, "Synthetic front camera",
                         "the gallery names the photo's camera")
        self.assertTrue(d.find_element(By.ID, "last-photo").is_displayed())
        d.save_screenshot(str(OUT / "page-after.png"))

        # No console errors so far.
        errors = [e for e in d.get_log("browser") if e["level"] == "SEVERE"]
        self.assertEqual(errors, [], f"console errors: {errors}")

        # An API error is shown to the person, not swallowed.
        self.js("call('/api/session/zoom', {factor: 'big'})")
        self.wait(lambda: d.find_element(By.ID, "toast").is_displayed(), "the error is shown")
        self.assertIn("factor", d.find_element(By.ID, "toast").text)

        # Delete from the gallery.
        d.find_element(By.CSS_SELECTOR, "#photos li .actions button").click()
        self.wait(lambda: server.get("/api/photos")["photos"] == [], "the photo is deleted at the server")
        self.wait(lambda: len(d.find_elements(By.CSS_SELECTOR, "#photos li")) == 0, "and gone from the gallery")

        # Since then only the deliberate bad call's 400, which Chromium logs as a network error.
        errors = [e for e in d.get_log("browser") if e["level"] == "SEVERE"
                  and not (e["source"] == "network" and "/api/session/zoom" in e["message"] and "400" in e["message"])]
        self.assertEqual(errors, [], f"console errors: {errors}")

    def test_phone_width_without_a_torch(self):
        """At phone width the layout stacks; a camera without a torch disables it with a reason."""
        d = self.driver
        d.set_window_size(390, 844)
        try:
            d.get(self.server.url)
            self.wait(lambda: self.js("return window.viewfinderPreview.size()[0]") > 0, "preview")
            stage = d.find_element(By.ID, "stage").rect
            controls = d.find_element(By.CSS_SELECTOR, ".controls").rect
            self.assertGreaterEqual(controls["y"], stage["y"] + stage["height"], "controls below the preview")
            self.assertLessEqual(stage["width"], 390)
            # Pretend the camera has no torch, as the image camera reports.
            self.js(
                    "const c = cameras.find(c => c.id === state.camera.id); c.capabilities.torch = false; buildControls(); render(state);")
            self.assertFalse(d.find_element(By.ID, "torch").is_enabled())
            self.assertEqual(d.find_element(By.ID, "torch-reason").text, "This camera has no torch.")
            self.assertFalse(d.find_element(By.ID, "offline").is_displayed())
            d.save_screenshot(str(OUT / "page-phone.png"))
        finally:
            d.set_window_size(1280, 1000)

    def test_the_page_records_a_movie(self):
        """The record button records the main session, its time counting; the movie shows in
        the gallery, plays in its <video> and can be deleted."""
        d, server = self.driver, self.server
        d.get_log("browser")  # what the pages before logged
        d.get(server.url)
        self.wait(lambda: self.js("return window.viewfinderPreview.size()[0]") > 0, "preview frames")
        record = d.find_element(By.ID, "record")
        self.wait(lambda: record.is_displayed() and record.is_enabled(), "the record button is ready")
        self.assertNotIn("recording", record.get_attribute("class").split())
        self.assertEqual(d.find_element(By.ID, "record-time").text, "REC")
        self.wait(lambda: d.find_element(By.ID, "movies-part").is_displayed(), "the gallery has a movies part")
        before = {m["id"] for m in server.get("/api/movies")["movies"]}

        def shown_seconds():
            """The time on the record button in seconds (None while it shows no mm:ss)."""
            m = re.fullmatch(r"(\d+):(\d\d)", self.js("return document.getElementById('record-time').textContent").strip())
            return int(m[1]) * 60 + int(m[2]) if m else None

        # Start: the server records; the button turns red and counts.
        record.click()
        self.wait(lambda: server.state()["recording"]["active"], "the server records")
        rec = server.state()["recording"]
        self.assertEqual(rec["codec"], "h264")
        self.wait(lambda: "recording" in record.get_attribute("class").split(), "the button says it records")
        dot = self.js("""const dot = document.querySelector('#record .record-dot'), r = dot.getBoundingClientRect();
                         return {color: getComputedStyle(dot).backgroundColor, width: r.width, height: r.height};""")
        red, green, blue = (int(v) for v in re.findall(r"\d+", dot["color"])[:3])
        self.assertTrue(red >= 180 and green < 100 and blue < 100, f"a red dot: {dot}")
        self.assertGreater(dot["width"], 0)
        self.assertGreater(dot["height"], 0)
        self.assertEqual(record.get_attribute("aria-label"), "Stop recording")
        self.wait(lambda: (shown_seconds() or 0) >= 2, "the button counts to 00:02", timeout=10)
        d.save_screenshot(str(OUT / "recording.png"))

        # Stop: the movie is listed, the button resets, the gallery shows the movie.
        record.click()
        self.wait(lambda: {m["id"] for m in server.get("/api/movies")["movies"]} - before == {rec["id"]},
                  "the movie is listed")
        movie = next(m for m in server.get("/api/movies")["movies"] if m["id"] == rec["id"])
        self.assertEqual(movie["reason"], "stopped")
        self.assertGreaterEqual(movie["duration"], 1.5, movie)
        self.assertFalse(server.state()["recording"]["active"])
        self.wait(lambda: "recording" not in record.get_attribute("class").split()
                  and d.find_element(By.ID, "record-time").text == "REC", "the button resets")
        item = f"#movies li[data-id='{movie['id']}']"
        self.wait(lambda: len(d.find_elements(By.CSS_SELECTOR, item)) == 1, "the movie is in the gallery")
        video = d.find_element(By.CSS_SELECTOR, f"{item} video")
        self.assertTrue(video.get_attribute("src").endswith(movie["url"]))
        self.assertEqual(video.get_attribute("preload"), "metadata")
        self.assertIsNotNone(video.get_attribute("controls"))
        seconds = int(movie["duration"])
        self.assertEqual(d.find_element(By.CSS_SELECTOR, f"{item} .movie-duration").text,
                         f"{seconds // 60:02d}:{seconds % 60:02d}", "the gallery shows the movie's duration")
        download = d.find_element(By.CSS_SELECTOR, f"{item} a[download]")
        self.assertTrue(download.get_attribute("href").endswith(movie["url"]))

        # It plays in the page: time runs and the picture has a size.
        self.js("const v = document.querySelector(arguments[0]); v.muted = true;"
                "v.play().catch((e) => { v.dataset.playError = String(e); });", f"{item} video")

        def playback():
            return self.js("const v = document.querySelector(arguments[0]);"
                           "return {time: v.currentTime, width: v.videoWidth, error: v.dataset.playError"
                           " || (v.error ? `media error ${v.error.code}: ${v.error.message}` : null)};", f"{item} video")
        def played_or_failed():
            now = playback()
            return now if now["error"] or (now["time"] > 0.5 and now["width"] > 0) else None
        played = self.wait(played_or_failed, "the movie plays past 0.5 s", timeout=15)
        self.assertIsNone(played["error"])
        self.assertGreater(played["time"], 0.5)
        self.assertEqual(played["width"], movie["width"] if movie["rotation"] % 180 == 0 else movie["height"])
        d.save_screenshot(str(OUT / "movie.png"))

        # Delete from the gallery.
        d.find_element(By.CSS_SELECTOR, f"{item} .actions button").click()
        self.wait(lambda: movie["id"] not in {m["id"] for m in server.get("/api/movies")["movies"]},
                  "the movie is deleted at the server")
        self.wait(lambda: len(d.find_elements(By.CSS_SELECTOR, item)) == 0, "and gone from the gallery")

        # A server without movies (no `recording` in its state): no record button, nothing breaks.
        # (In one script: the page's own poll of the state must not come in between.)
        self.assertTrue(self.js("const s = Object.assign({}, state); delete s.recording; applyState(s);"
                                "return document.getElementById('record').hidden;"),
                        "no record button from a server that cannot record")
        self.js("return fetch('/api/session').then((r) => r.json()).then(applyState)")
        self.wait(lambda: record.is_displayed() and record.is_enabled(), "the record button is back")

        errors = [e for e in d.get_log("browser") if e["level"] == "SEVERE"]
        self.assertEqual(errors, [], f"console errors: {errors}")


def visible_within(driver, selector):
    """The element's box in the viewport (without scrolling): a list of what sticks out."""
    return driver.execute_script("""
        const el = document.querySelector(arguments[0]), r = el.getBoundingClientRect(), out = [];
        if (r.width <= 0 || r.height <= 0) out.push('no size');
        if (r.top < 0 || r.left < 0) out.push(`starts at ${r.left},${r.top}`);
        if (r.bottom > innerHeight + 0.5) out.push(`bottom ${r.bottom} > innerHeight ${innerHeight}`);
        if (r.right > innerWidth + 0.5) out.push(`right ${r.right} > innerWidth ${innerWidth}`);
        return out;""", selector)


class CamerasTest(ServedPage):
    """Two cameras configured as a list: tiles start, switch and stop them; the page fits the window."""
    server_options = {"cameras": TWO_CAMERAS}

    wait = PageTest.wait
    js = PageTest.js

    def tile(self, camera, part=""):
        return self.driver.find_element(By.CSS_SELECTOR, f"#tiles .tile[data-camera='{camera}'] {part}".strip())

    def tile_width(self, camera):
        """The width of the camera tile's picture — its <img>'s, or its WebRTC <video>'s — (0 while
        none has decoded; None without a picture)."""
        return self.js("const t = document.querySelector(`#tiles .tile[data-camera='${arguments[0]}'] .tile-picture`);"
                       "const v = t.querySelector('video'), i = t.querySelector('img');"
                       "return v ? v.videoWidth : i ? i.naturalWidth : null;", camera)

    def tile_kind(self, camera):
        """How the tile's picture arrives: "webrtc" (a <video>), "img", or None."""
        return self.js("const t = document.querySelector(`#tiles .tile[data-camera='${arguments[0]}'] .tile-picture`);"
                       "return t.querySelector('video') ? 'webrtc' : t.querySelector('img') ? 'img' : null;", camera)

    def sub_webrtc(self, camera):
        """WebRTC clients of the camera's sub stream (its liveSub output): a tile's session."""
        outputs = self.server.get(f"/api/cameras/{camera}/session")["outputs"]
        return next(o for o in outputs if o["type"] == "liveSub")["clients"]["webrtc"]

    def mjpeg(self, *cameras):
        return [self.server.get(f"/api/cameras/{c}/session")["stream"]["clients"] for c in cameras]

    def tile_class(self, camera):
        return self.tile(camera).get_attribute("class").split()

    def test_tiles_start_switch_and_stop_cameras(self):
        d, server = self.driver, self.server
        d.get(server.url)
        self.wait(lambda: self.js("return window.viewfinderPreview.size()[0]") == 640, "preview frames")
        self.wait(lambda: len(d.find_elements(By.CSS_SELECTOR, "#tiles .tile")) == 2, "a tile per camera")
        self.assertTrue(d.find_element(By.ID, "tiles").is_displayed())
        self.assertEqual(server.cameras(), {"rear": ("running", True), "front": ("idle", False)})
        # The main camera's tile is live and marked; the stopped one has no picture and says so.
        # (The preview's MJPEG request, or a copy of its WebRTC picture 160 wide.)
        self.wait(lambda: self.tile_width("rear") in (640, 160), "the rear tile shows frames")
        self.assertIn("main", self.tile_class("rear"))
        self.assertEqual(self.tile("rear", ".tile-pick").get_attribute("aria-current"), "true")
        self.assertIsNone(self.tile_width("front"))
        self.assertIn("idle", self.tile("front", ".tile-state").text)

        # Start the second camera from its tile: both tiles live, both running at the server;
        # front's tile plays its sub stream by WebRTC (a session on its liveSub, no MJPEG).
        self.tile("front", ".tile-power").click()
        self.wait(lambda: server.cameras()["front"] == ("running", False), "the server started front")
        # (352x288 camera: its sub stream is half that, 176x144.)
        self.wait(lambda: self.tile_kind("front") == "webrtc" and self.tile_width("front") == 176,
                  "the front tile shows its own frames by WebRTC")
        self.wait(lambda: "running" in self.tile("front", ".tile-state").text, "the front tile says running")
        self.assertIn(self.tile_width("rear"), (640, 160))
        self.assertEqual(server.cameras(), {"rear": ("running", True), "front": ("running", False)})
        self.wait(lambda: self.sub_webrtc("front") == 1, "front's sub stream has the tile's WebRTC session")
        # front's state (main: false) must not take over the main view.
        self.assertEqual(server.state()["camera"]["id"], "rear")
        self.assertEqual(self.js("return document.getElementById('camera').value"), "rear")
        self.assertIn("640×480", d.find_element(By.ID, "format").text)
        # (A preview that has just gone WebRTC starts on the sub stream, 320 wide, and moves up.)
        self.wait(lambda: self.js("return window.viewfinderPreview.size()[0]") == 640, "the preview at the main camera's size")
        self.assertIn("main", self.tile_class("rear"))
        self.assertNotIn("main", self.tile_class("front"))
        # The main preview goes WebRTC (its MJPEG stream closes; the main tile refreshes from
        # snapshots): no MJPEG viewer at all.
        live_preview = "return !document.getElementById('live').hidden"
        self.wait(lambda: self.js(live_preview), "the preview by WebRTC")
        self.wait(lambda: self.mjpeg("rear", "front") == [0, 0], "no MJPEG stream: front's tile is WebRTC")
        # The main tile copies the WebRTC preview's picture, small, with no request of its own
        # (a full-size snapshot every 2 s cost a slow link's preview its frames).
        self.wait(lambda: self.js("return document.querySelector(\"#tiles .tile[data-camera='rear'] img\").src")
                  .startswith("data:image/jpeg") and self.tile_width("rear") == 160, "the main tile copies the preview")
        # Where WebRTC cannot play (here: no RTCPeerConnection), the tile's session closes and
        # it falls back to MJPEG, rate-capped.
        self.js("window.savedRTC = window.RTCPeerConnection; window.RTCPeerConnection = undefined; renderTiles();")
        self.wait(lambda: self.tile_kind("front") == "img" and self.js(
            "return document.querySelector(\"#tiles .tile[data-camera='front'] img\").src")
                  .endswith("/cameras/front/stream?fps=5"), "front tile on MJPEG, rate-capped")
        self.wait(lambda: self.sub_webrtc("front") == 0 and self.mjpeg("front") == [1], "front's session closed, MJPEG instead")
        self.wait(lambda: self.tile_width("front") == 352, "the MJPEG tile shows frames")
        # Past the live-tile limit a tile refreshes from snapshots instead of holding a connection.
        self.js("tileStreamLimit = 0; renderTiles();")
        self.wait(lambda: "/cameras/front/snapshot?" in self.js(
            "return document.querySelector(\"#tiles .tile[data-camera='front'] img\").src"), "front tile on snapshots")
        self.wait(lambda: self.tile_width("front") == 352, "the snapshot shows")
        self.wait(lambda: self.mjpeg("front") == [0], "front's tile stream closed")
        self.js("tileStreamLimit = 3; renderTiles();")
        self.wait(lambda: self.mjpeg("front") == [1], "front's tile streams again")
        self.js("window.RTCPeerConnection = window.savedRTC; renderTiles();")
        self.wait(lambda: self.tile_kind("front") == "webrtc" and self.sub_webrtc("front") == 1
                  and self.mjpeg("front") == [0], "front's tile by WebRTC again")
        # A hidden page streams nothing (each MJPEG stream holds one of the six connections the
        # browser allows a server, shared by its tabs; the tiles' WebRTC sessions close too);
        # shown again, everything comes back.
        self.js("Object.defineProperty(document, 'hidden', {configurable: true, get: () => true});"
                "document.dispatchEvent(new Event('visibilitychange'));")
        self.wait(lambda: self.mjpeg("rear", "front") == [0, 0] and self.sub_webrtc("front") == 0, "hidden: no streams")
        self.js("delete document.hidden; document.dispatchEvent(new Event('visibilitychange'));")
        self.wait(lambda: self.js(live_preview), "shown: the preview by WebRTC again")
        self.wait(lambda: self.sub_webrtc("front") == 1, "shown: the tile's WebRTC session again")
        self.wait(lambda: self.tile_width("rear") in (640, 160) and self.tile_width("front") == 176, "tiles live again")
        self.wait(lambda: self.js("return window.viewfinderPreview.size()[0]") == 640, "preview again")

        self.js("document.activeElement.blur()")
        d.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                          {"width": 1280, "height": 720, "deviceScaleFactor": 1, "mobile": False})
        try:
            self.wait(lambda: visible_within(d, "#shutter") == [], "shutter in view at 1280x720")
            d.save_screenshot(str(OUT / "cameras.png"))
        finally:
            d.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})

        # Click the second tile: it becomes the main view, at its own size.
        self.tile("front", ".tile-pick").click()
        self.wait(lambda: server.state()["camera"]["id"] == "front", "the server's main session is front")
        self.wait(lambda: self.js("return window.viewfinderPreview.size()")
                  == [352, 288], "the main preview shows front at 352x288")
        self.wait(lambda: "main" in self.tile_class("front"), "the front tile is marked main")
        self.assertEqual(self.tile("front", ".tile-pick").get_attribute("aria-current"), "true")
        self.wait(lambda: self.js("return document.getElementById('camera').value") == "front", "the picker follows")
        self.assertIn("352×288", d.find_element(By.ID, "format").text)
        # rear ran for the main session only, so it stopped when the main session left it.
        self.wait(lambda: server.cameras() == {"rear": ("idle", False), "front": ("running", True)},
                  "the camera left behind stopped")
        self.wait(lambda: self.tile_width("rear") is None and "idle" in self.tile_class("rear"),
                  "the rear tile says idle, without a picture")
        self.wait(lambda: self.tile_width("front") in (352, 160) and self.tile_kind("front") == "img",
                  "the main tile stays live, as the preview's picture (its WebRTC session closed)")

        # Start rear from its tile: it runs beside the main camera, which stays front.
        self.tile("rear", ".tile-power").click()
        self.wait(lambda: server.cameras()["rear"] == ("running", False), "the server started rear")
        self.wait(lambda: self.tile_width("rear") == 320 and self.tile_kind("rear") == "webrtc",
                  "the rear tile shows frames by WebRTC (its sub stream, half its 640x480)")
        self.assertEqual(server.state()["camera"]["id"], "front")
        self.wait(lambda: self.js("return window.viewfinderPreview.size()[0]") == 352, "the preview still front's")

        # Stop the main camera from its tile: idle at the server; the main view offers to start it.
        self.tile("front", ".tile-power").click()
        self.wait(lambda: server.cameras()["front"] == ("idle", True), "the server stopped front")
        self.wait(lambda: d.find_element(By.ID, "stopped").is_displayed(), "the main view says it is stopped")
        self.assertFalse(d.find_element(By.ID, "offline").is_displayed(), "stopped is not offline")
        self.assertEqual(d.find_element(By.ID, "status").text, "idle")
        self.wait(lambda: self.tile_width("front") is None and "idle" in self.tile_class("front"), "front tile idle")
        self.assertEqual(server.cameras()["rear"], ("running", False))
        self.assertEqual(self.tile_width("rear"), 320)
        d.find_element(By.ID, "start-main").click()
        self.wait(lambda: server.cameras()["front"] == ("running", True), "started again from the main view")
        self.wait(lambda: not d.find_element(By.ID, "stopped").is_displayed(), "the stopped mark goes")
        self.wait(lambda: d.find_element(By.ID, "status").text == "running", "status badge shows running")

        # And rear from its tile.
        self.tile("rear", ".tile-power").click()
        self.wait(lambda: server.cameras()["rear"] == ("idle", False), "the server stopped rear")
        self.wait(lambda: self.tile_width("rear") is None, "the rear tile's stream closed")
        self.wait(lambda: self.mjpeg("rear") == [0] and self.sub_webrtc("rear") == 0, "no one watches rear")

        errors = [e for e in d.get_log("browser") if e["level"] == "SEVERE"]
        self.assertEqual(errors, [], f"console errors: {errors}")

    def test_the_main_view_fits_the_window(self):
        """Preview, shutter and switch in view without scrolling; the controls scroll on their own."""
        d = self.driver
        d.get(self.server.url)
        self.wait(lambda: self.js("return window.viewfinderPreview.size()[0]") > 0, "preview frames")
        self.wait(lambda: len(d.find_elements(By.CSS_SELECTOR, "#tiles .tile")) == 2, "a tile per camera")
        # "window": the outer window (headless Chromium's inner height is 143 px less);
        # "viewport": exactly that inner size, as a browser with its toolbars gives the page.
        sizes = [("window", 1280, 720), ("viewport", 1280, 720), ("viewport", 1280, 657),
                 ("window", 390, 844), ("viewport", 390, 844)]
        try:
            for kind, width, height in sizes:
                with self.subTest(kind=kind, width=width, height=height):
                    if kind == "window":
                        d.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
                        d.set_window_size(width, height)
                        self.wait(lambda: self.js("return innerWidth") == width, "the window resized")
                    else:
                        d.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                                          {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": width < 800})
                        self.wait(lambda: self.js("return [innerWidth, innerHeight]") == [width, height], "the viewport")
                    self.js("window.scrollTo(0, 0)")
                    for selector in ("#stage", "#preview:not([hidden]), #live:not([hidden])", "#shutter", "#switch", "#tiles", ".controls"):
                        self.assertEqual(visible_within(d, selector), [], f"{selector} within {kind} {width}x{height}")
                    self.assertEqual(self.js("return window.scrollY"), 0)
                    # The frame itself is drawn at a useful size, letterboxed in the stage.
                    frame = self.js("return contentRect()")
                    self.assertGreater(frame["height"], 150 if width < 800 else 250, f"frame {frame}")
                    self.assertLessEqual(frame["top"] + frame["height"], self.js("return innerHeight") + 0.5)
                    stage = d.find_element(By.ID, "stage").rect
                    controls = d.find_element(By.CSS_SELECTOR, ".controls").rect
                    if width >= 800:
                        self.assertGreaterEqual(controls["x"], stage["x"] + stage["width"], "controls beside the preview")
                    else:
                        shutter = d.find_element(By.ID, "shutter").rect
                        self.assertGreaterEqual(controls["y"], shutter["y"] + shutter["height"], "controls below the shutter")
                    # The panel scrolls by itself; the page does not move.
                    self.assertEqual(self.js("return getComputedStyle(document.querySelector('.controls')).overflowY"), "auto")
                    self.assertTrue(self.js("const c = document.querySelector('.controls'); return c.scrollHeight > c.clientHeight"),
                                    "the controls are taller than their panel here")
                    self.js("document.querySelector('.controls').scrollTop = 10000")
                    self.wait(lambda: self.js("return document.querySelector('.controls').scrollTop") > 0, "controls scroll")
                    self.assertEqual(self.js("return window.scrollY"), 0, "the page stays put")
                    self.assertEqual(visible_within(d, "#shutter"), [])
                    self.js("document.querySelector('.controls').scrollTop = 0")
                    d.save_screenshot(str(OUT / f"layout-{kind}-{width}x{height}.png"))
        finally:
            d.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
            d.set_window_size(1280, 1000)


class CodesTest(ServedPage):
    """The metadata output on the page: a code the synthetic camera shows is boxed over the
    preview and listed once detection is on. A server of its own: the rear camera main, at
    1×, its lens focused on the middle of the picture (the other tests move all of that)."""

    wait = PageTest.wait
    js = PageTest.js

    def code_box(self, value):
        """The box over the preview for `value` and the picture's rectangle on the page (as
        object-fit draws it, from the frame's own size), or None while there is no box."""
        return self.js("""
            const box = [...document.querySelectorAll('#code-overlay .code-box')].find((b) => b.dataset.value === arguments[0]);
            if (!box) return null;
            const img = window.viewfinderPreview.element(), r = img.getBoundingClientRect(), b = box.getBoundingClientRect();
            const [iw, ih] = window.viewfinderPreview.size();
            const scale = Math.min(r.width / iw, r.height / ih);
            const w = iw * scale, h = ih * scale;
            return {box: {x: b.left + b.width / 2, y: b.top + b.height / 2, width: b.width, height: b.height},
                    picture: {x: r.left + r.width / 2, y: r.top + r.height / 2, width: w, height: h},
                    shown: !document.getElementById('code-overlay').hidden && getComputedStyle(box).display !== 'none'};""",
                       value)

    def test_the_page_boxes_a_code_in_the_preview(self):
        d, server = self.driver, self.server
        d.get_log("browser")  # what the pages before logged
        d.get(server.url)
        self.wait(lambda: self.js("return window.viewfinderPreview.size()[0]") == 640, "preview frames")
        self.assertEqual(server.state()["camera"]["id"], "rear")
        self.assertEqual(server.state()["metadata"]["types"], [], "detection is off until asked for")

        # The Codes panel offers the camera's types, none ticked.
        qr = "#code-types input[value='qr']"
        self.wait(lambda: d.find_element(By.ID, "codes-group").is_displayed()
                  and len(d.find_elements(By.CSS_SELECTOR, qr)) == 1, "the Codes panel")
        offered = [i.get_attribute("value") for i in d.find_elements(By.CSS_SELECTOR, "#code-types input[type=checkbox]")]
        self.assertLessEqual({"qr", "ean13", "ean8", "upca", "code128", "code39"}, set(offered))
        self.assertEqual(set(offered), set(next(c for c in server.get("/api/cameras")["cameras"]
                                                if c["id"] == "rear")["capabilities"]["metadata"]["availableTypes"]))
        self.assertFalse(any(i.is_selected() for i in d.find_elements(By.CSS_SELECTOR, "#code-types input")))
        self.assertFalse(d.find_element(By.ID, "code-overlay").is_displayed(), "no boxes while nothing is found")

        # A QR code in the middle of the rear camera's scene; detection on from the page.
        scene = server.post("/api/cameras/rear/scene",
                            {"codes": [{"type": "qr", "value": "hello", "x": 0.5, "y": 0.5, "size": 0.4}]})
        self.assertEqual([c["value"] for c in scene["codes"]], ["hello"])
        d.find_element(By.CSS_SELECTOR, qr).click()
        self.wait(lambda: server.state()["metadata"]["types"] == ["qr"], "detection on at the server")
        self.assertTrue(d.find_element(By.CSS_SELECTOR, qr).is_selected())

        # Its box over the preview, around the middle of the picture; its value in the list.
        found = self.wait(lambda: (lambda g: g if g and g["shown"] and g["box"]["width"] > 0 else None)(self.code_box("hello")),
                          "a box for hello over the preview", timeout=15)
        box, picture = found["box"], found["picture"]
        self.assertLessEqual(abs(box["x"] - picture["x"]), 0.15 * picture["width"], f"box {box} in picture {picture}")
        self.assertLessEqual(abs(box["y"] - picture["y"]), 0.15 * picture["height"], f"box {box} in picture {picture}")
        self.assertTrue(0.1 * picture["height"] < box["height"] < 0.7 * picture["height"], f"box {box} in picture {picture}")
        # Read in one script: an element found by one WebDriver call can be replaced before the next.
        shown = self.js("""const b = document.querySelector('#code-overlay .code-box[data-value="hello"]');
                           return !!b && b.getClientRects().length > 0 && !b.closest('[hidden]')
                                  && b.querySelector('.code-label').textContent.includes('hello');""")
        self.assertTrue(shown, "the box for hello is shown with its label")
        self.wait(lambda: "hello" in d.find_element(By.ID, "codes").text, "hello in the list of codes")
        first = d.find_element(By.CSS_SELECTOR, "#codes li")
        self.assertEqual(first.get_attribute("data-value"), "hello")
        self.assertEqual(first.find_element(By.CSS_SELECTOR, ".code-type").text.split("\n")[0], "QR")
        self.assertTrue(first.find_element(By.CSS_SELECTOR, "time").get_attribute("datetime"))
        self.assertEqual(first.find_element(By.CSS_SELECTOR, "button").text, "Copy")
        objects = server.state()["metadata"]["objects"]
        self.assertEqual([(o["type"], o["value"]) for o in objects], [("qr", "hello")])
        d.save_screenshot(str(OUT / "codes.png"))

        # The code leaves the scene: its box goes; the list remembers it.
        server.post("/api/cameras/rear/scene", {"codes": []})
        self.wait(lambda: self.code_box("hello") is None, "the box goes when the code leaves", timeout=15)
        self.assertFalse(d.find_element(By.ID, "code-overlay").is_displayed())
        self.assertEqual(len(d.find_elements(By.CSS_SELECTOR, "#codes li")), 1)
        self.assertIn("hello", d.find_element(By.ID, "codes").text)

        # Detection off from the page.
        d.find_element(By.CSS_SELECTOR, qr).click()
        self.wait(lambda: server.state()["metadata"]["types"] == [], "detection off at the server")

        # A server without the metadata output (no `metadata` in its state): no Codes panel,
        # no boxes, nothing breaks. (In one script: the page's own poll must not come in between.)
        self.assertEqual(self.js("const s = Object.assign({}, state); delete s.metadata; applyState(s);"
                                 "return ['codes-group', 'code-overlay', 'codes-part'].map((id) => document.getElementById(id).hidden);"),
                         [True, True, True], "nothing of codes from a server without them")
        self.js("return fetch('/api/session').then((r) => r.json()).then(applyState)")
        self.wait(lambda: d.find_element(By.ID, "codes-group").is_displayed(), "the Codes panel is back")

        errors = [e for e in d.get_log("browser") if e["level"] == "SEVERE"]
        self.assertEqual(errors, [], f"console errors: {errors}")


class MotionTest(ServedPage):
    """Motion detection on the page: masks drawn by clicking on the preview reach the server,
    and a walker crossing the still scene is outlined over the preview while it moves, listed
    as an event, and recorded as an event movie the gallery marks. A server of its own: the
    rear camera main, at 1×, not turned (the masks' and the outline's coordinates are the
    picture's as viewers see it)."""

    wait = PageTest.wait
    js = PageTest.js

    def click_picture(self, points, double=False):
        """Clicks the preview at each normalized point of the picture (letterboxed in the
        stage: contentRect() says where); the last one double-clicked when `double`."""
        d = self.driver
        stage = d.find_element(By.ID, "stage")
        for i, (x, y) in enumerate(points):
            at = self.js("const s = document.getElementById('stage').getBoundingClientRect(), r = contentRect();"
                         "return [r.left + arguments[0] * r.width - (s.left + s.width / 2),"
                         "        r.top + arguments[1] * r.height - (s.top + s.height / 2)];", x, y)
            action = ActionChains(d).move_to_element_with_offset(stage, round(at[0]), round(at[1]))
            (action.double_click() if double and i == len(points) - 1 else action.click()).perform()

    def masks_drawn(self):
        return self.js("return document.querySelectorAll('#motion-masks polygon.mask').length")

    def assert_polygon(self, got, expected, message):
        """A mask as the server has it: the corners clicked, within a few pixels."""
        self.assertEqual(len(got), len(expected), f"{message}: {got}")
        for (gx, gy), (ex, ey) in zip(got, expected):
            self.assertAlmostEqual(gx, ex, delta=0.02, msg=f"{message}: {got}")
            self.assertAlmostEqual(gy, ey, delta=0.02, msg=f"{message}: {got}")

    def outline(self):
        """The moving area's outline over the preview and the picture's rectangle, or None
        while no outline is shown."""
        return self.js("""
            const box = document.getElementById('motion-box');
            if (box.closest('[hidden]') || !box.getClientRects().length) return null;
            const b = box.getBoundingClientRect(), r = contentRect();
            return {box: {x: b.left, y: b.top, width: b.width, height: b.height},
                    picture: {x: r.left, y: r.top, width: r.width, height: r.height},
                    label: document.getElementById('motion-label').textContent,
                    color: getComputedStyle(box).borderTopColor};""")

    def test_a_mask_drawn_on_the_preview_reaches_the_server(self):
        d, server = self.driver, self.server
        d.get_log("browser")  # what the pages before logged
        d.get(server.url)
        self.wait(lambda: self.js("return window.viewfinderPreview.size()[0]") == 640, "preview frames")
        self.assertIn("motion", server.state(), "the session's state has motion")
        self.assertEqual(server.state()["motion"]["masks"], [], "no masks until drawn")
        self.wait(lambda: d.find_element(By.ID, "motion-group").is_displayed(), "the Motion panel")
        self.assertFalse(d.find_element(By.ID, "motion-overlay").is_displayed(), "nothing over the preview yet")
        focus = server.state()["focus"]["point"]

        # Edit masks: a square in the upper left, its corners clicked, closed by a double-click.
        d.find_element(By.ID, "mask-edit").click()
        self.assertEqual(d.find_element(By.ID, "mask-edit").get_attribute("aria-pressed"), "true")
        square = [(0.1, 0.1), (0.4, 0.1), (0.4, 0.4), (0.1, 0.4)]
        self.click_picture(square[:3])
        self.assertEqual(self.js("return document.querySelectorAll('#motion-masks .mask-corner').length"), 3,
                         "the corners show while drawing")
        self.click_picture(square[3:], double=True)
        self.wait(lambda: len(server.state()["motion"]["masks"]) == 1, "the mask reaches the server")
        self.assert_polygon(server.state()["motion"]["masks"][0], square, "the square")
        self.wait(lambda: self.masks_drawn() == 1, "the server's mask is drawn over the preview")
        self.wait(lambda: self.js("return document.querySelectorAll('#motion-masks .mask-corner').length") == 0,
                  "the next mask starts with no corners")
        self.assertEqual(server.state()["focus"]["point"], focus, "a corner is not a tap to focus")

        # A triangle in the lower right, closed by its button; then Done: both stay drawn.
        triangle = [(0.6, 0.6), (0.9, 0.6), (0.75, 0.9)]
        self.click_picture(triangle)
        d.find_element(By.ID, "mask-close").click()
        self.wait(lambda: len(server.state()["motion"]["masks"]) == 2, "the second mask reaches the server")
        masks = server.state()["motion"]["masks"]
        self.assert_polygon(masks[0], square, "the square stays")
        self.assert_polygon(masks[1], triangle, "the triangle")
        d.find_element(By.ID, "mask-edit").click()
        self.assertEqual(d.find_element(By.ID, "mask-edit").get_attribute("aria-pressed"), "false")
        self.assertFalse(d.find_element(By.ID, "mask-close").is_displayed())
        self.wait(lambda: self.masks_drawn() == 2, "both masks drawn after editing")
        self.assertNotIn("editing", d.find_element(By.ID, "motion-overlay").get_attribute("class").split())
        d.save_screenshot(str(OUT / "motion-masks.png"))

        # What is drawn is the state's: masks set by another client show here.
        camera = server.state()["camera"]["id"]
        server.post(f"/api/cameras/{camera}/session/motion", {"masks": [[[0, 0], [0.5, 0], [0.5, 0.5]]]})
        self.wait(lambda: self.masks_drawn() == 1, "another client's masks are drawn")

        # Clear masks: none at the server, none drawn.
        d.find_element(By.ID, "mask-clear").click()
        self.wait(lambda: server.state()["motion"]["masks"] == [], "the masks are cleared at the server")
        self.wait(lambda: self.masks_drawn() == 0, "and gone from the preview")

        # A server without motion detection (no `motion` in its state): no panel, no overlay,
        # nothing breaks. (In one script: the page's own poll must not come in between.)
        self.assertEqual(self.js("const s = Object.assign({}, state); delete s.motion; applyState(s);"
                                 "return ['motion-group', 'motion-overlay', 'motion-part'].map((id) => document.getElementById(id).hidden);"),
                         [True, True, True], "nothing of motion from a server without it")
        self.js("return fetch('/api/session').then((r) => r.json()).then(applyState)")
        self.wait(lambda: d.find_element(By.ID, "motion-group").is_displayed(), "the Motion panel is back")

        errors = [e for e in d.get_log("browser") if e["level"] == "SEVERE"]
        self.assertEqual(errors, [], f"console errors: {errors}")

    def test_motion_is_outlined_listed_and_recorded(self):
        d, server = self.driver, self.server
        d.get_log("browser")  # what the pages before logged
        d.get(server.url)
        self.wait(lambda: self.js("return window.viewfinderPreview.size()[0]") == 640, "preview frames")
        rear = next(c["id"] for c in server.get("/api/cameras")["cameras"] if c["position"] == "rear")
        self.assertEqual(server.state()["camera"]["id"], rear)
        self.assertFalse(server.state()["motion"]["enabled"], "motion detection is off until asked for")
        # A still scene (its block and face stop), and short rolls for the event's movie (no
        # control on the page: set as another client would).
        server.post(f"/api/cameras/{rear}/scene", {"moving": False})
        server.post(f"/api/cameras/{rear}/session/motion", {"preRoll": 1, "postRoll": 1})

        # Detect on from the page; Record events (on by default) off and on again from it.
        self.wait(lambda: d.find_element(By.ID, "motion-group").is_displayed(), "the Motion panel")
        d.find_element(By.ID, "motion-enabled").click()
        self.wait(lambda: server.state()["motion"]["enabled"], "motion detection on at the server")
        self.assertTrue(d.find_element(By.ID, "motion-enabled").is_selected())
        recording = server.state()["motion"]["record"]
        d.find_element(By.ID, "motion-record").click()
        self.wait(lambda: server.state()["motion"]["record"] != recording, "Record events changed at the server")
        if recording:
            d.find_element(By.ID, "motion-record").click()
            self.wait(lambda: server.state()["motion"]["record"], "Record events on again at the server")
        self.assertTrue(d.find_element(By.ID, "motion-record").is_selected())
        self.wait(lambda: d.find_element(By.ID, "motion-indicator").text.startswith("still"), "the panel says still")
        self.wait(lambda: d.find_element(By.ID, "motion-part").is_displayed(), "the list of motion events")
        self.assertEqual(d.find_elements(By.CSS_SELECTOR, "#motion-events li"), [])
        time.sleep(1)  # the still scene: nothing moves
        self.assertIsNone(self.outline(), "no outline while nothing moves")
        self.assertFalse(server.state()["motion"]["active"])

        # A walker crosses from 0.5 s on, for 3 s: outlined over the preview while it crosses.
        staged, staged_at = time.monotonic(), time.time()
        server.post(f"/api/cameras/{rear}/scene", {"moving": False, "walker": {"after": 0.5, "duration": 3, "size": 0.6}})
        found = self.wait(lambda: (lambda o: o if o and o["box"]["width"] > 0 else None)(self.outline()),
                          "an outline over the preview while the walker crosses", timeout=10)
        self.assertLess(time.monotonic() - staged, 3.5 + 1.0, "outlined while it crosses")
        box, picture = found["box"], found["picture"]
        self.assertTrue(picture["x"] - 1 <= box["x"] and box["x"] + box["width"] <= picture["x"] + picture["width"] + 1
                        and picture["y"] - 1 <= box["y"] and box["y"] + box["height"] <= picture["y"] + picture["height"] + 1,
                        f"outline {box} in the picture {picture}")
        self.assertGreater(box["height"], 0.2 * picture["height"], f"outline {box} around a walker 0.6 of the picture tall")
        self.assertIn("motion", found["label"])
        self.assertNotEqual(found["color"], "rgb(255, 204, 51)", "the outline is not the codes' yellow")
        self.assertTrue(d.find_element(By.ID, "motion-indicator").text.startswith("moving"), "the panel says moving")
        d.save_screenshot(str(OUT / "motion.png"))

        # The event is listed as it starts, and ends once the walker has crossed: the outline goes.
        # (Read in one script: the event's item is made again when it ends.)
        first = self.wait(lambda: self.js("const li = document.querySelector('#motion-events li');"
                                          "return li && {start: Number(li.dataset.start), time: li.querySelector('time').dateTime};"),
                          "the event is listed")
        self.assertGreaterEqual(first["start"], staged_at - 1, "the walker's event")
        self.assertTrue(first["time"])
        self.wait(lambda: self.outline() is None, "the outline goes once the walker has crossed", timeout=15)
        self.wait(lambda: self.js("const li = document.querySelector('#motion-events li');"
                                  "return !!li && !li.classList.contains('ongoing');"), "the event ends in the list", timeout=15)
        # Read in one script too: the item is made again as the movie and its snapshot arrive.
        self.wait(lambda: "peak" in (self.js("const s = document.querySelector('#motion-events li .motion-score');"
                                             "return s ? s.textContent : '';") or ""), "the ended event shows its peak")
        self.assertTrue(d.find_element(By.ID, "motion-indicator").text.startswith("still"), "the panel says still again")

        # Its movie: listed as an event movie, marked in the gallery, its snapshot the poster and
        # the event's picture in the list.
        self.wait(lambda: server.get("/api/movies?trigger=motion")["movies"], "the event's movie is listed", timeout=30)
        movie = server.get("/api/movies?trigger=motion")["movies"][0]
        self.assertEqual(movie["trigger"], "motion")
        self.assertLessEqual({"start", "peak", "end"}, set(movie["event"]))
        with urllib.request.urlopen(server.url.rstrip("/") + movie["snapshot"], timeout=10) as r:
            self.assertEqual(r.headers.get_content_type(), "image/jpeg")
            self.assertEqual(r.read(2), b"\xff\xd8")
        item = f"#movies li[data-id='{movie['id']}']"
        self.wait(lambda: len(d.find_elements(By.CSS_SELECTOR, item)) == 1, "the movie is in the gallery")
        self.assertIn("motion-movie", d.find_element(By.CSS_SELECTOR, item).get_attribute("class").split())
        self.assertEqual(d.find_element(By.CSS_SELECTOR, f"{item} .motion-mark").text, "motion")
        self.assertIn("peak", d.find_element(By.CSS_SELECTOR, f"{item} .caption").get_attribute("title"), "the event's times")
        self.assertTrue(d.find_element(By.CSS_SELECTOR, f"{item} video").get_attribute("poster").endswith(movie["snapshot"]))
        self.wait(lambda: self.js("const img = document.querySelector('#motion-events li .motion-thumb img');"
                                  "return img ? img.naturalWidth : 0;") > 0, "the event's snapshot in the list")
        d.save_screenshot(str(OUT / "motion-movie.png"))

        # Off from the page.
        d.find_element(By.ID, "motion-record").click()
        self.wait(lambda: not server.state()["motion"]["record"], "recording events off at the server")
        d.find_element(By.ID, "motion-enabled").click()
        self.wait(lambda: not server.state()["motion"]["enabled"], "motion detection off at the server")
        self.wait(lambda: d.find_element(By.ID, "motion-indicator").text == "off", "the panel says off")

        errors = [e for e in d.get_log("browser") if e["level"] == "SEVERE"]
        self.assertEqual(errors, [], f"console errors: {errors}")


class SignedInTest(unittest.TestCase):
    """The page behind the browser's own sign-in: a viewer watches, an operator steers."""

    def test_a_viewer_watches_and_an_operator_steers(self):
        import warnings
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            users = [account("vic", "viewer", "viewer1"), account("ann", "operator", "operator1")]
        server = Server(auth={"users": users})
        driver = browser()
        try:
            for user, password, viewer in (("vic", "viewer1", True), ("ann", "operator1", False)):
                driver.delete_all_cookies()
                driver.get(f"http://{user}:{password}@127.0.0.1:{server.port}/")
                try:
                    WebDriverWait(driver, 15, 0.05).until(
                        # the page reloads itself without the credentials: the new document may not have its <img> yet
                        lambda d: d.execute_script("return !!window.viewfinderPreview && window.viewfinderPreview.size()[0] > 0"),
                        f"{user}: preview frames behind the sign-in")
                except Exception:
                    print("DIAG url", driver.current_url, "preview", driver.execute_script(
                        "const p = document.getElementById('preview'); return p ? [p.src, p.naturalWidth, p.complete] : null"),
                        "offline", driver.execute_script("const o = document.getElementById('offline'); return o ? !o.hidden : null"),
                        "console", driver.get_log("browser")[-8:], file=sys.stderr)
                    raise
                WebDriverWait(driver, 10, 0.05).until(
                    lambda d: d.execute_script("return document.body.classList.contains('view-only')") == viewer,
                    f"{user}: view-only mark is {viewer}")
                self.assertEqual(driver.find_element(By.ID, "view-only").is_displayed(), viewer)
                self.assertEqual(not driver.find_element(By.ID, "shutter").is_enabled(), viewer)
                WebDriverWait(driver, 10, 0.05).until(  # once the state has come: a viewer cannot record
                    lambda d: d.find_element(By.ID, "record").is_displayed()
                    and d.find_element(By.ID, "record").is_enabled() != viewer, f"{user}: record button")
                self.assertEqual(driver.execute_script("return document.querySelector('.controls').inert"), viewer)
                WebDriverWait(driver, 10, 0.05).until(
                    lambda d: len(d.find_elements(By.CSS_SELECTOR, "#tiles .tile")) == 2, f"{user}: camera tiles")
                for button in driver.find_elements(By.CSS_SELECTOR, "#tiles .tile button"):
                    self.assertEqual(not button.is_enabled(), viewer, f"{user}: tile buttons")
                if viewer:
                    driver.save_screenshot(str(OUT / "viewer.png"))
                    # the page cannot steer; the server would refuse anyway
                    code = driver.execute_script(
                        "return fetch('/api/session/zoom', {method: 'POST', body: JSON.stringify({factor: 2})}).then(r => r.status)")
                    self.assertEqual(code, 403)
                else:
                    code = driver.execute_script(
                        "return fetch('/api/session/zoom', {method: 'POST', body: JSON.stringify({factor: 2})}).then(r => r.status)")
                    self.assertEqual(code, 200)
                self.assertNotIn(password, driver.execute_script(
                    "return JSON.stringify(localStorage) + JSON.stringify(sessionStorage) + document.cookie"))
        finally:
            driver.quit()
            server.stop()


class LiveMSETest(ServedPage):
    """`/live.mp4` through Media Source Extensions, as a page plays it: the init segment and
    whole fragments appended to a SourceBuffer of the avcC's codec and AAC-LC (the synthetic
    microphone's track); Chromium decodes frames of the camera's size and sound for 4 s without
    a media error, and plays on."""

    def test_live_mp4_plays_through_mse(self):
        d, server = self.driver, self.server
        d.get(server.url + "healthz")  # an origin for fetch(), without the page's own preview
        d.set_script_timeout(30)
        result = d.execute_async_script(r"""
            const done = arguments[arguments.length - 1];
            const v = document.createElement('video'); v.muted = true; document.body.appendChild(v);
            const ms = new MediaSource(); v.src = URL.createObjectURL(ms);
            ms.addEventListener('sourceopen', async () => {
              try {
                const reader = (await fetch('/live.mp4')).body.getReader();
                let buf = new Uint8Array(0), sb = null, mime = null;
                const start = performance.now();
                const append = (b) => new Promise((ok, fail) => {
                  sb.addEventListener('updateend', ok, {once: true}); sb.addEventListener('error', fail, {once: true});
                  sb.appendBuffer(b);
                });
                while (performance.now() - start < 4000) {
                  const {value, done: end} = await reader.read();
                  if (end) break;
                  const n = new Uint8Array(buf.length + value.length); n.set(buf); n.set(value, buf.length); buf = n;
                  let i = 0;  // whole top-level boxes only
                  while (i + 8 <= buf.length) {
                    const len = (buf[i] << 24 | buf[i + 1] << 16 | buf[i + 2] << 8 | buf[i + 3]) >>> 0;
                    if (len < 8 || i + len > buf.length) break;
                    i += len;
                  }
                  if (i === 0) continue;
                  const whole = buf.slice(0, i); buf = buf.slice(i);
                  if (!sb) {  // the codec string from the avcC (profile, constraints, level), and AAC-LC when there is sound
                    const text = new TextDecoder('latin1').decode(whole), k = text.indexOf('avcC');
                    mime = 'video/mp4; codecs="avc1.' + [...whole.slice(k + 5, k + 8)].map((x) => x.toString(16).padStart(2, '0')).join('') +
                           (text.includes('mp4a') ? ', mp4a.40.2' : '') + '"';
                    sb = ms.addSourceBuffer(mime);
                  }
                  await append(whole);
                  if (v.paused && sb.buffered.length) { v.currentTime = sb.buffered.start(0); v.play().catch(() => {}); }
                }
                const q = v.getVideoPlaybackQuality();
                done({mime, decoded: q.totalVideoFrames, width: v.videoWidth, height: v.videoHeight, played: v.currentTime - sb.buffered.start(0),
                      sound: v.webkitAudioDecodedByteCount, error: v.error && v.error.message});
              } catch (e) { done({error: String(e)}); }
            });""")
        fmt = server.state()["format"]
        self.assertIsNone(result.get("error"), result)
        self.assertTrue(result["mime"].startswith('video/mp4; codecs="avc1.'), result)
        self.assertEqual((result["width"], result["height"]), (fmt["width"], fmt["height"]), result)
        self.assertGreaterEqual(result["decoded"], 30, result)
        # The camera's synthetic microphone is an AAC track: MSE plays only where every track
        # has data, so time moving on is picture and sound played together.
        self.assertTrue(result["mime"].endswith(', mp4a.40.2"'), result)
        self.assertGreater(result["sound"], 0, result)
        self.assertGreater(result["played"], 1.0, result)


class WebRTCPreviewTest(ServedPage):
    """The page's preview by WebRTC (WHEP): the <video> takes over from MJPEG, the transport
    badge says WebRTC, getStats() counts decoded frames, and the synthetic camera's timecode,
    read from the decoded picture through a canvas, is a capture time a few tens of ms old
    (the glass-to-glass latency of this machine, printed)."""
    server_options = {"cameras": [{"id": "rear", "source": "synthetic", "position": "rear", "preset": "640x480", "timecode": True},
                                  {"id": "front", "source": "synthetic", "position": "front", "preset": "352x288"}]}

    def test_the_preview_plays_by_webrtc_and_the_timecode_reads_back(self):
        d, server = self.driver, self.server
        d.get(server.url)
        WebDriverWait(d, 20, 0.05).until(lambda _: d.execute_script("return window.viewfinderPreview && window.viewfinderPreview.transport()") == "WebRTC",
                                         "the preview goes WebRTC")
        # An adaptive viewer starts on the sub stream (320x240 under this 640x480 camera: the
        # badge says "WebRTC · sub") and moves up to the main one after 2 s of a quiet link.
        WebDriverWait(d, 20, 0.1).until(lambda _: d.find_element(By.ID, "transport").text == "WebRTC",
                                        "the preview moves up to the main stream")
        self.assertTrue(d.find_element(By.ID, "live").is_displayed())
        self.assertFalse(d.find_element(By.ID, "preview").is_displayed())
        WebDriverWait(d, 10, 0.1).until(lambda _: d.execute_script("return window.viewfinderPreview.framesDecoded()") >= 60,
                                        "60 frames decoded")
        size = d.execute_script("const v = document.getElementById('live'); return [v.videoWidth, v.videoHeight]")
        fmt = server.state()["format"]
        self.assertEqual(size, [fmt["width"], fmt["height"]])
        # Chromium took the playout delay the answer asks for (each frame shown once decoded).
        self.assertIn("http://www.webrtc.org/experiments/rtp-hdrext/playout-delay",
                      d.execute_script("return window.viewfinderPreview.videoHeaderExtensions()"))
        # The timecode of the frame on screen against the clock (same machine, same clock).
        d.set_script_timeout(20)
        ages = d.execute_async_script(r"""
            const done = arguments[arguments.length - 1];
            const v = document.getElementById('live'), c = document.createElement('canvas');
            c.width = v.videoWidth; c.height = v.videoHeight;
            const g = c.getContext('2d', {willReadFrequently: true}), ages = [];
            const read = () => {
              g.drawImage(v, 0, 0);
              const rows = Math.max(8, Math.floor(c.height / 45)), y = Math.floor(rows / 2);
              const px = g.getImageData(0, y, c.width, 1).data;
              const cell = (i) => { const x = Math.floor((i + 0.5) * c.width / 64) * 4; return (px[x] + px[x + 1] + px[x + 2]) / 3; };
              const mid = (cell(0) + cell(1)) / 2;
              let ms = 0;
              for (let i = 2; i < 50; i++) ms = ms * 2 + (cell(i) > mid ? 1 : 0);
              return Date.now() - ms;
            };
            const step = () => {
              ages.push(read());
              if (ages.length >= 30) done(ages); else v.requestVideoFrameCallback(step);
            };
            v.requestVideoFrameCallback(step);""")
        ages.sort()
        print(f"WebRTC glass-to-glass on this machine: p50 {ages[len(ages) // 2]} ms, max {ages[-1]} ms", file=sys.stderr)
        self.assertTrue(all(0 <= a < 2000 for a in ages), f"timecodes read back as capture times: {ages}")
        # The camera's sound (the synthetic microphone) comes in Opus beside the picture, both
        # tracks in one stream (the answer names each SSRC's msid: Chromium lines up only the
        # tracks of one stream); the page offers it muted, and its button unmutes the <video>.
        WebDriverWait(d, 10, 0.1).until(lambda _: (d.execute_script("return window.viewfinderPreview.soundStats()") or {}).get("packets", 0) >= 100,
                                        "100 Opus packets received")
        sound = d.execute_script("return window.viewfinderPreview.soundStats()")
        self.assertEqual((sound["codec"] or "").lower(), "audio/opus", sound)
        self.assertGreater(sound["samples"], 48000, sound)
        self.assertTrue(sound["oneStream"], f"picture and sound in one stream: {sound}")
        listen = d.find_element(By.ID, "listen")
        self.assertTrue(listen.is_displayed())
        self.assertTrue(d.execute_script("return document.getElementById('live').muted"))
        listen.click()
        self.assertEqual(listen.get_attribute("aria-pressed"), "true")
        self.assertFalse(d.execute_script("return document.getElementById('live').muted"))
        print(f"WebRTC sound: {sound['packets']} Opus packets, {sound['samples']} samples", file=sys.stderr)
        # A switch: the WebRTC preview follows the main camera (the new size arrives in band).
        server.post("/api/session/switch", {"camera": "front"})
        WebDriverWait(d, 15, 0.1).until(lambda _: d.execute_script("const v = document.getElementById('live'); return [v.videoWidth, v.videoHeight]") == [352, 288],
                                        "the video shows the front camera's size")
        self.assertEqual(d.execute_script("return window.viewfinderPreview.transport()"), "WebRTC")
        errors = [e for e in d.get_log("browser") if e["level"] == "SEVERE"]
        self.assertEqual(errors, [], f"console errors: {errors}")


class TalkTest(unittest.TestCase):
    """Push-to-talk: Chromium's fake microphone (a beep it makes itself) held on the Talk button
    goes to the camera's synthetic speaker, which plays it — `speaker.wav` has the beeps — and
    the camera says someone talks while the button is held, no one once it is let go."""

    def test_holding_talk_plays_the_browsers_microphone_on_the_speaker(self):
        server = Server(cameras=[{"id": "rear", "source": "synthetic", "position": "rear", "preset": "640x480"}])
        driver = browser("--use-fake-ui-for-media-stream", "--use-fake-device-for-media-stream")
        try:
            driver.get(server.url)
            talk = WebDriverWait(driver, 20, 0.05).until(lambda d: (lambda b: b if b.is_displayed() else None)(d.find_element(By.ID, "talk")),
                                                         "the Talk button shows for a camera with a speaker")
            speaker = lambda: next(c for c in server.get("/api/cameras")["cameras"] if c["id"] == "rear")["speaker"]
            self.assertEqual(speaker(), {"device": "synthetic", "talking": False})
            ActionChains(driver).click_and_hold(talk).perform()
            try:
                WebDriverWait(driver, 10, 0.05).until(lambda d: d.execute_script("return window.viewfinderTalk.talking()"),
                                                      "the talk is set up")
                self.assertEqual(talk.get_attribute("aria-pressed"), "true")
                WebDriverWait(None, 10, 0.1).until(lambda _: speaker()["talking"], "the camera says someone talks")
                time.sleep(3)  # three seconds said into the microphone (what is measured, not a wait for an event)
            finally:
                ActionChains(driver).release(talk).perform()
            WebDriverWait(None, 10, 0.1).until(lambda _: not speaker()["talking"], "letting go ends the talk")
            self.assertEqual(talk.get_attribute("aria-pressed"), "false")
            with urllib.request.urlopen(server.url + "api/cameras/rear/speaker.wav?seconds=5", timeout=10) as r:
                self.assertEqual(r.headers["Content-Type"], "audio/wav")
                wav = r.read()
            samples = array.array("h", wav[44:])
            self.assertGreater(len(samples), 48000, f"{len(samples)} samples played")
            peak = max(abs(v) for v in samples)
            loud = sum(1 for v in samples if abs(v) > 1000)
            print(f"push-to-talk: the speaker played {len(samples) / 48000:.1f} s, peak {peak}, {loud} samples above -30 dBFS", file=sys.stderr)
            self.assertGreater(peak, 3000, "the fake microphone's beeps were played")
            errors = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
            self.assertEqual(errors, [], f"console errors: {errors}")
        finally:
            driver.quit()
            server.stop()


class VanishedViewerTest(unittest.TestCase):
    """A WebRTC viewer that vanishes without a goodbye (its browser killed: no DELETE, no
    RTCP BYE) is ended by the server within seconds, its pipeline gone (/metrics)."""

    def test_a_killed_browser_leaves_no_webrtc_session(self):
        server = Server()
        driver = browser()
        try:
            def sessions():
                text = urllib.request.urlopen(server.url + "metrics", timeout=10).read().decode()
                return int(re.search(r'viewfinder_live_clients\{transport="webrtc"\} (\d+)', text).group(1))
            driver.get(server.url)
            WebDriverWait(driver, 20, 0.05).until(
                lambda d: d.execute_script("return window.viewfinderPreview && window.viewfinderPreview.transport()") == "WebRTC")
            self.assertEqual(sessions(), 1)
            # chromedriver's browser, and all it started, killed where it stands.
            def tree(pid):
                kids = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout.split()
                return [int(k) for k in kids] + [g for k in kids for g in tree(int(k))]
            for pid in tree(driver.service.process.pid):
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            killed = time.monotonic()
            WebDriverWait(None, 15, 0.25).until(lambda _: sessions() == 0, "the vanished viewer's session ends")
            print(f"a vanished WebRTC viewer was ended {time.monotonic() - killed:.1f} s after its browser died", file=sys.stderr)
        finally:
            try:
                driver.quit()
            except Exception:
                pass
            server.stop()


class OfflineTest(unittest.TestCase):
    def test_the_offline_indicator_shows_when_the_server_goes(self):
        server = Server()
        driver = browser()
        try:
            driver.get(server.url)
            WebDriverWait(driver, 10, 0.05).until(
                lambda d: d.execute_script("return window.viewfinderPreview.size()[0]") > 0)
            self.assertFalse(driver.find_element(By.ID, "offline").is_displayed())
            server.proc.terminate()
            server.proc.wait(10)
            WebDriverWait(driver, 10, 0.05).until(lambda d: d.find_element(By.ID, "offline").is_displayed(),
                                                  "the reconnecting overlay appears")
            self.assertIn(driver.find_element(By.ID, "status").text, ("reconnecting…",))
        finally:
            driver.quit()
            server.stop()


if __name__ == "__main__":
    run("browser")
