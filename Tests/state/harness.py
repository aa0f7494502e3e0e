"""What Tests/state's harnesses share: the server as a process of its own (the synthetic pair,
its microphone, its saved state in its home directory), a user's random changes through the
API — HTTP, or MQTT as Home Assistant and a fleet send them — and what a user set as the state
reports it, and as Home Assistant's entities read it off the retained state topics."""
import json, os, re, select, signal, socket, subprocess, sys, time, urllib.error, urllib.request, uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BINARY = Path(os.environ.get("VIEWFINDER_BINARY", ROOT / ".build/debug/viewfinder"))
CAMERAS = ["rear", "front"]
NODE = "kill"


class Broker:
    """Debian's mosquitto on a free loopback port, nothing kept on disk."""
    def __init__(self, work):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        self.port = s.getsockname()[1]
        s.close()
        conf = Path(work) / "mosquitto.conf"
        conf.write_text(f"allow_anonymous true\npersistence false\nuser root\nlistener {self.port} 127.0.0.1\n")
        self.proc = subprocess.Popen(["/usr/sbin/mosquitto", "-c", str(conf)], stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), 0.2).close()
                return
            except OSError:
                time.sleep(0.01)
        raise RuntimeError("mosquitto did not start")

    def stop(self):
        self.proc.kill()
        self.proc.wait(10)

    def topic(self, camera, route):
        return f"viewfinder/{NODE}/{camera}/{route}"

    def request(self, camera, route, body):
        """A command with an MQTT 5 response topic (mosquitto_rr): its answer, {"status", "body"}."""
        r = subprocess.run(["mosquitto_rr", "-V", "5", "-h", "127.0.0.1", "-p", str(self.port), "-t", self.topic(camera, route),
                            "-e", f"reply/{uuid.uuid4().hex}", "-m", json.dumps(body if body is not None else {}), "-W", "20"],
                           capture_output=True, text=True, timeout=30)
        assert r.returncode == 0, f"mosquitto_rr {route}: exit {r.returncode} {r.stderr}"
        return json.loads(r.stdout)

    def forget(self):
        """Clears the host's retained status and states (a dead host's last word), so what comes
        next is the new one's."""
        for t in [f"viewfinder/{NODE}/status"] + [self.topic(c, "state") for c in CAMERAS]:
            subprocess.run(["mosquitto_pub", "-h", "127.0.0.1", "-p", str(self.port), "-t", t, "-r", "-n"], check=True, timeout=10)

    def online(self, timeout=30):
        """Waits for the host's `online` (published once its command subscription is on the wire)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            r = subprocess.run(["mosquitto_sub", "-h", "127.0.0.1", "-p", str(self.port), "-t", f"viewfinder/{NODE}/status",
                                "-C", "1", "-W", "1"], capture_output=True, text=True, timeout=10)
            if r.stdout.strip() == "online":
                return True
        return False

    def states(self):
        """Each camera's retained state, as a subscriber that comes now gets it (None: none yet)."""
        r = subprocess.run(["mosquitto_sub", "-h", "127.0.0.1", "-p", str(self.port), "-F", "%t\t%p", "-W", "1",
                            "-C", str(len(CAMERAS))] + sum((["-t", self.topic(c, "state")] for c in CAMERAS), []),
                           capture_output=True, text=True, timeout=10)
        out = dict.fromkeys(CAMERAS)
        for line in r.stdout.splitlines():
            topic, _, payload = line.partition("\t")
            out[topic.split("/")[-2]] = json.loads(payload)
        return out


def entities(s):
    """What Home Assistant's entities read off a camera's state (HomeAssistantDiscovery's value templates)."""
    return {"zoom": s["zoom"]["factor"], "focus_mode": s["focus"]["mode"], "exposure_mode": s["exposure"]["mode"],
            "mute": bool(s.get("audio") and s["audio"]["muted"]), "recording": s["recording"]["active"],
            "fps": (s["format"] or {}).get("fps", 0)}


