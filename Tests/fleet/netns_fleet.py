"""A fleet of Viewfinder hosts on one machine: each host a network namespace with its own
address on a bridge (veth pairs), Debian's mosquitto on the bridge in the root namespace, and
a watcher (mosquitto_sub) there. Used by test_fleet.py (make test-fleet) and bench/fleet.py.

Needs root (ip netns, veth, a bridge). Traffic stays on the bridge: 10.77.0.0/24.
"""
import json, os, queue, re, select, shutil, signal, socket, subprocess, tempfile, threading, time, urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BINARY = Path(os.environ.get("VIEWFINDER_BINARY", ROOT / ".build/debug/viewfinder"))
BRIDGE = "vfbr0"
NET = "10.77.0"
BROKER_IP = f"{NET}.1"


def sh(*args, check=True):
    return subprocess.run(args, check=check, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def free_port(host="127.0.0.1"):
    s = socket.socket()
    s.bind((host, 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Watcher:
    """mosquitto_sub on the broker: every message of `topics`, as (time, topic, payload text)."""

    def __init__(self, port, topics):
        args = ["mosquitto_sub", "-h", BROKER_IP, "-p", str(port), "-V", "5", "-F", "%t\t%p"]
        for t in topics:
            args += ["-t", t]
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, bufsize=1)
        self.messages = queue.Queue()
        self.all = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            topic, _, payload = line.rstrip("\n").partition("\t")
            item = (time.time(), topic, payload)
            self.all.append(item)
            self.messages.put(item)

    def wait(self, predicate, timeout):
        """The first message (from now on, and any seen before) for which predicate holds."""
        for item in list(self.all):
            if predicate(item):
                return item
        deadline = time.time() + timeout
        while time.time() < deadline:
            try:
                item = self.messages.get(timeout=max(0.01, deadline - time.time()))
            except queue.Empty:
                break
            if predicate(item):
                return item
        return None

    def last(self, topic):
        for t, tp, p in reversed(self.all):
            if tp == topic:
                return p
        return None

    def stop(self):
        self.proc.kill()
        self.proc.wait()


class Fleet:
    def __init__(self, hosts, keep_alive=5, cameras=("rear", "front"), fps=30, preset="352x288"):
        if os.geteuid() != 0:
            raise SystemExit("the fleet needs root: network namespaces, veth pairs and a bridge")
        self.n = hosts
        self.dir = Path(tempfile.mkdtemp(prefix="vf-fleet-"))
        self.procs = []
        self.broker = None
        self.cleanup_network()
        sh("ip", "link", "add", BRIDGE, "type", "bridge")
        sh("ip", "addr", "add", f"{BROKER_IP}/24", "dev", BRIDGE)
        sh("ip", "link", "set", BRIDGE, "up")
        self.port = free_port()
        conf = self.dir / "mosquitto.conf"
        conf.write_text(f"allow_anonymous true\npersistence false\nuser root\nlog_dest stderr\nlog_type error\n"
                        f"listener {self.port} {BROKER_IP}\n")
        self.broker = subprocess.Popen(["/usr/sbin/mosquitto", "-c", str(conf)], stderr=subprocess.DEVNULL)
        self._await_port(BROKER_IP, self.port, 10)
        for i in range(1, hosts + 1):
            ns, veth = f"vf-h{i}", f"vfh{i}"
            sh("ip", "netns", "add", ns)
            sh("ip", "link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", ns)
            sh("ip", "link", "set", veth, "master", BRIDGE)
            sh("ip", "link", "set", veth, "up")
            sh("ip", "netns", "exec", ns, "ip", "addr", "add", f"{self.ip(i)}/24", "dev", "eth0")
            sh("ip", "netns", "exec", ns, "ip", "link", "set", "eth0", "up")
            sh("ip", "netns", "exec", ns, "ip", "link", "set", "lo", "up")
            cams = [{"id": c, "source": "synthetic", "position": "rear" if c == "rear" else "front", "autostart": True}
                    for c in cameras]
            d = self.dir / f"h{i}"
            d.mkdir()
            cfg = {"server": {"host": self.ip(i), "port": 8080}, "auth": "none", "cameras": cams,
                   "session": {"preset": preset, "fps": fps}, "synthetic": {"noise": False},
                   "rtsp": {"enabled": False}, "webrtc": {"enabled": False},
                   "capture": {"directory": str(d / "photos")}, "recording": {"directory": str(d / "movies")},
                   "mqtt": {"url": f"mqtt://{BROKER_IP}:{self.port}", "node": f"h{i}", "keepAlive": keep_alive,
                            "discovery": False}}
            (d / "config.json").write_text(json.dumps(cfg))
            log = open(d / "log.txt", "w")
            self.procs.append(subprocess.Popen(["ip", "netns", "exec", ns, str(BINARY), "--config", str(d / "config.json"),
                                                "--log-level", "warning"], stdout=log, stderr=subprocess.STDOUT))
        for i in range(1, hosts + 1):
            self._await_port(self.ip(i), 8080, 60)

    @staticmethod
    def ip(i):
        return f"{NET}.{10 + i}"

    @staticmethod
    def _await_port(host, port, timeout):
        deadline = time.time() + timeout
        while time.time() < deadline:
            try:
                socket.create_connection((host, port), timeout=0.5).close()
                return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError(f"nothing listens on {host}:{port} after {timeout} s")

    def post(self, i, path, body, timeout=10):
        req = urllib.request.Request(f"http://{self.ip(i)}:8080{path}", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"}, method="POST")
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, json.loads(r.read() or b"null")

    def get(self, i, path, timeout=10):
        with urllib.request.urlopen(f"http://{self.ip(i)}:8080{path}", timeout=timeout) as r:
            return json.loads(r.read())

    def cut(self, i):
        sh("ip", "link", "set", f"vfh{i}", "down")

    def mend(self, i):
        sh("ip", "link", "set", f"vfh{i}", "up")

    def pids(self):
        return [p.pid for p in self.procs]

    @staticmethod
    def cleanup_network():
        for line in sh("ip", "netns", "list", check=False).stdout.splitlines():
            name = line.split()[0] if line.split() else ""
            if re.fullmatch(r"vf-h\d+", name):
                sh("ip", "netns", "del", name, check=False)
        sh("ip", "link", "del", BRIDGE, check=False)

    def close(self):
        for p in self.procs:
            p.send_signal(signal.SIGINT)
        for p in self.procs:
            try:
                p.wait(timeout=15)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        if self.broker:
            self.broker.kill()
            self.broker.wait()
        self.cleanup_network()
        shutil.rmtree(self.dir, ignore_errors=True)
