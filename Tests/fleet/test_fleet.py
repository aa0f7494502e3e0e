#!/usr/bin/env python3
"""Eight Viewfinder hosts, each in a network namespace on a bridge, one broker (issue 29,
item 6): 20 synchronized sets, each asked of a different host, every set complete (every
running camera of every connected host answers with its photo) and its capture times within
1 ms (synthetic cameras expose on the wall clock's frame boundaries; one machine's clock).
Midway one host's link is cut: its status goes `offline` (the broker's will, within 1.5 ×
keepAlive), the other hosts' sets stay complete, and when the link returns it rejoins
(`online`) and its sets are complete again. Prints the figures.

Usage: sudo test_fleet.py   (make test-fleet; VIEWFINDER_BINARY to pick the binary)
"""
import json, sys, time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from netns_fleet import Fleet, Watcher  # noqa: E402

HOSTS, SETS, KEEP_ALIVE, CAMERAS = 8, 20, 5, 2
failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
        print("FAIL:", what, flush=True)


def take(fleet, watcher, n, asker, expected):
    """Set n, asked of host `asker`; checks that the `expected` hosts answered complete."""
    name = f"set{n:02d}"
    status, body = fleet.post(asker, "/api/fleet/capture", {"delay": 0.5, "set": name})
    check(status == 202 and body["set"] == name, f"{name}: 202 from host {asker}")
    replies = {}
    deadline = time.time() + 10
    while time.time() < deadline and len(replies) < len(expected):
        item = watcher.wait(lambda m: m[1] == f"viewfinder/fleet/sets/{name}" and json.loads(m[2])["node"] not in replies,
                            max(0.05, deadline - time.time()))
        if item:
            r = json.loads(item[2])
            replies[r["node"]] = r
    nodes = {f"h{i}" for i in expected}
    check(set(replies) >= nodes, f"{name}: answers from {sorted(replies)}, expected {sorted(nodes)}")
    times = []
    for node, r in replies.items():
        check(len(r["photos"]) == CAMERAS and not r["errors"], f"{name} {node}: {len(r['photos'])} photos, errors {r['errors']}")
        times += [p["timestamp"] for p in r["photos"]]
    spread = (max(times) - min(times)) if times else None
    check(spread is not None and spread <= 0.001, f"{name}: capture times spread {spread}")
    return spread, len(replies)


def main():
    fleet = Fleet(HOSTS, keep_alive=KEEP_ALIVE)
    watcher = Watcher(fleet.port, ["viewfinder/+/status", "viewfinder/fleet/sets/#"])
    try:
        for i in range(1, HOSTS + 1):
            check(watcher.wait(lambda m, i=i: m[1] == f"viewfinder/h{i}/status" and m[2] == "online", 60) is not None,
                  f"h{i} online")
        # Each host's fleet subscription: in place once a first set comes back from all.
        for attempt in range(10):
            fleet.post(1, "/api/fleet/capture", {"delay": 0.3, "set": f"warm{attempt}"})
            got = set()
            deadline = time.time() + 3
            while time.time() < deadline and len(got) < HOSTS:
                m = watcher.wait(lambda m: m[1] == f"viewfinder/fleet/sets/warm{attempt}" and json.loads(m[2])["node"] not in got, 0.5)
                if m:
                    got.add(json.loads(m[2])["node"])
            if len(got) == HOSTS:
                break
        spreads = []
        everyone = list(range(1, HOSTS + 1))
        cut_host = 3
        for n in range(1, SETS + 1):
            asker = (n - 1) % HOSTS + 1
            if n == 8:
                fleet.cut(cut_host)
                t0 = time.time()
                off = watcher.wait(lambda m: m[1] == f"viewfinder/h{cut_host}/status" and m[2] == "offline" and m[0] >= t0,
                                   KEEP_ALIVE * 1.5 + 10)
                check(off is not None, f"h{cut_host} offline after its link was cut")
                if off:
                    print(f"h{cut_host} offline {off[0] - t0:.1f} s after the cut (keepAlive {KEEP_ALIVE} s)", flush=True)
            if n == 14:
                fleet.mend(cut_host)
                t0 = time.time()
                on = watcher.wait(lambda m: m[1] == f"viewfinder/h{cut_host}/status" and m[2] == "online" and m[0] >= t0, 30)
                check(on is not None, f"h{cut_host} back online after its link returned")
                if on:
                    print(f"h{cut_host} online again {on[0] - t0:.1f} s after the link returned", flush=True)
            down = 8 <= n < 14
            expected = [i for i in everyone if not (down and i == cut_host)]
            if down and asker == cut_host:
                asker = cut_host % HOSTS + 1
            spread, answered = take(fleet, watcher, n, asker, expected)
            spreads.append(spread)
            print(f"set{n:02d}: asked of h{asker}, {answered} hosts answered, spread "
                  f"{'-' if spread is None else f'{spread * 1e6:.0f} µs'}", flush=True)
        got = [s for s in spreads if s is not None]
        print(f"{len(got)} sets, capture-time spread max {max(got) * 1e6:.0f} µs" if got else "no sets")
    finally:
        watcher.stop()
        fleet.close()
    if failures:
        print(f"{len(failures)} failure(s)")
        sys.exit(1)
    print("fleet: every set complete")


if __name__ == "__main__":
    main()
