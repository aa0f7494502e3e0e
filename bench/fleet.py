#!/usr/bin/env python3
"""Issue 29's figures, on the fleet of Tests/fleet/netns_fleet.py (hosts in network namespaces on a
bridge, one broker; release binary): command-to-photo-stored latency for 1 and 8 hosts (a set
asked with no delay: from the POST to each host's answer, its photos stored), against the same
hosts' own `POST /api/cameras/rear/session/capture?store=true` (the reference: one photo over
HTTP); the capture-time spread within a set over 100 sets of 8 hosts × 2 cameras; broker
messages per second with 8 hosts × 2 cameras and state changes flowing (every camera's zoom
set 20 times a second), beside what the state topics would carry without the rate limit.
Needs root. Writes its section of bench/RESULTS.md.
"""
import json, os, re, statistics, subprocess, sys, threading, time, urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "Tests/fleet"))
os.environ.setdefault("VIEWFINDER_BINARY", str(Path(__file__).resolve().parent.parent / ".build/release/viewfinder"))
from bench import machine  # noqa: E402
from procfs import cpu_seconds  # noqa: E402  (bench/procfs.py)
import server  # noqa: E402  (bench/server.py: the one start of the server)
from results import write_section  # noqa: E402
from netns_fleet import Fleet, Watcher  # noqa: E402

SETS = int(os.environ.get("FLEET_SETS", "100"))


def ms(x):
    return f"{x * 1000:.1f} ms"


def started(hosts):
    """A fleet whose every host is online and answers sets, and a watcher of its answers."""
    fleet = Fleet(hosts, keep_alive=10)
    watcher = Watcher(fleet.port, ["viewfinder/fleet/sets/#", "viewfinder/+/status"])
    for i in range(1, hosts + 1):
        watcher.wait(lambda m, i=i: m[1] == f"viewfinder/h{i}/status" and m[2] == "online", 60)
    warm(fleet, watcher, hosts)
    return fleet, watcher


def latency(hosts, rounds=20):
    fleet, watcher = started(hosts)
    try:
        per_host, whole = [], []
        for n in range(rounds):
            name = f"lat{hosts}-{n}"
            t0 = time.time()
            fleet.post(1, "/api/fleet/capture", {"delay": 0, "set": name})
            got = answers(watcher, name, hosts, 10)
            times = [t - t0 for t, _ in got.values()]
            per_host += times
            if len(times) == hosts:
                whole.append(max(times))
            time.sleep(0.2)
        http = []
        for n in range(rounds):
            t0 = time.time()
            fleet.post(1 + n % hosts, "/api/cameras/rear/session/capture?store=true", {})
            http.append(time.time() - t0)
        return per_host, whole, http
    finally:
        watcher.stop()
        fleet.close()


def warm(fleet, watcher, hosts):
    for attempt in range(10):
        name = f"warm{hosts}-{attempt}"
        fleet.post(1, "/api/fleet/capture", {"delay": 0.3, "set": name})
        if len(answers(watcher, name, hosts, 3)) == hosts:
            return


def answers(watcher, name, hosts, timeout):
    got = {}
    deadline = time.time() + timeout
    while time.time() < deadline and len(got) < hosts:
        m = watcher.wait(lambda m: m[1] == f"viewfinder/fleet/sets/{name}" and json.loads(m[2])["node"] not in got,
                         max(0.02, deadline - time.time()))
        if m:
            r = json.loads(m[2])
            got[r["node"]] = (m[0], r)
    return got


