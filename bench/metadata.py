#!/usr/bin/env python3
"""The metadata output (QR detection with zbar): what detection costs the server, whether the
preview keeps its rate while it runs, and that the code in view is found.

Each run starts viewfinder twice (`--cameras synthetic --preset 1280x720 --fps 30`, a
temporary config whose `metadata.rate` is 10, the default, and then 30) with a QR code in
the synthetic camera's scene (`POST /api/cameras/rear/scene`, "hello" at the centre, 0.4 of
the frame's height), and measures twice on each process, each time with one MJPEG viewer
on `/stream` (bench/out/viewers, the lightest reader we have): first with detection off,
then with it on (`POST /api/session/metadata {"types": ["qr"]}`, the window starting once
the code is reported). CPU is the server's utime+stime from /proc/PID/stat over SECONDS
after the viewer's 1 s warm-up; the difference between the two windows is detection's
cost, in % of one core and in ms of CPU per scan (scans counted from
`viewfinder_metadata_scans_total` in `/metrics` over the same window). A scan is the
capture thread's copy of the frame, the worker's luma extraction (every pixel at 1280
wide) and zbar's `zbar_scan_image`. The preview's rate is what the viewer counted, and the
lowest `stream.fps` sampled once a second in the window; `metadata.objects` is sampled at
the same times: the code is found when it holds the "hello" QR code. Runs cycle the two
rates so that drift on the machine falls on both alike; figures are the median of RUNS.

Reference, in the same run on the same input: zbar's own command-line tool. One frame of
the same scene is got once from the server (`GET /snapshot` with `stream.quality` 100, the
code in view, exposure settled) and converted to greyscale PGM (`ffmpeg -i snap.jpg
-pix_fmt gray snap.pgm`, 1280x720: the luma the worker scans, up to JPEG rounding). Then
`zbarimg -q --raw --nodbus -Sdisable -Sqrcode.enable FILE…` with the file given IMAGES
times, and once with it given once: its CPU time (RUSAGE_CHILDREN) for IMAGES images minus
that for 1 image (the process start), ÷ (IMAGES − 1), is zbarimg's ms per image. Its output
must be "hello" IMAGES times. (`--nodbus`: Debian's zbarimg otherwise tries to send each
result to the D-Bus system bus, a connection per image that has nothing to do with
scanning.) Ratio: Viewfinder's ms per scan ÷ zbarimg's ms per image. zbarimg reads each
image with ImageMagick (a fresh image, converted to zbar's Y800, with ImageMagick's OpenMP
threads) and Viewfinder does not, so when `perf` works here the section also gives the
share of zbarimg's CPU spent in libzbar (one `perf record` of the IMAGES run), and that
share of its ms per image: zbar's own work, which is what a Viewfinder scan should be close to.

`bench/run` (make bench) calls it after recording.py; `python3 bench/metadata.py` runs only
this and rewrites its section of bench/RESULTS.md.
"""
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from server import (ROOT, child_cpu, get, paired, paired_summary, post, preview_kept, publish,  # noqa: E402
                    require_binaries, running_session, session, start_server, stop_server, timed, window,
                    written_by)  # (bench/server.py: the server, its API, viewers, windows, the run)

SECONDS = float(os.environ.get("BENCH_METADATA_SECONDS", "5"))
RUNS = int(os.environ.get("BENCH_METADATA_RUNS", "3"))
IMAGES = int(os.environ.get("BENCH_METADATA_IMAGES", "50"))  # images per zbarimg invocation
SIZE, FPS = "1280x720", 30
RATES = (10, 30)  # metadata.rate: the default, and the camera's frame rate
DEFAULT_RATE = 10
CODE = {"type": "qr", "value": "hello", "x": 0.5, "y": 0.5, "size": 0.4}
HEADING = "## Metadata: QR detection (zbar) at 1280x720, 30 fps"


def scans(port, camera):
    """viewfinder_metadata_scans_total of `camera`, from /metrics."""
    text = get(port, "/metrics", timeout=10).decode()
    m = re.search(rf'^viewfinder_metadata_scans_total\{{camera="{re.escape(camera)}"\}} (\S+)', text, re.M)
    if not m:
        raise RuntimeError(f"no viewfinder_metadata_scans_total for {camera} in /metrics")
    return int(float(m.group(1)))


def found(s):
    return any(o["type"] == CODE["type"] and o["value"] == CODE["value"] for o in s["metadata"]["objects"])


