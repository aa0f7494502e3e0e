#!/usr/bin/env python3
"""The broker goes away and comes back CYCLES times (default 100; `make soak-mqtt` runs 1,000)
under a running Viewfinder (issue 29's goals): after each return the host is `online` again
within 5 s, and across the cycles its open descriptors and threads stay where they were and its
resident memory does not grow past a bound. The broker is killed (SIGKILL, as a crash or a pulled
cable on its side) and started again on the same port. Prints the figures.

Usage: test_restarts.py [BINARY]   (CYCLES=N in the environment)
"""
import os, re, select, shutil, socket, subprocess, sys, tempfile, time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BINARY = Path(sys.argv[1] if len(sys.argv) > 1 else os.environ.get("VIEWFINDER_BINARY", ROOT / ".build/debug/viewfinder"))
CYCLES = int(os.environ.get("CYCLES", "100"))
RSS_BOUND_KB = 16 * 1024


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def figures(pid):
    fds = len(os.listdir(f"/proc/{pid}/fd"))
    threads = len(os.listdir(f"/proc/{pid}/task"))
    rss = int(re.search(r"VmRSS:\s+(\d+)", Path(f"/proc/{pid}/status").read_text()).group(1))
    return fds, threads, rss


def main():
    work = Path(tempfile.mkdtemp(prefix="vf-restarts-"))
    port = free_port()
    conf = work / "mosquitto.conf"
    conf.write_text(f"allow_anonymous true\npersistence false\nuser root\nlistener {port} 127.0.0.1\n")

    def broker():
        p = subprocess.Popen(["/usr/sbin/mosquitto", "-c", str(conf)], stderr=subprocess.DEVNULL)
        deadline = time.time() + 10
        while time.time() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), 0.2).close()
                return p
            except OSError:
                time.sleep(0.01)
        raise RuntimeError("mosquitto did not start")

    b = broker()
    (work / "config.json").write_text('{"mqtt": {"url": "mqtt://127.0.0.1:%d", "node": "soak"}, "rtsp": {"enabled": false},'
                                      ' "capture": {"directory": "%s/p"}, "recording": {"directory": "%s/m"}}' % (port, work, work))
    vf = subprocess.Popen([str(BINARY), "--config", str(work / "config.json"), "--port", "0", "--cameras", "synthetic",
                           "--preset", "352x288", "--log-level", "error"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    ready, _, _ = select.select([vf.stdout], [], [], 60)
    assert ready, "viewfinder did not start"
    vf.stdout.readline()
    watcher = None
    failures = []
    try:
        def online(timeout):
            """Waits for `online` on the status topic from a fresh subscriber (retained: the host republished it)."""
            deadline = time.time() + timeout
            while time.time() < deadline:
                r = subprocess.run(["mosquitto_sub", "-h", "127.0.0.1", "-p", str(port), "-t", "viewfinder/soak/status",
                                    "-C", "1", "-W", "1"], capture_output=True, text=True)
                if r.stdout.strip() == "online":
                    return True
            return False

        if not online(30):
            raise SystemExit("the host never came online")
        warm = None
        delays = []
        for n in range(CYCLES):
            b.kill()
            b.wait()
            b = broker()
            t0 = time.time()
            if not online(5 + 2):
                failures.append(f"cycle {n}: not online 7 s after the broker returned")
            delays.append(time.time() - t0)
            if n == min(10, CYCLES - 1):
                warm = figures(vf.pid)  # after the first cycles: buffers and threads at their working size
        end = figures(vf.pid)
        delays.sort()
        print(f"{CYCLES} broker restarts: online again after median {delays[len(delays) // 2]:.2f} s, max {delays[-1]:.2f} s "
              f"(a fresh subscriber's view; within 5 s: {sum(d <= 5 for d in delays)} of {CYCLES})")
        print(f"descriptors {warm[0]} → {end[0]}, threads {warm[1]} → {end[1]}, RSS {warm[2]} → {end[2]} kB")
        if max(delays) > 5:
            failures.append(f"reconnect took {max(delays):.2f} s")
        if end[0] > warm[0] + 2:
            failures.append(f"descriptors grew {warm[0]} → {end[0]}")
        if end[1] > warm[1] + 2:
            failures.append(f"threads grew {warm[1]} → {end[1]}")
        if end[2] > warm[2] + RSS_BOUND_KB:
            failures.append(f"RSS grew {warm[2]} → {end[2]} kB")
    finally:
        vf.terminate()
        vf.wait(timeout=20)
        b.kill()
        b.wait()
        shutil.rmtree(work, ignore_errors=True)
    for f in failures:
        print("FAIL:", f)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
