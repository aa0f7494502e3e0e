#!/usr/bin/python3
"""A WebRTC viewer beyond the camera's network, through real NATs: what each path costs (issue 58, item 8).

`make bench` (or `sudo /usr/bin/python3 bench/nat.py`): Tests/live/test_nat.py's rig — network
namespaces, routers doing real NAT with iptables, Debian's coturn on the "internet" — with the
release build, each topology BENCH_RUNS times (3). Per topology: the first frame's time (aiortc from
its offer; the page in Chromium from its navigation), frames decoded over SECONDS_DECODED (10), the
round trip the server's state reports for the viewer (RTCP), the server's CPU (and coturn's, for a
relayed viewer) a second while the viewer plays. Then, with the page in Chromium on the direct and
the relayed path: the page of this tree, which sends its offer at once and trickles its
candidates (PATCH), against the page before trickle ICE (its offer waited for its candidates: the
tree before d3e9fce, its Public/ served by the same binary) — the reference, measured in the same
run; and the time the page takes to play again by WebRTC after the viewer's address changes.
"""
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
os.environ.setdefault("VIEWFINDER_BINARY", str(ROOT / ".build/release/viewfinder"))
os.environ.setdefault("SECONDS_DECODED", "10")
sys.path.insert(0, str(ROOT / "Tests/live"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import server  # noqa: E402  (bench/server.py: machine, timing, RESULTS.md)
import test_nat as rig  # noqa: E402

RUNS = int(os.environ.get("BENCH_RUNS", "3"))
# The page before trickle ICE: the parent of the commit that brought it.
BEFORE_TRICKLE = "d3e9fce^"
# The paths on which the page of this tree and the page before trickle ICE are timed.
PAGED = {"forwarded": "direct (the camera's ports forwarded)", "symmetric": "relayed (symmetric NATs, TURN)"}
# (label, case, whether the viewer is the page in Chromium)
ROWS = [("same LAN (host to host)", "lan", False), ("viewer behind one NAT", "one-nat", False),
        ("both behind NAT, the camera's ports forwarded", "forwarded", False),
        ("both behind symmetric NAT: TURN over UDP", "symmetric", False),
        ("as above, the viewer's candidates trickled (PATCH)", "symmetric-trickled", False),
        ("UDP blocked at the viewer: TURN over TCP", "udp-blocked", False),
        ("UDP blocked at the viewer: TURN over TLS (both sides)", "udp-blocked-tls", False),
        ("UDP blocked at the viewer, no TURN: ICE-TCP to the camera (the page)", "ice-tcp", True),
        ("as forwarded, the camera's STUN and TURN servers silent (libnice gives them up after 2 s)", "servers-silent", False)]


def old_page(into):
    """This repository's Public/ as it was before trickle ICE, into `into`."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", BEFORE_TRICKLE, "Public"], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", into], input=archive, check=True)
    return Path(into) / "Public"


def once(turn, case, page=False, public=rig.ROOT / "Public"):
    got, _ = rig.play(case, turn, page, public)
    problems = rig.check(case, got) if not page or case in rig.PAGE_CASES else \
        ([] if got.get("first_frame") is not None and got.get("transport") == "WebRTC" else [f"{case}: the page did not play by WebRTC: {got}"])
    for p in problems:
        print(f"{case}: {p[:400]}", file=sys.stderr)
    return got


def bench():
    rows = {case: [] for _, case, _ in ROWS}
    trickled, gathered, moved = {c: [] for c in PAGED}, {c: [] for c in PAGED}, []
    with tempfile.TemporaryDirectory(prefix="vf-oldpage-") as tmp, rig.rig() as turn:
        before = old_page(tmp)
        for run in range(RUNS):
            for _, case, page in ROWS:
                rows[case].append(once(turn, case, page))
            for case in PAGED:
                trickled[case].append(once(turn, case, page=True))
                gathered[case].append(once(turn, case, page=True, public=before))
            moved.append(once(turn, "moved"))
            print(f"nat.py: run {run + 1} of {RUNS} done", file=sys.stderr, flush=True)
    return rows, trickled, gathered, moved


def med(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def fmt(v, unit="s", digits=2):
    return "–" if v is None else f"{v:.{digits}f} {unit}".rstrip()


def pair(rows):
    """The selected pair as the viewer's agent had it in the last run that had one (the page's:
    the server's view of it)."""
    for got in reversed(rows):
        if got.get("pair"):
            return f"{got['pair']['local'].split()[0]} → {got['pair']['remote'].split()[0]} ({got['pair'].get('via', '')})"
        if got.get("server_path"):
            p = got["server_path"]
            return f"{p.get('remote')} → {p.get('local')}, {p.get('protocol')} (the server's view)"
    return "–"


def markdown(rows, trickled, gathered, moved, started, load, took):
    seconds = rig.SECONDS
    lines = ["## A WebRTC viewer through NATs: first frame, round trip and cost per path (issue 58)", "",
             server.written_by("nat.py", started, load, took), "",
             "Tests/live/test_nat.py's rig: network namespaces joined by routers doing real NAT (iptables MASQUERADE; "
             "symmetric with `--random-fully`), Debian's coturn (use-auth-secret) on the \"internet\"; the release build "
             "with one synthetic 640x480 camera on the camera's LAN; the viewer aiortc decoding the H.264 (first frame "
             "from its offer's POST) or, where marked, the page in headless Chromium (first frame from its navigation). "
             f"Each figure is the median of {RUNS} runs; frames are those decoded over {seconds:.0f} s; the round trip is "
             "what the server's state reports for the viewer (RTCP receiver reports); CPU is seconds a second while the "
             "viewer played. The rig's links add no delay of their own: a round trip here is the path's own cost "
             "(hops, the relay's forwarding), not a real network's.", "",
             "| topology | connected | first frame p50 | frames | pair (viewer → camera) | round trip p50 | server CPU | coturn CPU |",
             "|---|---|---|---|---|---|---|---|"]
    rtt = {}
    for label, case, _ in ROWS:
        got = rows[case]
        ok = sum(1 for g in got if g.get("first_frame") is not None)
        rtt[case] = med([med(g.get("round_trips_ms") or []) for g in got])
        turn_cpu = med([g.get("turn_cpu_per_s") for g in got]) if case in rig.TURNED else None
        lines.append(f"| {label} | {ok} of {len(got)} | {fmt(med([g.get('first_frame') for g in got]))} | "
                     f"{fmt(med([g.get('frames') for g in got]), '', 0)} | {pair(got)} | {fmt(rtt[case], 'ms', 1)} | "
                     f"{fmt(med([g.get('server_cpu_per_s') for g in got]), '', 3)} | {fmt(turn_cpu, '', 3) if turn_cpu is not None else '–'} |")
    added = None if rtt.get("symmetric") is None or rtt.get("forwarded") is None else rtt["symmetric"] - rtt["forwarded"]
    cpu = lambda case: med([x.get("server_cpu_per_s") for x in rows[case]])
    back = med([x.get("recovered") for x in moved])
    lines += ["", "The page in Chromium, first frame from its navigation, against the page before trickle ICE served by the "
              f"same binary (`git archive {BEFORE_TRICKLE} Public`: its offer waited for its candidates — gathering's end, or "
              "40 ms after the first) on the same path, the reference:", "",
              "| path | this tree's page (offer at once, candidates trickled): played | first frame p50 | "
              "the page before trickle ICE: played | first frame p50 | ratio |", "|---|---|---|---|---|---|"]
    for case, label in PAGED.items():
        t, g = med([x.get("first_frame") for x in trickled[case]]), med([x.get("first_frame") for x in gathered[case]])
        played = lambda rows: f"{sum(1 for x in rows if x.get('first_frame') is not None and x.get('transport') == 'WebRTC')} of {len(rows)}"
        lines.append(f"| {label} | {played(trickled[case])} | {fmt(t)} | {played(gathered[case])} | {fmt(g)} | "
                     f"{f'{t / g:.2f}×' if t is not None and g else '–'} |")
    lines += ["", "The rig's links have no delay and its TURN server answers within a millisecond: the page before trickle "
              "ICE had every candidate within its 40 ms, so trickling gains no time here. What it gains is a candidate "
              "found later — a relay from a TURN server farther away than 40 ms, which the page before lost.",
              "", f"The relayed path (TURN over UDP) adds {fmt(added, 'ms', 1)} of round trip to the direct "
              f"one; the server's CPU for a relayed viewer {fmt(cpu('symmetric'), '', 3)} s/s against {fmt(cpu('forwarded'), '', 3)} "
              f"direct (the relay is coturn's work: its sends are to one address either way). After the viewer's address "
              f"changes (its namespace's address moved, the page playing): back by WebRTC in {fmt(back)} (median; "
              f"each run: {', '.join(fmt(x.get('recovered')) for x in moved)}), the page having offered again "
              f"{', '.join(str(x.get('reoffered')) for x in moved)} times.",
              "", "Goals (issue 58): first frame p50 ≤ 1.0 s direct with trickle, ≤ 1.5 s relayed, ≤ 2.5 s with UDP "
              "blocked; back within 3 s after an address change."]
    return lines


def main():
    if os.geteuid() != 0:
        sys.exit("bench/nat.py: needs root (network namespaces, iptables)")
    if not Path(os.environ["VIEWFINDER_BINARY"]).exists():
        sys.exit("make release first (bench/nat.py runs .build/release/viewfinder)")
    (rows, trickled, gathered, moved), started, load, took = server.timed(bench)
    server.publish("nat", markdown(rows, trickled, gathered, moved, started, load, took), took)


if __name__ == "__main__":
    sys.exit(main())
