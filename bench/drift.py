#!/usr/bin/env python3
"""Sound against picture over an hour (issue 37's drift goal: ≤ 10 ms an hour).

One server, one synthetic camera (640x480, 30 fps, its timecode on) with the synthetic
microphone (a 10 ms beep at every whole second of capture time), records one movie of MINUTES
(default 60) with sound. The beep's offset from the frame whose timecode crosses the same
second (sound.py's measure: the frame nearest each beep, its timecode plus the distance to it)
is read in the movie's first and last PIECE seconds, each cut from the movie with `-c copy`:
drift is how far the last piece's median moved from the first's. Over the same hour the sound
is also read live, at its start and its end: RTSP (4 s through ffmpeg) and live.mp4 (4 s),
so the hour covers a recording and the live encode a long-lived server keeps.

What can drift: the capture clock the sound is stamped on against the frames' (a sample
counter that loses a fraction of a sample per buffer adds up to milliseconds in an hour), the
AAC timeline in the file against the samples it was given, and a re-anchored timeline after
an overrun. The synthetic microphone is paced by the system clock, as snd-aloop is; a real
card's crystal is not, and the session re-anchors it to the capture clock (docs/API.md).

`make soak-drift` (SOAK_MINUTES, default 60) runs it and writes its section of
bench/RESULTS.md. Not part of `make bench`: it takes the hour.
"""
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from server import post, publish, request, session, stop_server, timed, written_by  # noqa: E402
from sound import framed_offsets, live_offsets, rtsp_offsets, start  # noqa: E402

MINUTES = float(os.environ.get("SOAK_MINUTES", "60"))
PIECE = 30.0
RTSP_PORT = int(os.environ.get("BENCH_DRIFT_RTSP_PORT", "18555"))
HEADING = "## Sound: drift over an hour (640x480, 30 fps, 48 kHz mono)"


def piece(movie, start, out):
    """PIECE seconds of `movie` from `start` (s), copied: its frames and sound keep their times."""
    subprocess.run(["ffmpeg", "-v", "error", "-ss", f"{start:.3f}", "-i", str(movie), "-t", f"{PIECE:g}", "-c", "copy",
                    "-y", str(out)], check=True, capture_output=True, timeout=120)
    return framed_offsets(out)


def duration(movie):
    return float(subprocess.run(["ffprobe", "-v", "error", "-show_entries", "format=duration", "-of", "csv=p=0", str(movie)],
                                capture_output=True, text=True, check=True).stdout.strip())


def soak():
    with tempfile.TemporaryDirectory(prefix="viewfinder-drift-") as tmp:
        work = Path(tmp)
        p, port = start(work, rtsp_port=RTSP_PORT)  # sound.py's server, on a port of its own
        try:
            live = {"start": (rtsp_offsets(work, RTSP_PORT), live_offsets(work, port))}
            post(port, "/api/session/recording/start", {"audio": True})
            began = time.monotonic()
            while time.monotonic() - began < MINUTES * 60:
                time.sleep(min(30, MINUTES * 60 - (time.monotonic() - began)))
                s = session(port)
                if s["state"] != "running" or not (s.get("audio") or {}).get("running"):
                    raise RuntimeError(f"the session stopped in the soak: {s['state']} {s.get('audio')}")
            live["end"] = (rtsp_offsets(work, RTSP_PORT), live_offsets(work, port))
            status, movie = request(port, "/api/session/recording/stop", b"")
            if status != 201 or not movie.get("audio"):
                raise RuntimeError(f"recording/stop: {status} {movie}")
            path = work / "movies" / f"{movie['id']}.mp4"
            length = duration(path)
            first = piece(path, 1.0, work / "first.mkv")
            # Never before the first piece's start: ffmpeg's -ss before 0 (a short trial run) put
            # the sound 0.4 s off its frames in the copy.
            last = piece(path, max(1.0, length - PIECE - 1.0), work / "last.mkv")
            return dict(length=length, first=first, last=last, live=live, size=path.stat().st_size)
        finally:
            stop_server(p)


def main():
    r, started, load, took = timed(soak)
    med = statistics.median
    first, last = med(r["first"]), med(r["last"])
    (rtsp0, live0), (rtsp1, live1) = r["live"]["start"], r["live"]["end"]

    def far(xs):
        return sum(1 for x in xs if abs(x) > 10)

    def span(xs):
        return f"{min(xs):+.2f} … {max(xs):+.2f}"
    section = [
        HEADING, "",
        written_by("drift.py", started, load, took, make="make soak-drift"), "",
        f"One movie of {r['length'] / 60:.1f} min with sound ({r['size'] / 1e6:.0f} MB), one server; the beep's offset "
        f"(ms, + is late) in its first and last {PIECE:g} s, and live at the hour's start and end "
        "(`make soak-drift`; the method is bench/drift.py's docstring). Goal: drift ≤ 10 ms over an hour.", "",
        "| figure | start | end | drift (end − start) |",
        "|---|---|---|---|",
        f"| movie: median of each piece's beeps ({len(r['first'])} / {len(r['last'])}) | {first:+.2f} | {last:+.2f} | {last - first:+.2f} |",
        f"| movie: range | {span(r['first'])} | {span(r['last'])} | |",
        f"| movie: beeps more than 10 ms off | {far(r['first'])} | {far(r['last'])} | |",
        f"| RTSP through ffmpeg: median | {med(rtsp0):+.2f} | {med(rtsp1):+.2f} | {med(rtsp1) - med(rtsp0):+.2f} |",
        f"| live.mp4: median | {med(live0):+.2f} | {med(live1):+.2f} | {med(live1) - med(live0):+.2f} |",
        "",
        "Each beep (ms), first piece: " + ", ".join(f"{x:+.1f}" for x in r["first"]) + "; last piece: "
        + ", ".join(f"{x:+.1f}" for x in r["last"]) + ".",
        "",
    ]
    publish("drift.py", section, took)


if __name__ == "__main__":
    main()