def write_config(work, rate, quality=80):
    config = {
        "server": {"port": 0, "publicDirectory": str(ROOT / "Public")},
        "capture": {"directory": str(work / "photos")},
        "stream": {"quality": quality},
        "metadata": {"rate": rate},
    }
    path = work / f"config-{rate}-{quality}.json"
    path.write_text(json.dumps(config, indent=1))
    return path


def start(config, workdir):
    """A server with the code in its scene: (process, port, camera id)."""
    def ready(port):
        camera = running_session(port, SIZE)["camera"]["id"]
        shown = post(port, f"/api/cameras/{camera}/scene", {"codes": [CODE]})["codes"]
        if len(shown) != 1 or shown[0]["value"] != CODE["value"]:
            raise RuntimeError(f"scene: {shown}")
        return camera
    return start_server(["--config", str(config), "--cameras", "synthetic", "--preset", SIZE, "--fps", str(FPS)],
                        workdir, ready)


def detection_window(p, port, camera):
    """One window with one viewer: server CPU %, the viewer's fps, the lowest stream.fps,
    scans per second, and how many of the once-a-second samples found the code."""
    w = window(p, port, SECONDS, lambda port: scans(port, camera), found)
    hits = w["samples"]
    return dict(w, scansPerSecond=w["perSecond"], found=(sum(hits), len(hits)),
                objects=w["session"]["metadata"]["objects"])


def measure(work, rate):
    p, port, camera = start(write_config(work, rate), work)
    try:
        time.sleep(1.0)  # the synthetic camera's exposure and white balance settle
        off = detection_window(p, port, camera)
        if off["scansPerSecond"] or off["found"][0]:
            raise RuntimeError(f"detection off but {off['scansPerSecond']} scans/s, found {off['found']}")
        post(port, "/api/session/metadata", {"types": ["qr"]})
        deadline = time.monotonic() + 10
        while not found(session(port)):  # the first scan that sees the code
            if time.monotonic() > deadline:
                raise RuntimeError(f"rate {rate}: the code was not found in 10 s: {session(port)['metadata']}")
            time.sleep(0.05)
        on = detection_window(p, port, camera)
    finally:
        stop_server(p)
    cost = on["cpu"] - off["cpu"]
    return dict(off=off["cpu"], on=on["cpu"], cost=cost, scansPerSecond=on["scansPerSecond"],
                msPerScan=cost / 100 / on["scansPerSecond"] * 1000 if on["scansPerSecond"] else float("nan"),
                found=on["found"], objects=on["objects"], **paired(off, on))


# ---------------------------------------------------------------- the reference: zbarimg

def grab_frame(work):
    """The scene with the code as greyscale PGM, from one of the server's own frames."""
    p, port, _ = start(write_config(work, DEFAULT_RATE, quality=100), work)
    try:
        time.sleep(1.0)  # as in the measurement: exposure and white balance settled
        jpeg = work / "snap.jpg"
        jpeg.write_bytes(get(port, "/snapshot", timeout=10))
    finally:
        stop_server(p)
    pgm = work / "snap.pgm"
    subprocess.run(["ffmpeg", "-v", "error", "-nostdin", "-y", "-i", str(jpeg), "-pix_fmt", "gray", str(pgm)],
                   check=True, timeout=60)
    header = pgm.read_bytes()[:32].split()
    if header[:3] != [b"P5", *(s.encode() for s in SIZE.split("x"))]:
        raise RuntimeError(f"{pgm}: not a {SIZE} PGM: {header[:4]}")
    return pgm


def zbarimg_command(pgm, images):
    return ["zbarimg", "-q", "--raw", "--nodbus", "-Sdisable", "-Sqrcode.enable", *([str(pgm)] * images)]


def zbarimg_cpu(pgm, images):
    seconds, out = child_cpu(zbarimg_command(pgm, images), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                             text=True, timeout=120)
    if out.returncode != 0 or out.stdout.split() != [CODE["value"]] * images:
        raise RuntimeError(f"zbarimg: status {out.returncode}, output {out.stdout[:200]!r}")
    return seconds


def reference(pgm):
    """zbarimg's CPU ms per image, the process start excluded."""
    whole = zbarimg_cpu(pgm, IMAGES)
    first = zbarimg_cpu(pgm, 1)
    return dict(msPerImage=(whole - first) / (IMAGES - 1) * 1000, whole=whole, first=first)


