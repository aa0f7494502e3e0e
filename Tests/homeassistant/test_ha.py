#!/usr/bin/env python3
"""A real Home Assistant (2024.3.3, the last for Python 3.11; pinned in requirements.txt, in a
venv under .build/) with its MQTT integration on a test broker sees a Viewfinder host's cameras
by discovery (issue 29, item 6): the entities are there and available, a button press takes a
photo, the zoom number moves the zoom, the camera entity serves the snapshot, and when the host
is killed its entities go unavailable; started again, they read what HA set before it (issue 57:
zoom, focus mode, mute; the torch off). And the same Home Assistant adopts the host by ONVIF
(issue 39), as a user does in Settings → Add integration → ONVIF (its config flow, over HA's
REST API): its own setup sequence makes a camera per H.264 profile and motion sensors, its
events come by webhook (the host's push subscription POSTs each Notify to HA's internal URL),
and a walker staged in the rear camera turns a motion sensor on, then off. The ONVIF
integration's packages (and netifaces', built from source: gcc and python3-dev) are pinned in
requirements.txt. Prints what it saw.

Usage: test_ha.py   (make test-homeassistant; VIEWFINDER_BINARY to pick the binary)
"""
import json, os, re, select, shutil, signal, socket, subprocess, sys, tempfile, time, urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BINARY = Path(os.environ.get("VIEWFINDER_BINARY", ROOT / ".build/debug/viewfinder"))
VENV = ROOT / ".build/ha-venv"
REQUIREMENTS = Path(__file__).resolve().parent / "requirements.txt"
NODE = "ha1"
failures = []


def check(ok, what):
    print(("ok:   " if ok else "FAIL: ") + what, flush=True)
    if not ok:
        failures.append(what)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def eventually(f, timeout, every=0.25):
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            v = f()
            if v:
                return v
        except Exception:
            pass
        time.sleep(every)
    return None


def venv():
    """The pinned venv (scripts/py-venv: made once, again when the requirements change)."""
    subprocess.run([str(ROOT / "scripts/py-venv"), str(VENV), "--", "--no-deps", "-r", str(REQUIREMENTS)], check=True)


def http(method, url, body=None, token=None, form=False, timeout=10):
    data, headers = None, {}
    if body is not None:
        if form:
            data = "&".join(f"{k}={urllib.parse.quote(v)}" for k, v in body.items()).encode()
            headers["Content-Type"] = "application/x-www-form-urlencoded"
        else:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
    if token:
        headers["Authorization"] = f"Bearer {token}"
    req = urllib.request.Request(url, data=data, headers=headers, method=method)
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return r.status, r.headers.get("Content-Type", ""), r.read()


import urllib.parse  # noqa: E402


