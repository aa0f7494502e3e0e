"""What Tests/onvif's scripts share: where things are, the venv's pinned clients, the
PASS/FAIL tally, and a server started on a config with ONVIF users, its ports read from its
output."""
import contextlib
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SERVER = os.environ.get("VIEWFINDER_BINARY", str(ROOT / ".build/debug/viewfinder"))
VENV = ROOT / ".build/onvif-venv"
# Home Assistant 2026.2's pins: its ONVIF client (which bundles ONVIF's WSDLs) and its discovery.
PACKAGES = ["onvif-zeep-async==4.0.4", "WSDiscovery==2.1.2"]
PASSWORD = "onvif pass 1"
passed, failed = 0, []


def check(name, ok, detail=""):
    global passed
    if ok:
        passed += 1
        print("PASS: " + name, flush=True)
    else:
        failed.append(name)
        print("FAIL: %s -- %s" % (name, detail), flush=True)


def summary():
    """Prints the tally; the exit status."""
    print("%d passed, %d failed" % (passed, len(failed)))
    return 1 if failed else 0


# A second client, in a venv of its own (its package is also named `onvif`): onvif-python,
# which speaks Media2 and signs in with HTTP Digest as well as UsernameToken.
VENV2 = ROOT / ".build/onvif2-venv"
PACKAGES2 = ["onvif-python==0.4.7"]


def make_venv(venv=VENV, packages=PACKAGES):
    subprocess.run([str(ROOT / "scripts/py-venv"), str(venv), "--"] + packages, check=True)


def reexec_in(venv, packages, script):
    """Runs `script` again under the venv's Python (made first), once."""
    make_venv(venv, packages)
    if os.environ.get("ONVIF_CLIENT_VENV") != str(venv):
        os.environ["ONVIF_CLIENT_VENV"] = str(venv)
        os.execv(str(venv / "bin/python3"), [str(venv / "bin/python3"), script] + sys.argv[1:])


@contextlib.contextmanager
def served(name, config, users):
    """A server (as `start` makes it) in a fresh temporary directory for the `with` block:
    yields (tmp, process, HTTP port, RTSP port); stopped and its directory removed after."""
    tmp = Path(tempfile.mkdtemp(prefix="vf-%s-" % name))
    p, http, rtsp = start(tmp, config, users)
    try:
        yield tmp, p, http, rtsp
    finally:
        p.terminate()
        try:
            p.wait(20)
        except subprocess.TimeoutExpired:
            p.kill()
        subprocess.run(["rm", "-rf", str(tmp)])


def start(tmp, config, users, prefix=()):
    """Writes `config` (the capture and recording directories under `tmp`), adds `users`
    ((name, role, onvif?) each, password PASSWORD), starts the server (after `prefix`, e.g.
    `ip netns exec NS`): (process, HTTP port, RTSP port or None)."""
    cfg = tmp / "config.json"
    cfg.write_text(json.dumps({**config, "capture": {"directory": str(tmp / "p")}, "recording": {"directory": str(tmp / "m")}}))
    for name, role, onvif in users:
        subprocess.run([SERVER, "user", "add", name, "--role", role, "--config", str(cfg)] + (["--onvif"] if onvif else []),
                       input=PASSWORD + "\n", text=True, check=True, capture_output=True)
    return launch(tmp, config.get("rtsp", {}).get("enabled", True), prefix)


def launch(tmp, rtsp_wanted=True, prefix=()):
    """Starts the server on tmp/config.json as it is (a restart keeps its users and state):
    (process, HTTP port, RTSP port or None)."""
    cfg = tmp / "config.json"
    log = open(tmp / "server.log", "a")
    p = subprocess.Popen(list(prefix) + [SERVER, "--config", str(cfg)], stdout=subprocess.PIPE, stderr=log, text=True, cwd=tmp)
    found = {}

    def read():
        for line in p.stdout:
            m = re.search(r"listening on http://[^:]+:(\d+)/", line)
            if m:
                found["http"] = int(m.group(1))
            m = re.search(r"rtsp://[^:]+:(\d+)/", line)
            if m:
                found["rtsp"] = int(m.group(1))
            if "http" in found and ("rtsp" in found or not rtsp_wanted):
                break
    t = threading.Thread(target=read, daemon=True)
    t.start()
    t.join(120)
    if "http" not in found:
        p.kill()
        sys.exit("the server did not start: " + (tmp / "server.log").read_text()[-2000:])
    return p, found["http"], found.get("rtsp")
