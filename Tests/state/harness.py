"""What Tests/state's harnesses share: the server as a process of its own (the synthetic pair,
its microphone, its saved state in its home directory), a user's random changes through the
API, and what a user set as the state reports it."""
import json, os, re, select, signal, subprocess, sys, time, urllib.error, urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BINARY = Path(os.environ.get("VIEWFINDER_BINARY", ROOT / ".build/debug/viewfinder"))
CAMERAS = ["rear", "front"]


class Server:
    def __init__(self, home, binary=BINARY, timeout=60):
        self.home = home
        config = Path(home) / "config.json"
        if not config.exists():
            config.write_text(json.dumps({"capture": {"directory": f"{home}/p"}, "recording": {"directory": f"{home}/m"},
                                          "state": {"directory": "state"}, "onvif": {"enabled": False},
                                          "synthetic": {"noise": False}}))
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

    def post(self, path, body):
        status, answer = self.request("POST", path, body)
        assert status == 200, f"POST {path} {json.dumps(body)}: {status} {answer}"
        return answer


def chosen(s):
    """What a user set on one camera, as its state reports it: automatic modes' readings left out."""
    f, e, w, z = s["focus"], s["exposure"], s["whiteBalance"], s["zoom"]
    out = {"preset": s["preset"], "fps": (s["format"] or {}).get("fps"), "zoom": z["factor"], "center": (z["center"]["x"], z["center"]["y"]),
           "focus": f["mode"], "exposure": e["mode"], "bias": e["bias"], "wb": w["mode"],
           "orientation": (s["orientation"]["rotation"], s["orientation"]["mirrored"]),
           "motion": (s["motion"]["enabled"], s["motion"]["threshold"]),
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
    """One random change a user makes, through its call."""
    c = rnd.choice(CAMERAS)
    at = f"/api/cameras/{c}/session"
    kind = rnd.choice(["zoom", "focus", "exposure", "wb", "orientation", "motion", "live", "audio", "format", "run", "main"])
    if kind == "zoom":
        server.post(at + "/zoom", {"factor": round(rnd.uniform(1, 4), 2), "center": {"x": round(rnd.uniform(0.2, 0.8), 2), "y": round(rnd.uniform(0.2, 0.8), 2)}})
    elif kind == "focus":
        server.post(at + "/focus", rnd.choice([{"mode": "locked", "lensPosition": round(rnd.uniform(0, 1), 3)}, {"mode": "continuous"}, {"mode": "auto"}]))
    elif kind == "exposure":
        server.post(at + "/exposure", rnd.choice([{"duration": round(rnd.uniform(0.001, 0.03), 4), "iso": rnd.choice([100, 200, 400, 800])},
                                                   {"mode": "locked"},
                                                   {"mode": "locked", "duration": round(rnd.uniform(0.001, 0.03), 4), "iso": rnd.choice([100, 400])},
                                                   {"mode": "continuous", "bias": rnd.choice([-1, -0.5, 0, 0.5, 1])}]))
    elif kind == "wb":
        server.post(at + "/white-balance", rnd.choice([{"temperature": rnd.randrange(2500, 7500, 100)}, {"mode": "continuous"}]))
    elif kind == "orientation":
        server.post(at + "/orientation", {"rotation": rnd.choice([0, 90, 180, 270]), "mirrored": rnd.random() < 0.5})
    elif kind == "motion":
        server.post(at + "/motion", {"enabled": rnd.random() < 0.5, "threshold": rnd.randrange(1, 20)})
    elif kind == "live":
        server.post(at + "/live", {"bitrate": rnd.choice([None, 500, 1500, 4000]), "sub": {"bitrate": rnd.choice([None, 200, 400])}})
    elif kind == "audio":
        server.post(at + "/audio", {"muted": rnd.random() < 0.3, "gainDb": rnd.choice([-6, 0, 3, 6])})
    elif kind == "format":
        server.post(at + "/prepare", {"preset": rnd.choice(["352x288", "640x480"]), "fps": rnd.choice([15, 30])})
    elif kind == "run":
        server.post(at + ("/stop" if rnd.random() < 0.5 else "/start"), None)
    else:
        server.post("/api/session/switch", {"camera": c})
    return kind
