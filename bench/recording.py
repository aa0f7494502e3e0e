#!/usr/bin/env python3
"""Movie recording (H.264 through libx264): what a recording costs the server, whether the
preview keeps its rate while it runs, and which x264 preset the default should be.

Each run starts viewfinder (`--cameras synthetic --preset WxH --fps 30`, a temporary config
whose `recording.directory` is a temporary directory and whose `recording.preset` is the
preset measured) and measures twice on that process, each time with one MJPEG viewer on
`/stream` (bench/out/viewers, the lightest reader we have): first without recording, then
while recording H.264 (started a second before the window, so x264's set-up is outside
it). CPU is the server's utime+stime from /proc/PID/stat over SECONDS after the viewer's
1 s warm-up; the difference between the two windows is the recording's cost, in % of one
core and in ms of CPU per recorded frame (frames counted from `recording.frames` in
`GET /api/session` over the same window). The preview's rate is what the viewer counted,
and the lowest `stream.fps` (frames published over the last second) sampled once a second
in the window; `recording.dropped` is read before the stop. The stopped movie's
`bytes / duration` is its bit rate. Cases: 1280x720 with the presets ultrafast, superfast
(the default) and veryfast, 1920x1080 with superfast. Runs cycle the cases so that drift on
the machine falls on every case alike; figures are the median of RUNS.

Reference, in the same run on the same input: FFmpeg's own CLI encoding the synthetic
camera's frames with the same preset. The frames are got once per size from the server
itself: a `{"codec": "mjpeg"}` movie recorded with `capture.quality` 100 (a raw camera's
frames JPEG-encoded at 4:2:2 from the YUYV it captured, so only the JPEG rounding differs),
decoded to rawvideo yuyv422 with the sample values kept as they are
(`scale=in_range=full:out_range=full`: Viewfinder's JPEGs carry the camera's YUV values).
Then `ffmpeg -f rawvideo -pix_fmt yuyv422 -s WxH -r 30 -i frames.yuv -pix_fmt yuv420p
-c:v libx264 -preset P -tune zerolatency -force_key_frames expr:gte(t,n_forced) -f mp4
-movflags frag_keyframe+empty_moov OUT.mp4` — the same conversion (YUYV → 4:2:0 by
libswscale), the same encoder settings as the recorder (zerolatency, a keyframe forced
each second) and the same kind of muxing. Its CPU time (RUSAGE_CHILDREN) is taken for all
FRAMES and for the first frame alone: per frame is the difference ÷ (FRAMES − 1), so the
process start and x264's set-up are left out as they are on Viewfinder's side. Ratio:
Viewfinder's recording cost per frame ÷ the CLI's per frame.

`bench/run` (make bench) calls it after multicam.py; `python3 bench/recording.py` runs only
this and rewrites its section of bench/RESULTS.md.
"""
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from server import (ROOT, child_cpu, paired, paired_summary, preview_kept, publish, request,  # noqa: E402
                    require_binaries, running_session, session, start_server, stop_server, timed, window,
                    written_by)  # (bench/server.py: the server, its API, viewers, windows, the run)

SECONDS = float(os.environ.get("BENCH_RECORDING_SECONDS", "5"))
RUNS = int(os.environ.get("BENCH_RECORDING_RUNS", "3"))
FRAMES = int(os.environ.get("BENCH_RECORDING_FRAMES", "150"))  # frames for the ffmpeg reference
FPS = 30
DEFAULT = "superfast"
CASES = [("1280x720", "ultrafast"), ("1280x720", "superfast"), ("1280x720", "veryfast"), ("1920x1080", "superfast")]
HEADING = "## Recording: H.264 movies (libx264) at 1280x720 and 1920x1080, 30 fps"


def write_config(work, preset):
    movies = work / "movies"
    config = {
        "server": {"port": 0, "publicDirectory": str(ROOT / "Public")},
        # 100: the MJPEG movie the reference's frames come from is as close to the YUYV as JPEG gets.
        "capture": {"directory": str(work / "photos"), "quality": 100},
        "recording": {"directory": str(movies), "preset": preset},
    }
    path = work / f"config-{preset}.json"
    path.write_text(json.dumps(config, indent=1))
    return path, movies


