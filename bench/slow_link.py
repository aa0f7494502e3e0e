#!/usr/bin/python3
"""A WebRTC viewer behind a 1 Mbit/s link, with the adaptive streams and without (issue 38).

`make bench` (or `sudo /usr/bin/python3 bench/slow_link.py`): the two phases of
Tests/live/test_slow_link.py — headless Chromium in a network namespace behind `tc tbf` at
1 Mbit/s, a synthetic 1280x720 camera at 30 fps — run BENCH_RUNS times (3) each against the
release build. The reference, measured in the same run on the same link and camera, is the same
viewer with adaptation off (`webrtc.adaptive` false: the main stream alone). `make test` checks
the adaptive phase's goals; this writes what both phases deliver, side by side, into
bench/RESULTS.md.
"""
import os
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
os.environ.setdefault("VIEWFINDER_BINARY", str(ROOT / ".build/release/viewfinder"))
sys.path.insert(0, str(ROOT / "Tests/live"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import server  # noqa: E402  (bench/server.py: machine, timing, RESULTS.md)
import test_slow_link as link  # noqa: E402

RUNS = int(os.environ.get("BENCH_RUNS", "3"))


def bench():
    adaptive, fixed = [], []
    for run in range(RUNS):
        failures, figures = link.adaptive_phase()
        if figures.get("fps") is not None:
            adaptive.append(figures)
        for f in failures:
            print(f"run {run + 1}, adaptive: {f}", file=sys.stderr)
        off = link.fixed_phase()
        if off is not None:
            fixed.append(off)
    return adaptive, fixed


def med(rows, key):
    values = [r[key] for r in rows if r.get(key) is not None]
    return statistics.median(values) if values else None


def ms(v):
    return "–" if v is None or v == float("inf") else f"{v:.0f} ms"


def markdown(adaptive, fixed, started, load, took):
    lines = ["## A WebRTC viewer behind a 1 Mbit/s link: adaptive streams against the main stream alone (issue 38)", "",
             server.written_by("slow_link.py", started, load, took), "",
             "Headless Chromium in a network namespace, the server's side of its veth shaped by `tc tbf` at 1 Mbit/s "
             "(300 ms queue); one synthetic 1280x720 camera at 30 fps with sensor noise. Each figure is the median of "
             f"{RUNS} runs over a 20 s window (adaptive) or 15 s (adaptation off), glass to glass from the frame's "
             "timecode to its presentation in the page. The reference is the same viewer on the same link with "
             "`webrtc.adaptive` false, measured in the same run.", "",
             "| viewer | runs | frames/s | glass-to-glass p50 | p95 |", "|---|---|---|---|---|"]
    for label, rows in (("adaptive (the default)", adaptive), ("adaptation off (reference)", fixed)):
        fps = med(rows, "fps")
        lines.append(f"| {label} | {len(rows)} | {'–' if fps is None else f'{fps:.1f}'} | {ms(med(rows, 'p50'))} | {ms(med(rows, 'p95'))} |")
    a, f = med(adaptive, "fps"), med(fixed, "fps")
    back = med(adaptive, "back")
    ratio = f"{a / f:.1f}× the reference's frames" if a is not None and f else "the reference got no frame through"
    lines += ["", f"Adaptive: {ratio}; back on the main stream {'never within 30 s' if back is None else f'{back:.1f} s'} "
              "after the shaping was removed (median). Goals (checked by `make test`): ≥ 10 frames/s and p50 ≤ 400 ms "
              "on the shaped link, back on the main stream within 30 s."]
    return lines


def main():
    if not Path(os.environ["VIEWFINDER_BINARY"]).exists():
        sys.exit("make release first (bench/slow_link.py runs .build/release/viewfinder)")
    (adaptive, fixed), started, load, took = server.timed(lambda: link.in_namespace(bench))
    server.publish("slow_link", markdown(adaptive, fixed, started, load, took), took)


if __name__ == "__main__":
    sys.exit(main())