def onvif_as_home_assistant(hbase, base, token, vport, work):
    """Settings → Add integration → ONVIF, as a user does it (the config flow over HA's REST API):
    the device by address and port, no account (the host has none). HA's own setup sequence then
    runs against the host — capabilities, device information, the interface's MAC, the profiles —
    and makes a camera per H.264 profile; its events come by webhook (HA subscribes with its
    internal URL: the host POSTs each Notify) and a staged walker turns its motion sensor on, then off."""
    def flow(path, body):
        try:
            return json.loads(http("POST", f"{hbase}/api/config/config_entries/flow{path}", body, token=token, timeout=60)[2])
        except urllib.error.HTTPError as e:
            return {"errors": f"HTTP {e.code}: {e.read()[:300]!r}"}

    step = flow("", {"handler": "onvif", "show_advanced_options": False})
    if "flow_id" in step:
        step = flow(f"/{step['flow_id']}", {"auto": False})
    check(step.get("step_id") == "configure", f"ONVIF: the configure form ({step.get('step_id')}, {step.get('errors')})")
    done = flow(f"/{step.get('flow_id')}", {"name": "Viewfinder rear", "host": "127.0.0.1", "port": vport, "username": "", "password": ""})
    check(done.get("type") == "create_entry", f"ONVIF: the entry made ({done.get('type')}: {done.get('title') or done.get('errors')})")

    def states(prefix):
        return [st for st in json.loads(http("GET", f"{hbase}/api/states", token=token)[2]) if st["entity_id"].startswith(prefix)]

    cameras = eventually(lambda: states("camera.viewfinder_rear_"), 60, 0.5) or []
    names = sorted(st["entity_id"] for st in cameras)
    # HA enables the profiles at the device's largest width only: with the sub stream at most
    # half the main one (issue 56), each camera is one camera entity, its main stream — before,
    # a 640x480 camera's sub stream was as wide and HA showed every camera twice.
    check(any(n.endswith("rear_main") for n in names) and any(n.endswith("front_main") for n in names)
          and not any(n.endswith("_sub") for n in names),
          f"ONVIF: one camera entity per camera, its main stream's ({', '.join(names)})")
    motion = eventually(lambda: [st for st in states("binary_sensor.viewfinder_rear_") if "motion" in st["entity_id"]], 60, 0.5) or []
    check(len(motion) >= 1 and all(st["state"] == "off" for st in motion),
          f"ONVIF: motion sensors from the events, off ({', '.join(st['entity_id'] + ' ' + st['state'] for st in motion)})")
    log = lambda: (work / "hass.log").read_text()
    check(eventually(lambda: "Switching to webhook for events" in log(), 60, 0.5) is not None,
          "ONVIF: HA takes the events by webhook (the host's push subscription reached it)")

    # A walker in the rear camera's still scene, the detector on. The sensors' ids do not say
    # whose camera they are (HA numbers the second source's "_2"): one Cell Motion sensor must
    # go on, then every one off.
    for path, body in (("/api/cameras/rear/scene", {"moving": False}), ("/api/cameras/rear/session/motion", {"enabled": True}),
                       ("/api/cameras/rear/scene", {"walker": {"after": 3, "duration": 2}})):
        http("POST", f"{base}{path}", body)
    sensors = [st["entity_id"] for st in motion if "cell_motion" in st["entity_id"]]
    sensor_states = lambda: [json.loads(http("GET", f"{hbase}/api/states/{e}", token=token)[2])["state"] for e in sensors]
    seen_on = eventually(lambda: "on" in sensor_states(), 30, 0.05)
    check(seen_on is not None, f"ONVIF: a Cell Motion sensor on while the walker crosses ({', '.join(sensors)})")
    seen_off = seen_on and eventually(lambda: all(v == "off" for v in sensor_states()), 30, 0.1)
    check(bool(seen_off), f"ONVIF: every Cell Motion sensor off once the walker is gone ({', '.join(sensor_states())})")