def start(config, size, workdir):
    p, port, _ = start_server(["--config", str(config), "--cameras", "synthetic", "--preset", size,
                               "--fps", str(FPS)], workdir, lambda port: running_session(port, size))
    return p, port


def start_recording(port, options):
    status, body = request(port, "/api/session/recording/start", json.dumps(options).encode())
    if status != 200 or not body["recording"]["active"]:
        raise RuntimeError(f"recording/start: {status} {body}")


def stop_recording(port):
    status, movie = request(port, "/api/session/recording/stop", b"", timeout=30)
    if status != 201:
        raise RuntimeError(f"recording/stop: {status} {movie}")
    return movie


def recording_window(p, port):
    """One window with one viewer: server CPU %, the viewer's fps, the lowest stream.fps,
    recorded frames per second and the recording state at the end."""
    w = window(p, port, SECONDS, lambda port: session(port)["recording"]["frames"])
    return dict(w, recFps=w["perSecond"], dropped=w["session"]["recording"]["dropped"])


def measure(work, size, preset):
    config, movies = write_config(work, preset)
    p, port = start(config, size, work)
    try:
        time.sleep(1.0)  # the synthetic camera's exposure and white balance settle
        base = recording_window(p, port)
        # Bounded: the movie ends by itself if the stop below never came.
        start_recording(port, {"codec": "h264", "maxDuration": SECONDS + 60})
        rec = recording_window(p, port)
        dropped = session(port)["recording"]["dropped"]
        movie = stop_recording(port)
    finally:
        stop_server(p)
    shutil.rmtree(movies, ignore_errors=True)
    cost = rec["cpu"] - base["cpu"]
    return dict(base=base["cpu"], rec=rec["cpu"], cost=cost,
                msPerFrame=cost / 100 / rec["recFps"] * 1000 if rec["recFps"] else float("nan"),
                recFps=rec["recFps"], dropped=dropped, frames=movie["frames"],
                bytesPerSecond=movie["bytes"] / movie["duration"], **paired(base, rec))


# ---------------------------------------------------------------- the reference: ffmpeg's CLI

def dump_frames(work, size):
    """FRAMES of the synthetic camera's YUYV at `size`: an MJPEG movie from the server, decoded."""
    config, movies = write_config(work, DEFAULT)
    p, port = start(config, size, work)
    try:
        time.sleep(1.0)  # as in the measurement: exposure and white balance settled
        # A little more than FRAMES (the movie ends at maxDuration); the decode keeps FRAMES.
        start_recording(port, {"codec": "mjpeg", "maxDuration": (FRAMES + 5) / FPS})
        deadline = time.monotonic() + FRAMES / FPS + 30
        while session(port)["recording"]["active"]:
            if time.monotonic() > deadline:
                stop_recording(port)
                break
            time.sleep(0.2)
    finally:
        stop_server(p)
    mp4 = next(movies.glob("*.mp4"))
    yuv = work / f"frames-{size}.yuv"
    subprocess.run(["ffmpeg", "-v", "error", "-y", "-i", str(mp4), "-frames:v", str(FRAMES),
                    "-vf", "scale=in_range=full:out_range=full", "-f", "rawvideo", "-pix_fmt", "yuyv422", str(yuv)],
                   check=True, timeout=300)
    shutil.rmtree(movies, ignore_errors=True)
    w, h = map(int, size.split("x"))
    frames = yuv.stat().st_size // (w * h * 2)
    if frames != FRAMES:
        raise RuntimeError(f"{size}: {frames} frames dumped, wanted {FRAMES}")
    return yuv


def ffmpeg_command(yuv, size, preset, out, frames=None):
    return ["ffmpeg", "-v", "error", "-nostdin", "-y", "-f", "rawvideo", "-pix_fmt", "yuyv422", "-s", size,
            "-r", str(FPS), "-i", str(yuv), *(["-frames:v", str(frames)] if frames else []),
            "-pix_fmt", "yuv420p", "-c:v", "libx264", "-preset", preset, "-tune", "zerolatency",
            "-force_key_frames", "expr:gte(t,n_forced)",
            "-f", "mp4", "-movflags", "frag_keyframe+empty_moov", str(out)]


def ffmpeg_cpu(cmd):
    return child_cpu(cmd, check=True, timeout=300)[0]