class Server:
    def __init__(self, home, binary=BINARY, timeout=60, broker=None):
        self.home = home
        self.broker = broker
        config = Path(home) / "config.json"
        if not config.exists():
            settings = {"capture": {"directory": f"{home}/p"}, "recording": {"directory": f"{home}/m"},
                        "state": {"directory": "state"}, "onvif": {"enabled": False}, "synthetic": {"noise": False}}
            if broker:
                settings["mqtt"] = {"url": f"mqtt://127.0.0.1:{broker.port}", "node": NODE}
            config.write_text(json.dumps(settings))
        self.proc = subprocess.Popen([str(binary), "--config", str(config), "--port", "0", "--rtsp-port", "0",
                                      "--cameras", "synthetic", "--preset", "352x288", "--log-level", "error"],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        if not ready:
            self.proc.kill()
            raise RuntimeError(f"viewfinder did not start in {timeout} s")
        self.port = int(re.search(rb"127\.0\.0\.1:(\d+)", self.proc.stdout.readline()).group(1))

    def kill(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)
        err = self.proc.stderr.read().decode(errors="replace")
        self.proc.stdout.close(), self.proc.stderr.close()
        return err

    def request(self, method, path, body=None):
        data = None if body is None else json.dumps(body).encode()
        r = urllib.request.Request(f"http://127.0.0.1:{self.port}{path}", data=data, method=method,
                                   headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(r, timeout=30) as answer:
                return answer.status, json.loads(answer.read() or b"null")
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read() or b"null")

    def get(self, path):
        status, body = self.request("GET", path)
        assert status == 200, f"GET {path}: {status} {body}"
        return body

    def post(self, path, body, via="http"):
        """`via="mqtt"`: a camera's call as an MQTT command, acknowledged on its response topic."""
        if via == "mqtt":
            camera, route = re.fullmatch(r"/api/cameras/([^/]+)/(.+)", path).groups()
            answer = self.broker.request(camera, route, body)
            status, answer = answer["status"], answer["body"]
        else:
            status, answer = self.request("POST", path, body)
        assert status == 200, f"POST {path} {json.dumps(body)} ({via}): {status} {answer}"
        return answer


def chosen(s):
    """What a user set on one camera, as its state reports it: automatic modes' readings left out."""
    f, e, w, z = s["focus"], s["exposure"], s["whiteBalance"], s["zoom"]
    out = {"preset": s["preset"], "fps": (s["format"] or {}).get("fps"), "zoom": z["factor"], "center": (z["center"]["x"], z["center"]["y"]),
           "focus": f["mode"], "exposure": e["mode"], "bias": e["bias"], "wb": w["mode"],
           "orientation": (s["orientation"]["rotation"], s["orientation"]["mirrored"]),
           "motion": (s["motion"]["enabled"], s["motion"]["threshold"], s["motion"]["record"]),
           "live": {l["name"]: l.get("bitrateSet") for l in s.get("live", [])},
           "running": s["state"] != "idle"}
    if f["mode"] == "locked": out["lens"] = f["lensPosition"]
    if e["mode"] in ("custom", "locked"): out["duration"], out["iso"] = e["duration"], e["iso"]
    if w["mode"] == "locked": out["temperature"] = w["temperature"]
    if s.get("audio"): out["audio"] = (s["audio"]["muted"], s["audio"]["gainDb"])
    return out


def snapshot(server):
    main = server.get("/api/session")["camera"]["id"]
    return {"main": main, **{c: chosen(server.get(f"/api/cameras/{c}/session")) for c in CAMERAS}}


def change(server, rnd):
    """One random change a user makes, through its call: over HTTP, or (a third of them, where the
    server has a broker) as an MQTT command."""
    c = rnd.choice(CAMERAS)
    at = f"/api/cameras/{c}/session"
    kind = rnd.choice(["zoom", "focus", "exposure", "wb", "orientation", "motion", "live", "audio", "format", "run", "main"])
    via = "mqtt" if server.broker and rnd.random() < 1 / 3 else "http"
    def post(path, body):
        return server.post(path, body, via if path.startswith("/api/cameras/") else "http")
    if kind == "zoom":
        post(at + "/zoom", {"factor": round(rnd.uniform(1, 4), 2), "center": {"x": round(rnd.uniform(0.2, 0.8), 2), "y": round(rnd.uniform(0.2, 0.8), 2)}})
    elif kind == "focus":
        post(at + "/focus", rnd.choice([{"mode": "locked", "lensPosition": round(rnd.uniform(0, 1), 3)}, {"mode": "continuous"}, {"mode": "auto"}]))
    elif kind == "exposure":
        post(at + "/exposure", rnd.choice([{"duration": round(rnd.uniform(0.001, 0.03), 4), "iso": rnd.choice([100, 200, 400, 800])},
                                                   {"mode": "locked"},
                                                   {"mode": "locked", "duration": round(rnd.uniform(0.001, 0.03), 4), "iso": rnd.choice([100, 400])},
                                                   {"mode": "continuous", "bias": rnd.choice([-1, -0.5, 0, 0.5, 1])}]))
    elif kind == "wb":
        post(at + "/white-balance", rnd.choice([{"temperature": rnd.randrange(2500, 7500, 100)}, {"mode": "continuous"}]))
    elif kind == "orientation":
        post(at + "/orientation", {"rotation": rnd.choice([0, 90, 180, 270]), "mirrored": rnd.random() < 0.5})
    elif kind == "motion":
        post(at + "/motion", {"enabled": rnd.random() < 0.5, "threshold": rnd.randrange(1, 20), "record": rnd.random() < 0.5})
    elif kind == "live":
        post(at + "/live", {"bitrate": rnd.choice([None, 500, 1500, 4000]), "sub": {"bitrate": rnd.choice([None, 200, 400])}})
    elif kind == "audio":
        post(at + "/audio", {"muted": rnd.random() < 0.3, "gainDb": rnd.choice([-6, 0, 3, 6])})
    elif kind == "format":
        post(at + "/prepare", {"preset": rnd.choice(["352x288", "640x480"]), "fps": rnd.choice([15, 30])})
    elif kind == "run":
        post(at + ("/stop" if rnd.random() < 0.5 else "/start"), None)
    else:
        post("/api/session/switch", {"camera": c})
    return kind, via