def main():
    venv()
    work = Path(tempfile.mkdtemp(prefix="vf-ha-"))
    procs = []
    try:
        # The broker.
        mport = free_port()
        (work / "mosquitto.conf").write_text(f"allow_anonymous true\npersistence false\nuser root\nlistener {mport} 127.0.0.1\n")
        procs.append(subprocess.Popen(["/usr/sbin/mosquitto", "-c", str(work / "mosquitto.conf")], stderr=subprocess.DEVNULL))
        check(eventually(lambda: socket.create_connection(("127.0.0.1", mport), 0.5).close() or True, 10), "broker up")

        # The Viewfinder host.
        (work / "vf").mkdir()
        (work / "vf/config.json").write_text(json.dumps({
            "cameras": "synthetic", "session": {"preset": "352x288"},
            "capture": {"directory": str(work / "vf/photos")}, "recording": {"directory": str(work / "vf/movies")},
            "rtsp": {"port": 0}, "mqtt": {"url": f"mqtt://127.0.0.1:{mport}", "node": NODE}}))
        def host():
            vf = subprocess.Popen([str(BINARY), "--config", str(work / "vf/config.json"), "--port", "0", "--log-level", "warning"],
                                  stdout=subprocess.PIPE, stderr=open(work / "vf.log", "a"))
            procs.append(vf)
            ready, _, _ = select.select([vf.stdout], [], [], 60)
            vport = int(re.search(rb"127\.0\.0\.1:(\d+)", vf.stdout.readline()).group(1)) if ready else 0
            check(vport > 0, f"viewfinder up on {vport}")
            return vf, vport
        vf, vport = host()
        base = f"http://127.0.0.1:{vport}"

        # Home Assistant, its MQTT entry seeded (broker settings are not YAML).
        hport = free_port()
        ha = work / "ha"
        (ha / ".storage").mkdir(parents=True)
        (ha / "configuration.yaml").write_text(
            "homeassistant:\n  name: vf-test\n  latitude: 0\n  longitude: 0\n  elevation: 0\n  unit_system: metric\n  time_zone: UTC\n  country: US\n"
            f"  internal_url: http://127.0.0.1:{hport}\n"  # the webhook's address ONVIF's push subscription is given
            f"http: {{server_host: 127.0.0.1, server_port: {hport}}}\napi:\nconfig:\nonboarding:\nwebhook:\n"
            "logger: {default: warning, logs: {homeassistant.components.onvif: debug}}\n")
        (ha / ".storage/core.config_entries").write_text(json.dumps({
            "version": 1, "minor_version": 1, "key": "core.config_entries", "data": {"entries": [{
                "entry_id": "0123456789abcdef0123456789abcdef", "version": 1, "minor_version": 1, "domain": "mqtt",
                "title": "127.0.0.1", "data": {"broker": "127.0.0.1", "port": mport, "discovery": True},
                "options": {}, "pref_disable_new_entities": False, "pref_disable_polling": False,
                "source": "user", "unique_id": None, "disabled_by": None}]}}))
        hass_log = open(work / "hass.log", "w")
        procs.append(subprocess.Popen([str(VENV / "bin/hass"), "-c", str(ha), "--log-no-color"], stdout=hass_log, stderr=subprocess.STDOUT))
        hbase = f"http://127.0.0.1:{hport}"
        check(eventually(lambda: http("GET", f"{hbase}/api/onboarding")[0] == 200, 180, 0.5), "Home Assistant up")
        _, _, body = http("POST", f"{hbase}/api/onboarding/users", {"client_id": f"{hbase}/", "name": "Test", "username": "test",
                                                                    "password": "viewfinder-test", "language": "en"})
        code = json.loads(body)["auth_code"]
        _, _, body = http("POST", f"{hbase}/auth/token", {"grant_type": "authorization_code", "code": code, "client_id": f"{hbase}/"}, form=True)
        token = json.loads(body)["access_token"]

        def state(entity):
            return json.loads(http("GET", f"{hbase}/api/states/{entity}", token=token)[2])

        prefix = f"viewfinder_{NODE}_rear"
        entities = [f"camera.{prefix}_camera", f"button.{prefix}_capture", f"switch.{prefix}_torch", f"switch.{prefix}_recording",
                    f"number.{prefix}_zoom", f"select.{prefix}_focus_mode", f"select.{prefix}_exposure_mode",
                    f"sensor.{prefix}_fps", f"sensor.{prefix}_code", f"binary_sensor.{prefix}_motion",
                    f"switch.{prefix}_mute", f"sensor.{prefix}_sound_level"]
        for e in entities:
            s = eventually(lambda e=e: (lambda st: st if st["state"] != "unavailable" else None)(state(e)), 60, 0.5)
            check(s is not None, f"{e}: {s['state'] if s else 'missing or unavailable'}")
        fps = eventually(lambda: state(f"sensor.{prefix}_fps"), 5)
        check(fps is not None and float(fps["state"]) > 0, f"the fps sensor reads {fps and fps['state']}")

        # A button press in HA: a photo on the host.
        before = len(json.loads(http("GET", f"{base}/api/photos")[2])["photos"])
        http("POST", f"{hbase}/api/services/button/press", {"entity_id": f"button.{prefix}_capture"}, token=token)
        after = eventually(lambda: (lambda n: n if n > before else None)(len(json.loads(http("GET", f"{base}/api/photos")[2])["photos"])), 15)
        check(after is not None, f"the capture button took a photo ({before} → {after})")

        # The zoom number: the host's zoom moves, and HA reads it back from the state.
        http("POST", f"{hbase}/api/services/number/set_value", {"entity_id": f"number.{prefix}_zoom", "value": 2.5}, token=token)
        zoom = eventually(lambda: (lambda z: z if z == 2.5 else None)(json.loads(http("GET", f"{base}/api/cameras/rear/session")[2])["zoom"]["factor"]), 15)
        check(zoom == 2.5, f"the zoom number set the zoom ({zoom})")
        check(eventually(lambda: float(state(f"number.{prefix}_zoom")["state"]) == 2.5, 15) is not None, "HA reads the zoom back")

        # The torch switch.
        http("POST", f"{hbase}/api/services/switch/turn_on", {"entity_id": f"switch.{prefix}_torch"}, token=token)
        check(eventually(lambda: json.loads(http("GET", f"{base}/api/cameras/rear/session")[2])["torch"]["mode"] == "on", 15) is not None,
              "the torch switch turned the torch on")

        # The microphone (the synthetic one): its level as a sensor, its mute as a switch.
        level = eventually(lambda: (lambda st: st if st["state"] not in ("unknown", "unavailable") else None)(state(f"sensor.{prefix}_sound_level")), 15)
        check(level is not None and -60 < float(level["state"]) < 0, f"the sound level sensor reads {level and level['state']} dBFS")
        http("POST", f"{hbase}/api/services/switch/turn_on", {"entity_id": f"switch.{prefix}_mute"}, token=token)
        check(eventually(lambda: json.loads(http("GET", f"{base}/api/cameras/rear/session")[2])["audio"]["muted"], 15) is not None,
              "the mute switch muted the microphone")
        check(eventually(lambda: state(f"switch.{prefix}_mute")["state"] == "on", 15) is not None, "HA reads the mute back")

        # The camera entity serves the photo's snapshot.
        proxy = eventually(lambda: (lambda r: r if r[0] == 200 and r[1].startswith("image/jpeg") and r[2][:2] == b"\xff\xd8" else None)(
            http("GET", f"{hbase}/api/camera_proxy/camera.{prefix}_camera", token=token)), 15)
        check(proxy is not None, f"the camera entity serves a JPEG ({len(proxy[2]) if proxy else 0} bytes)")

        onvif_as_home_assistant(hbase, base, token, vport, work)

        # The focus mode select, as a user picks it in HA.
        http("POST", f"{hbase}/api/services/select/select_option", {"entity_id": f"select.{prefix}_focus_mode", "option": "locked"}, token=token)
        check(eventually(lambda: json.loads(http("GET", f"{base}/api/cameras/rear/session")[2])["focus"]["mode"] == "locked", 15) is not None,
              "the focus mode select locked the focus")
        check(eventually(lambda: json.loads(http("GET", f"{base}/api/state")[2])["saved"], 5) is not None, "the host saved it all")

        # The host dies: its entities go unavailable.
        t0 = time.time()
        vf.send_signal(signal.SIGKILL)
        vf.wait()
        gone = eventually(lambda: all(state(e)["state"] == "unavailable" for e in entities), 30, 0.2)
        check(gone is not None, f"every entity unavailable {time.time() - t0:.1f} s after the host was killed")

        # It starts again (issue 57): what HA set is there again, and HA's entities say so; the
        # torch starts off (never saved: a light left on after a power cut is a hazard).
        vf, vport = host()
        base = f"http://127.0.0.1:{vport}"
        back = eventually(lambda: all(state(e)["state"] != "unavailable" for e in entities), 60, 0.5)
        check(back is not None, "every entity available again after the restart")
        want = {f"number.{prefix}_zoom": "2.5", f"select.{prefix}_focus_mode": "locked", f"switch.{prefix}_mute": "on",
                f"switch.{prefix}_torch": "off"}
        def now():
            got = {e: state(e)["state"] for e in want}
            try:
                got[f"number.{prefix}_zoom"] = str(float(got[f"number.{prefix}_zoom"]))
            except ValueError:
                pass
            return got
        seen = eventually(lambda: (lambda got: got if got == want else None)(now()), 30, 0.5)
        check(seen is not None, f"after the restart HA reads what it set before, the torch off: {now()} (wanted {want})")
    finally:
        for p in reversed(procs):
            if p.poll() is None:
                p.send_signal(signal.SIGINT)
                try:
                    p.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
        if failures and (work / "hass.log").exists():
            print("---- hass.log (tail)")
            print("\n".join([l for l in (work / "hass.log").read_text().splitlines() if "webhook" in l.lower() or "event" in l.lower()][-40:]))
        if failures and (work / "vf.log").exists():
            print("---- the host's log (tail)")
            print("\n".join((work / "vf.log").read_text().splitlines()[-20:]))
        shutil.rmtree(work, ignore_errors=True)
    if failures:
        print(f"{len(failures)} failure(s)")
        sys.exit(1)
    print("homeassistant: every check passed")


if __name__ == "__main__":
    main()