def spread_and_traffic(hosts=8):
    fleet, watcher = started(hosts)
    try:
        spreads, complete, offsets = [], 0, []
        for n in range(SETS):
            name = f"spread{n}"
            fleet.post(1 + n % hosts, "/api/fleet/capture", {"delay": 0.3, "set": name})
            got = answers(watcher, name, hosts, 10)
            ts = [p["timestamp"] for _, r in got.values() for p in r["photos"]]
            offsets += [abs(p["offset"]) for _, r in got.values() for p in r["photos"]]
            if len(got) == hosts and len(ts) == 2 * hosts and all(not r["errors"] for _, r in got.values()):
                complete += 1
            if ts:
                spreads.append(max(ts) - min(ts))
        # Traffic: everything on the broker while every camera's zoom changes 20 times a second.
        counter = subprocess.Popen(["mosquitto_sub", "-h", "10.77.0.1", "-p", str(fleet.port), "-t", "#", "-F", "%t"],
                                   stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        lines = []
        threading.Thread(target=lambda: [lines.append(l) for l in counter.stdout], daemon=True).start()
        time.sleep(1)
        start_count, stop = len(lines), time.time() + 10
        calls = [0]

        def steer(i):
            k = 0
            while time.time() < stop:
                for cam in ("rear", "front"):
                    fleet.post(i, f"/api/cameras/{cam}/session/zoom", {"factor": 1 + (k % 7) * 0.5})
                    calls[0] += 1
                k += 1
                time.sleep(0.05)
        threads = [threading.Thread(target=steer, args=(i,)) for i in range(1, hosts + 1)]
        t0 = time.time()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        elapsed = time.time() - t0
        time.sleep(0.5)
        counted = len(lines) - start_count
        counter.kill()
        return spreads, complete, offsets, counted / elapsed, calls[0] / elapsed
    finally:
        watcher.stop()
        fleet.close()


def ring_cost(preset, seconds=10, runs=3):
    """CPU of one host's process (one synthetic camera at `preset`, 30 fps, no viewer) with
    mqtt.fleet on after a first set (every frame encoded into the ring from then on) and off (the
    reference): medians of `runs`. A host with mqtt.fleet on that never takes part costs the reference."""
    import socket, tempfile
    work = Path(tempfile.mkdtemp(prefix="vf-ringcost-"))
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    (work / "m.conf").write_text(f"allow_anonymous true\npersistence false\nuser root\nlistener {port} 127.0.0.1\n")
    broker = subprocess.Popen(["/usr/sbin/mosquitto", "-c", str(work / "m.conf")], stderr=subprocess.DEVNULL)
    out = {}
    try:
        for fleet in (False, True):
            shares = []
            for _ in range(runs):
                (work / "c.json").write_text(json.dumps({
                    "mqtt": {"url": f"mqtt://127.0.0.1:{port}", "node": "cost", "fleet": fleet, "discovery": False},
                    "rtsp": {"enabled": False}, "webrtc": {"enabled": False},
                    "cameras": [{"id": "rear", "source": "synthetic", "position": "rear"}],
                    "session": {"preset": preset, "fps": 30},
                    "capture": {"directory": str(work / "p")}, "recording": {"directory": str(work / "m")}}))
                p, http_port, _ = server.start_server(["--config", str(work / "c.json"), "--port", "0"], work,
                                                      lambda port: time.sleep(2),
                                                      binary=os.environ["VIEWFINDER_BINARY"], log_level="error")
                try:
                    if fleet:  # the rings start with the host's first set
                        req = urllib.request.Request(f"http://127.0.0.1:{http_port}/api/fleet/capture", data=b'{"delay": 0.2}',
                                                     headers={"Content-Type": "application/json"}, method="POST")
                        urllib.request.urlopen(req, timeout=10).read()
                    time.sleep(2)
                    a = cpu_seconds(p.pid)
                    time.sleep(seconds)
                    shares.append((cpu_seconds(p.pid) - a) / seconds * 100)
                finally:
                    server.stop_server(p)
            out[fleet] = statistics.median(shares)
    finally:
        broker.kill()
        broker.wait()
    return out


def main():
    costs = {preset: ring_cost(preset) for preset in ("1280x720", "1920x1080")}
    one = latency(1)
    eight = latency(8)
    spreads, complete, offsets, msgs, calls = spread_and_traffic()
    rows = []
    for label, (per_host, whole, http) in (("1 host", one), ("8 hosts", eight)):
        rows.append(f"| {label} | {ms(statistics.median(per_host))} (max {ms(max(per_host))}) | "
                    f"{ms(statistics.median(whole)) if whole else '-'} | {ms(statistics.median(http))} | "
                    f"{statistics.median(per_host) / statistics.median(http):.2f} |")
    lines = ["## MQTT fleet: synchronized capture across hosts (issue 29)", "",
             f"Machine: {machine()}. `sudo python3 bench/fleet.py` (release build): each host a network namespace on a "
             "bridge (veth pairs), Debian's mosquitto 2.0.11 on the bridge, two synthetic cameras per host at 352x288, 30 fps; "
             "every host on the same machine (one clock).", "",
             "Command to photo stored: a set asked with no delay (`POST /api/fleet/capture {\"delay\": 0}` on host 1), "
             "from the POST to each host's answer on `viewfinder/fleet/sets/<set>` (its photos stored and listed); the "
             "reference is one photo over HTTP on the same hosts (`POST /api/cameras/rear/session/capture?store=true`, "
             "a frame exposed after the request). Medians of 20.", "",
             "| hosts | to each host's answer | to the last host's | HTTP photo (reference) | ratio |", "|---|---|---|---|---|"]
    lines += rows
    lines += ["", f"Capture-time spread within a set (8 hosts × 2 cameras, {SETS} sets asked of each host in turn, "
              f"0.3 s ahead): {complete} of {SETS} sets complete; spread max {max(spreads) * 1e6:.0f} µs, median "
              f"{statistics.median(spreads) * 1e6:.0f} µs (goal ≤ 1 ms for wall-clock-aligned synthetic cameras); each photo "
              f"within {max(offsets) * 1000:.2f} ms of the set's moment (half a frame is {1000 / 60:.2f} ms). Free-running "
              "V4L2 cameras are not in this machine's fleet: theirs is bounded by half a frame interval from the moment "
              "(one interval across a set) plus the hosts' clock offset.", "",
             f"Broker traffic with state changes flowing (8 hosts × 2 cameras, every camera's zoom set "
             f"{calls / 16:.0f} times a second over HTTP): {msgs:.0f} messages a second on the broker, all topics; "
             f"without the state rate limit (`mqtt.stateInterval` 0.25 s) each change would be its own state message: "
             f"{calls:.0f} a second.", "",
             "The ring's cost (from a host's first set on, every frame of every camera encoded at capture quality and "
             "kept 1.5 s; before it, nothing), one synthetic camera at 30 fps with its sensor noise, no viewer; the "
             "host's CPU with `mqtt.fleet` off is the reference (medians of 3 runs of 10 s):", "",
             "| camera | fleet off (reference) | fleet on | the ring |", "|---|---|---|---|"]
    for preset, c in costs.items():
        lines.append(f"| {preset}@30 | {c[False]:.1f} % of a core | {c[True]:.1f} % | +{c[True] - c[False]:.1f} % |")
    lines += [""]
    write_section(lines[0], lines)
    print("\n".join(lines))


if __name__ == "__main__":
    main()