def reference(work, yuv, size, preset):
    """The CLI's CPU ms per frame, process start and x264's set-up excluded; and its bytes per second."""
    out = work / "reference.mp4"  # a file rather than /dev/null for its size: some kB, nothing to the timing
    whole = ffmpeg_cpu(ffmpeg_command(yuv, size, preset, out))
    bps = out.stat().st_size / (FRAMES / FPS)
    out.unlink()
    first = ffmpeg_cpu(ffmpeg_command(yuv, size, preset, "/dev/null", frames=1))
    return dict(msPerFrame=(whole - first) / (FRAMES - 1) * 1000, whole=whole, first=first, bytesPerSecond=bps)


# ---------------------------------------------------------------- the whole

def bench_recording():
    work = Path(tempfile.mkdtemp(prefix="vf-bench-recording-"))
    ours = {case: [] for case in CASES}
    refs = {case: [] for case in CASES}
    try:
        frames = {size: dump_frames(work, size) for size in dict.fromkeys(s for s, _ in CASES)}
        for _ in range(RUNS):
            for size, preset in CASES:
                ours[(size, preset)].append(measure(work, size, preset))
            for size, preset in CASES:  # after the servers, on a quiet machine
                refs[(size, preset)].append(reference(work, frames[size], size, preset))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    med = statistics.median
    rows = []
    for case in CASES:
        rs, fs = ours[case], refs[case]
        rows.append(dict(
            size=case[0], preset=case[1],
            base=med(r["base"] for r in rs), rec=med(r["rec"] for r in rs), cost=med(r["cost"] for r in rs),
            costRuns=[r["cost"] for r in rs], msPerFrame=med(r["msPerFrame"] for r in rs),
            msRuns=[r["msPerFrame"] for r in rs], recFps=med(r["recFps"] for r in rs),
            dropped=[r["dropped"] for r in rs], frames=[r["frames"] for r in rs],
            bytesPerSecond=med(r["bytesPerSecond"] for r in rs), **paired_summary(rs),
            refMs=med(f["msPerFrame"] for f in fs), refRuns=[f["msPerFrame"] for f in fs],
            refFirst=med(f["first"] for f in fs) * 1000, refBytesPerSecond=med(f["bytesPerSecond"] for f in fs)))
    return rows


