"""What the VM tests (`make test-alsa`, `test-uvc`, `test-libcamera`) share: PASS/FAIL per
check and the `N passed, N failed` line, waits polled against a deadline, the server started
with a configuration of their own on port 0 (its ports read from what it prints), and the
size of a JPEG read from its frame header. Standard library only, as the VM has no venv."""
import json
import os
import re
import signal
import subprocess
import threading
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SERVER = os.environ.get("VIEWFINDER_BINARY", os.path.join(REPO, ".build", "debug", "viewfinder"))
failed = []  # the names of the checks that failed, in order
_passed = [0]


def check(name, ok, detail=""):
    """PASS or FAIL (with `detail`, cut to 3000 characters) for one check; answers `ok`."""
    if ok:
        _passed[0] += 1
        print("PASS: %s" % name, flush=True)
    else:
        failed.append(name)
        print("FAIL: %s%s" % (name, (" -- " + str(detail)[:3000]) if detail else ""), flush=True)
    return ok


def summary():
    """Prints `N passed, N failed`; answers the exit status (1 when anything failed)."""
    print("%d passed, %d failed" % (_passed[0], len(failed)), flush=True)
    return 1 if failed else 0


def poll(fn, timeout, interval=0.1):
    """fn() until it answers something truthy or `timeout` s pass; its last answer."""
    deadline = time.monotonic() + timeout
    value = fn()
    while not value and time.monotonic() < deadline:
        time.sleep(interval)
        value = fn()
    return value


def start_server(tmp, config, timeout=120):
    """The server on `config` (written to tmp/config.json, port 0, the repository's page),
    stderr in tmp/server.log. Answers (process, {"http": port, "rtsp": port}); a port the
    server never printed within `timeout` s is missing from the map."""
    cfg = os.path.join(tmp, "config.json")
    server = {"host": "127.0.0.1", "port": 0, "publicDirectory": os.path.join(REPO, "Public")}
    with open(cfg, "w") as f:
        json.dump(dict(config, server=dict(server, **config.get("server", {}))), f)
    err = open(os.path.join(tmp, "server.log"), "w")
    p = subprocess.Popen([SERVER, "--config", cfg, "--port", "0"], stdout=subprocess.PIPE, stderr=err,
                         text=True, cwd=tmp)
    rtsp = config.get("rtsp", {}).get("enabled", True)
    ports = {}

    def read_ports():
        for line in p.stdout:
            m = re.search(r"listening on http://[^:]+:(\d+)/", line)
            if m:
                ports["http"] = int(m.group(1))
            m = re.search(r"RTSP on rtsp://[^:]+:(\d+)/", line)
            if m:
                ports["rtsp"] = int(m.group(1))
            if "http" in ports and ("rtsp" in ports or not rtsp):
                break
    t = threading.Thread(target=read_ports, daemon=True)
    t.start()
    t.join(timeout)
    return p, ports


def server_log(tmp, tail=2000):
    with open(os.path.join(tmp, "server.log")) as f:
        return f.read()[-tail:]


def stop_server(p):
    if p.poll() is None:
        p.send_signal(signal.SIGTERM)
        try:
            p.wait(15)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(5)


def jpeg_size(data):
    """(width, height) from a JPEG's first SOF marker, None when it is not a JPEG."""
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