def profile(work, pgm):
    """Shares of zbarimg's CPU by library (perf record over the IMAGES run), or None without perf."""
    if not shutil.which("perf"):
        return None
    data = work / "perf.data"
    try:
        r = subprocess.run(["perf", "record", "-q", "-o", str(data), "--", *zbarimg_command(pgm, IMAGES)],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=120)
        if r.returncode != 0:
            return None
        report = subprocess.run(["perf", "report", "-i", str(data), "--stdio", "--no-children", "--sort", "dso"],
                                capture_output=True, text=True, timeout=120).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    shares = {}
    for m in re.finditer(r"^\s+([\d.]+)%\s+(\S+)\s*$", report, re.M):
        name = m.group(2)
        key = ("libzbar" if name.startswith("libzbar") else "ImageMagick" if "Magick" in name
               else "libgomp (OpenMP)" if name.startswith("libgomp") else "kernel" if "kernel" in name else "other")
        shares[key] = shares.get(key, 0.0) + float(m.group(1))
    return shares if "libzbar" in shares else None


# ---------------------------------------------------------------- the whole

def bench_metadata():
    work = Path(tempfile.mkdtemp(prefix="vf-bench-metadata-"))
    ours = {rate: [] for rate in RATES}
    refs = []
    try:
        pgm = grab_frame(work)
        for _ in range(RUNS):
            for rate in RATES:
                ours[rate].append(measure(work, rate))
            refs.append(reference(pgm))  # after the servers, on a quiet machine
        shares = profile(work, pgm)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    med = statistics.median
    ref = dict(msPerImage=med(f["msPerImage"] for f in refs), runs=[f["msPerImage"] for f in refs],
               first=med(f["first"] for f in refs) * 1000, shares=shares)
    rows = []
    for rate in RATES:
        rs = ours[rate]
        rows.append(dict(
            rate=rate, off=med(r["off"] for r in rs), on=med(r["on"] for r in rs), cost=med(r["cost"] for r in rs),
            costRuns=[r["cost"] for r in rs], msPerScan=med(r["msPerScan"] for r in rs),
            msRuns=[r["msPerScan"] for r in rs], scansPerSecond=med(r["scansPerSecond"] for r in rs),
            scansRuns=[r["scansPerSecond"] for r in rs],
            found=(sum(r["found"][0] for r in rs), sum(r["found"][1] for r in rs)), objects=rs[-1]["objects"],
            **paired_summary(rs)))
    return rows, ref