def markdown(rows, started, load, took):
    lines = [
        HEADING,
        "",
        written_by("recording.py", started, load, took),
        "",
        "Command: `viewfinder --config FILE --cameras synthetic --preset WxH --fps 30` where FILE sets "
        '`"recording": {"directory": TMP, "preset": P}`; one viewer `bench/out/viewers PORT 1 '
        f'{SECONDS + 0.5:g}` on `/stream` in each window; the recording is `POST /api/session/recording/start` '
        '`{"codec": "h264"}` … `recording/stop`. CPU is the server process\'s user+system time from '
        f"`/proc/PID/stat` over {SECONDS:g} s after a 1 s warm-up, in % of one core, first without recording, "
        "then (same process) while recording; the difference is the recording's cost, ÷ the frames recorded "
        f"in the window for ms per frame. Median of {RUNS} runs (each run listed), runs cycling the cases "
        "with a fresh server each. Viewer fps: what the viewer counted; stream fps min: the lowest "
        "`stream.fps` in `GET /api/session`, sampled each second; dropped: `recording.dropped` at the stop, "
        "every run. Movie bit rate: the stopped movie's `bytes / duration`.",
        "",
        "Reference, same run, same input: FFmpeg's CLI on "
        f"{FRAMES} frames of the same synthetic camera (an MJPEG movie recorded from the server at JPEG "
        "quality 100, decoded to yuyv422 with its sample values kept): `ffmpeg -f rawvideo -pix_fmt yuyv422 "
        "-s WxH -r 30 -i frames.yuv -pix_fmt yuv420p -c:v libx264 -preset P -tune zerolatency "
        "-force_key_frames expr:gte(t,n_forced) -f mp4 -movflags frag_keyframe+empty_moov OUT.mp4` "
        "(the recorder's settings: YUYV → 4:2:0 by libswscale, zerolatency, a keyframe each second), its CPU "
        f"(`RUSAGE_CHILDREN`) for {FRAMES} frames minus that for 1 frame (process start and x264's set-up), "
        f"÷ {FRAMES - 1}; its movie's size ÷ {FRAMES / FPS:g} s in brackets beside Viewfinder's bit rate. "
        "Ratio: Viewfinder's recording cost per frame ÷ the CLI's.",
        "",
        "| size | preset | server CPU % without / with recording | recording's cost, % of a core | runs | "
        "ms CPU per frame | ffmpeg CLI ms per frame (reference) | ratio | viewer fps without / with | "
        "stream fps min without / with | recorded fps | dropped | movie kB/s (ffmpeg CLI) | threads |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        runs = ", ".join(f"{c:.1f}" for c in r["costRuns"])
        default = " (default)" if r["preset"] == DEFAULT else ""
        lines.append(
            f"| {r['size']} | {r['preset']}{default} | {r['base']:.1f} / {r['rec']:.1f} | {r['cost']:.1f} | {runs} | "
            f"{r['msPerFrame']:.2f} | {r['refMs']:.2f} | {r['msPerFrame'] / r['refMs']:.2f} | "
            f"{r['viewerFps'][0]:.2f} / {r['viewerFps'][1]:.2f} | "
            f"{r['streamFpsMin'][0]:g} / {r['streamFpsMin'][1]:g} | {r['recFps']:.2f} | "
            f"{', '.join(str(d) for d in r['dropped'])} | {r['bytesPerSecond'] / 1000:.0f} "
            f"({r['refBytesPerSecond'] / 1000:.0f}) | {r['threads'][0]} / {r['threads'][1]} |")
    by = {(r["size"], r["preset"]): r for r in rows}
    d720, d1080 = by[("1280x720", DEFAULT)], by[("1920x1080", DEFAULT)]
    fastest, slowest = by[("1280x720", "ultrafast")], by[("1280x720", "veryfast")]
    lines += [
        "",
        f"Recording H.264 with the default preset costs {d720['cost']:.1f} % of a core at 720p30 "
        f"({d720['msPerFrame']:.2f} ms per frame, {d720['msPerFrame'] / d720['refMs']:.2f}× the ffmpeg CLI's "
        f"{d720['refMs']:.2f}) and {d1080['cost']:.1f} % at 1080p30 ({d1080['msPerFrame']:.2f} ms, "
        f"{d1080['msPerFrame'] / d1080['refMs']:.2f}×). At 720p, ultrafast costs "
        f"{fastest['msPerFrame']:.2f} ms per frame for {fastest['bytesPerSecond'] / 1000:.0f} kB/s of movie, "
        f"superfast {d720['msPerFrame']:.2f} ms for {d720['bytesPerSecond'] / 1000:.0f} kB/s, veryfast "
        f"{slowest['msPerFrame']:.2f} ms for {slowest['bytesPerSecond'] / 1000:.0f} kB/s: against ultrafast, "
        f"superfast takes {d720['msPerFrame'] / fastest['msPerFrame']:.2f}× the CPU for "
        f"{d720['bytesPerSecond'] / fastest['bytesPerSecond'] * 100:.0f} % of the bytes, veryfast "
        f"{slowest['msPerFrame'] / fastest['msPerFrame']:.2f}× for "
        f"{slowest['bytesPerSecond'] / fastest['bytesPerSecond'] * 100:.0f} %. "
        "The synthetic scene (colour bars, a moving block, a clock, no sensor noise) is far easier to "
        "encode than a real camera's picture: the bit rates here are a floor, and a noisy picture costs x264 "
        "more per frame.",
        "",
    ]
    lines += preview_kept(rows, FPS, lambda r: f"{r['size']} {r['preset']}", "recording",
                          "the server, x264's threads and the viewer")
    drops = [r for r in rows if any(r["dropped"])]
    if drops:
        lines += ["Frames dropped by the recorder (its queue full while x264 fell behind): " + "; ".join(
            f"{r['size']} {r['preset']}: {', '.join(str(d) for d in r['dropped'])} over {', '.join(str(f) for f in r['frames'])} "
            "frames written" for r in drops) + ".", ""]
    else:
        lines += ["No frame was dropped by the recorder in any run (`recording.dropped` 0).", ""]
    return lines


def main():
    require_binaries()
    rows, started, load, took = timed(bench_recording)
    publish("recording", markdown(rows, started, load, took), took)


if __name__ == "__main__":
    sys.exit(main())