def markdown(rows, ref, started, load, took):
    lines = [
        HEADING,
        "",
        written_by("metadata.py", started, load, took),
        "",
        "Command: `viewfinder --config FILE --cameras synthetic --preset 1280x720 --fps 30` where FILE sets "
        '`"metadata": {"rate": R}` (10, the default, then 30); the scene shows a QR code (`POST '
        '/api/cameras/rear/scene` `{"codes": [{"type": "qr", "value": "hello", "x": 0.5, "y": 0.5, '
        '"size": 0.4}]}`); one viewer `bench/out/viewers PORT 1 '
        f'{SECONDS + 0.5:g}` on `/stream` in each window; detection is `POST /api/session/metadata` '
        '`{"types": ["qr"]}`. CPU is the server process\'s user+system time from `/proc/PID/stat` over '
        f"{SECONDS:g} s after a 1 s warm-up, in % of one core, first with detection off, then (same process) "
        "with it on, the window starting once the code is reported; the difference is detection's cost, ÷ the "
        "scans in the window (`viewfinder_metadata_scans_total`, `/metrics`) for ms per scan. A scan: the "
        "capture thread's copy of the YUYV frame, the worker's luma plane (1280x720) and zbar. Median of "
        f"{RUNS} runs (each run listed), runs cycling the rates with a fresh server each. Viewer fps: what "
        "the viewer counted; stream fps min: the lowest `stream.fps` in `GET /api/session`, sampled each "
        "second; found: the samples (the same times) whose `metadata.objects` held the code, over all runs.",
        "",
        "Reference, same run, same input: zbar's CLI on one frame of the same scene (`GET /snapshot` at "
        "`stream.quality` 100, converted with `ffmpeg -i snap.jpg -pix_fmt gray snap.pgm`, 1280x720): "
        f"`zbarimg -q --raw --nodbus -Sdisable -Sqrcode.enable snap.pgm …` with the file given {IMAGES} "
        f"times, its CPU (`RUSAGE_CHILDREN`) minus that for the file given once (process start, "
        f"{ref['first']:.0f} ms), ÷ {IMAGES - 1}; it printed `hello` for every image in every run. "
        "(`--nodbus`: Debian's zbarimg otherwise tries the D-Bus system bus for each image.) Ratio: "
        "Viewfinder's ms per scan ÷ zbarimg's ms per image.",
        "",
        "| metadata.rate | server CPU % off / on | detection's cost, % of a core | runs | scans/s (runs) | "
        "ms CPU per scan (runs) | zbarimg ms per image (reference) | ratio | viewer fps off / on | "
        "stream fps min off / on | found | threads off / on |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        default = " (default)" if r["rate"] == DEFAULT_RATE else ""
        lines.append(
            f"| {r['rate']}{default} | {r['off']:.1f} / {r['on']:.1f} | {r['cost']:.1f} | "
            f"{', '.join(f'{c:.1f}' for c in r['costRuns'])} | {r['scansPerSecond']:.1f} "
            f"({', '.join(f'{s:.1f}' for s in r['scansRuns'])}) | {r['msPerScan']:.1f} "
            f"({', '.join(f'{m:.1f}' for m in r['msRuns'])}) | {ref['msPerImage']:.1f} | "
            f"{r['msPerScan'] / ref['msPerImage']:.2f} | {r['viewerFps'][0]:.2f} / {r['viewerFps'][1]:.2f} | "
            f"{r['streamFpsMin'][0]:g} / {r['streamFpsMin'][1]:g} | {r['found'][0]}/{r['found'][1]} | "
            f"{r['threads'][0]} / {r['threads'][1]} |")
    d = next(r for r in rows if r["rate"] == DEFAULT_RATE)
    fast = next(r for r in rows if r["rate"] != DEFAULT_RATE)
    obj = d["objects"][0] if d["objects"] else None
    lines += [
        "",
        f"zbarimg, per image over the runs: {', '.join(f'{m:.1f}' for m in ref['runs'])} ms.",
        "",
        f"QR detection at the default 10 Hz costs {d['cost']:.1f} % of a core at 720p30 "
        f"({d['msPerScan']:.1f} ms per scan, {d['msPerScan'] / ref['msPerImage']:.2f}× zbarimg's "
        f"{ref['msPerImage']:.1f} ms per image); at 30 Hz {fast['cost']:.1f} % ({fast['msPerScan']:.1f} ms "
        f"per scan).",
        "",
    ]
    short = [r for r in rows if r["scansPerSecond"] < 0.95 * r["rate"]]
    if short:
        lines[-2] += (" The scans per second fall short of the rate asked (" + ", ".join(
            f"{r['scansPerSecond']:.1f} at {r['rate']} Hz" for r in short) + f"): frames come every "
            f"{1000 / FPS:.1f} ms, and one is taken only when the worker is idle and at least 1/rate has "
            "passed since the last one taken, so a frame a little early waits for the next.")
    shares = ref["shares"]
    if shares:
        zbar = shares["libzbar"]
        rest = ", ".join(f"{k} {v:.0f} %" for k, v in sorted(shares.items(), key=lambda kv: -kv[1]) if k != "libzbar")
        lines += [
            f"zbarimg's CPU by library (`perf record` of one {IMAGES}-image run): libzbar {zbar:.0f} %, {rest}: "
            "the rest is reading each file with ImageMagick into a fresh image and converting it to Y800 (its "
            "OpenMP threads, the kernel's page faults for the new memory). libzbar's share of its ms per image is ≈ "
            f"{ref['msPerImage'] * zbar / 100:.1f} ms: zbar's own work, against which a Viewfinder scan costs "
            f"{d['msPerScan'] / (ref['msPerImage'] * zbar / 100):.2f}× (default rate) — the frame copy and "
            "the luma plane on top of zbar.",
            "",
        ]
    else:
        lines += ["(`perf` unavailable here: zbarimg's per-image CPU includes reading each image with "
                  "ImageMagick, which a Viewfinder scan does not do.)", ""]
    missed = [r for r in rows if r["found"][0] < r["found"][1]]
    where = (f"at ({obj['bounds']['x'] + obj['bounds']['width'] / 2:.2f}, "
             f"{obj['bounds']['y'] + obj['bounds']['height'] / 2:.2f})" if obj else "")
    if missed:
        lines += ["The code was missing from `metadata.objects` in some samples: " + "; ".join(
            f"rate {r['rate']}: found in {r['found'][0]} of {r['found'][1]}" for r in missed) + ".", ""]
    else:
        lines += [f"The code was in `metadata.objects` in every sample with detection on (\"{obj['value']}\" "
                  f"{where}, the scene's centre).", ""]
    lines += preview_kept(rows, FPS, lambda r: f"rate {r['rate']}", "detection", "the server's threads and the viewer")
    return lines


def main():
    require_binaries()
    if not shutil.which("zbarimg"):
        sys.exit("zbarimg missing: scripts/install-deps --bench (Debian package zbar-tools)")
    (rows, ref), started, load, took = timed(bench_metadata)
    publish("metadata", markdown(rows, ref, started, load, took), took)


if __name__ == "__main__":
    sys.exit(main())
