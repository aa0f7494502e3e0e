#!/usr/bin/env python3
"""Sound in movies (issue 37): how far a movie's sound is from its picture, and what the AAC
encode costs the server.

The server runs one synthetic camera (640x480, 30 fps, its timecode on) with the synthetic
microphone (48 kHz mono, a 10 ms 2 kHz beep at every whole second of capture time). Each run
records two movies of SECONDS on that one process, in turn: `{"audio": false}` and then with
sound, each started a second before its CPU window (so the encoders' set-up is outside it).
CPU is the server's utime+stime from /proc/PID/stat over the window; the difference is what the
sound costs a recording: the camera's AAC encode (FFmpeg's `aac`, 64 kbit/s) and its packets
written into the file, in % of one core.

A/V offset: in each movie with sound, the first frame's capture time is read from its timecode
(decoded by ffmpeg) and the sound is decoded from the movie's time 0 with every packet at its
time (`aresample=async=1:min_hard_comp=0.001:first_pts=0`); a beep is where the samples first
pass a quarter of full scale after half a second below it. Its capture time is the first
frame's plus its place in the movie; the offset is how far that is from the whole second
(positive: the sound plays late). The timecode counts whole milliseconds (floored), so each
offset is exact to about one millisecond.

Reference, in the same run on the same input: FFmpeg's own CLI encoding the synthetic
microphone's sound (SECONDS of it, taken from the server's `audio.wav`) with the same encoder
and bitrate: `ffmpeg -f s16le -ar 48000 -ac 1 -i pcm -c:a aac -b:a 64k -f null -`, its CPU
time (RUSAGE_CHILDREN) for the whole clip minus that for one second of it (the process start
and set-up left out), per second of sound. Ratio: the recording's sound cost per second ÷ the
CLI's. Figures are the median of RUNS.

Each encode alone: `viewfinder-bench audio` (the server's AudioEncoder, as the session
configures it: AAC 64 kbit/s; Opus 32 kbit/s, low delay, 10 ms frames) on a minute of that
sound (the clip repeated), fed in the microphone's 10 ms buffers, its CPU time from
getrusage; beside FFmpeg's CLI with the same encoder and settings on the same samples (the
whole minute less one second of it, per second). The capture alone: the server running the
camera with its microphone and nothing consuming it, less the same with `"audio": null`
(CAPTURE_WINDOW s each, once per run): the synthetic microphone's thread, which also makes
its sound (noise and beeps), 100 buffers a second, and the level meter. A camera's sound in
all: capture + AAC + Opus, each alone (the AAC and Opus encodes are one per camera, shared by
every client).

Over RTSP: ffmpeg (ffplay's, Frigate's and Home Assistant's client) copies 4 s of
`rtsp://…/tc` (picture and AAC) into Matroska each run; every frame is decoded with its own
time (`-vsync passthrough`) and its timecode read, and each beep's capture time is that of the
frame nearest it plus the distance to it (the first frame, the keyframe replayed to a joining
client, left out). The offset is as in movies.

live.mp4: 4 s of `/live.mp4` (picture and AAC, each fragment placed at its capture time from
the client's first keyframe) are read each run, cut after the last whole box, and measured as
a movie is.

WebRTC: Chromium (headless, selenium) opens the page, whose preview is WebRTC with the camera's
Opus beside its H.264 in one stream, unmutes it (a muted track is never played out), and after
5 s reads the page's `soundStats()` every 100 ms, 100 times: each inbound track's
`estimatedPlayoutTimestamp` — the sender's capture time (through the sender reports, which the
server maps at the buffers' capture times) of what the track plays at that moment — against
the clock (one machine: one clock). The sound's age is its capture → played latency in the
client (its jitter buffer, decoder and audio device included); the lag is
the sound's age less the picture's at the same instant (positive: the sound is heard after the
picture it belongs to). Reference: the picture's age in the same client. Chromium's own share
is shown beside it: its jitter buffer's mean hold per sample over the same 10 s
(`jitterBufferDelay` / `jitterBufferEmittedCount`), and its audio device's playout delay
(`media-playout`'s `totalPlayoutDelay` / `totalSamplesCount`; headless, a fake device). The age
less those two is the sound's capture → arrival at the client: the server's share (the
microphone's 10 ms buffer, the 10 ms Opus frame, the send) and the network's. The WebRTC sessions run after
every recording (a session outlives its browser in the server until ICE gives up).

`python3 bench/sound.py` runs only this and rewrites its section of bench/RESULTS.md.
"""
import array
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench import cpu_seconds  # noqa: E402
from server import (ROOT, child_cpu, get, post, publish, request, session, start_server, stop_server,  # noqa: E402
                    timed, wait_until, written_by)

SECONDS = float(os.environ.get("BENCH_SOUND_SECONDS", "6"))
BENCH = ROOT / ".build/release/viewfinder-bench"
CAPTURE_WINDOW = 10.0
RUNS = int(os.environ.get("BENCH_SOUND_RUNS", "5"))
W, H = 640, 480
RTSP_PORT = int(os.environ.get("BENCH_SOUND_RTSP_PORT", "18554"))
HEADING = "## Sound: A/V offset in movies, live.mp4 and RTSP, and the AAC encode's cost (640x480, 30 fps, 48 kHz mono)"


def start(work, microphone=True, rtsp_port=RTSP_PORT):
    camera = {"id": "tc", "source": "synthetic", "position": "rear", "preset": f"{W}x{H}", "timecode": True}
    if not microphone:
        camera["audio"] = None
    config = {"server": {"port": 0, "publicDirectory": str(ROOT / "Public")}, "rtsp": {"port": rtsp_port},
              "cameras": [camera], "recording": {"directory": str(work / "movies")}}
    path = work / "config.json"
    path.write_text(json.dumps(config))

    def ready(port):
        post(port, "/api/session/start", {})
        return wait_until(lambda: session(port),
                          lambda s: s["state"] == "running" and (not microphone or (s.get("audio") or {}).get("running")),
                          lambda s: f"not running with sound: {s['state']} {s.get('audio')}")
    p, port, _ = start_server(["--config", str(path)], work, ready)
    return p, port


def timecode(frame):
    """The capture time (ms) in a gray frame's top cells (Sources/Capture/Timecode.swift)."""
    rows = max(8, H // 45)

    def level(i):
        x0, x1 = i * W // 64, (i + 1) * W // 64
        xa = x0 + (x1 - x0) // 4
        xb = max(xa + 1, x1 - (x1 - x0) // 4)
        ya, yb = rows // 4, max(rows // 4 + 1, rows - rows // 4)
        values = [frame[y * W + x] for y in range(ya, yb) for x in range(xa, xb)]
        return sum(values) // len(values)
    mid = (level(0) + level(1)) // 2
    ms = 0
    for i in range(2, 50):
        ms = ms << 1 | (1 if level(i) > mid else 0)
    return ms


def beeps(pcm):
    """Each beep's onset (s from the start of 48 kHz mono s16 `pcm`): where the samples first
    pass a quarter of full scale after half a second below it."""
    samples = array.array("h")
    samples.frombytes(pcm)
    out, quiet_since = [], -48_000
    for i, v in enumerate(samples):
        if abs(v) > 8192:
            t = i / 48_000
            if i - quiet_since > 24_000 and (not out or t - out[-1] > 0.5):
                out.append(t)
            quiet_since = i
    return out


def offsets(movie):
    """Each beep's offset (ms) from the whole second in the movie at `movie`."""
    frame = subprocess.run(["ffmpeg", "-v", "error", "-i", str(movie), "-frames:v", "1", "-f", "rawvideo", "-pix_fmt", "gray", "-"],
                           capture_output=True, check=True).stdout
    t0 = timecode(frame) / 1000
    pcm = subprocess.run(["ffmpeg", "-v", "error", "-i", str(movie), "-map", "0:a:0", "-af",
                          "aresample=async=1:min_hard_comp=0.001:first_pts=0", "-f", "s16le", "-ac", "1", "-"],
                         capture_output=True, check=True).stdout
    return [(t0 + t - round(t0 + t)) * 1000 for t in beeps(pcm)]


def rtsp_offsets(work, rtsp_port):
    """Each beep's offset (ms) from the whole second in 4 s of RTSP as ffmpeg lines it up."""
    mkv = work / "rtsp.mkv"
    subprocess.run(["ffmpeg", "-v", "error", "-rtsp_transport", "tcp", "-i", f"rtsp://127.0.0.1:{rtsp_port}/tc", "-t", "4",
                    "-c", "copy", "-y", str(mkv)], check=True, capture_output=True, timeout=60)
    return framed_offsets(mkv)


def framed_offsets(path):
    """Each beep's offset (ms) from the whole second in the file at `path`, measured against
    the frame nearest it: that frame's capture time (its timecode) plus the distance from its
    time to the beep's. For a stream joined midway or a piece cut from a movie, whose first
    frame need not be at time 0; the first frame (a keyframe replayed to a joining client)
    is left out."""
    rows = max(8, H // 45)  # the timecode's cells only: a minute of whole frames is gigabytes
    gray = subprocess.run(["ffmpeg", "-v", "error", "-i", str(path), "-vsync", "passthrough", "-vf", f"crop={W}:{rows}:0:0",
                           "-f", "rawvideo", "-pix_fmt", "gray", "-"], capture_output=True, check=True).stdout
    probe = subprocess.run(["ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries", "frame=best_effort_timestamp_time",
                            "-of", "csv=p=0", str(path)], capture_output=True, check=True, text=True).stdout
    times = [float(line.split(",")[0]) for line in probe.splitlines() if line.split(",")[0].strip()]
    size = W * rows
    frames = [(times[k], timecode(gray[k * size:(k + 1) * size]) / 1000) for k in range(1, min(len(gray) // size, len(times)))]
    pcm = subprocess.run(["ffmpeg", "-v", "error", "-i", str(path), "-map", "0:a:0", "-af",
                          "aresample=async=1:min_hard_comp=0.001:first_pts=0", "-f", "s16le", "-ac", "1", "-"],
                         capture_output=True, check=True).stdout
    out = []  # `first_pts=0`: the samples begin at the file's time 0, as the frames' times do
    for t in beeps(pcm):
        pts, captured = min(frames, key=lambda f: abs(f[0] - t))
        heard = captured + t - pts
        out.append((heard - round(heard)) * 1000)
    return out


def live_offsets(work, port, seconds=4.0):
    """Each beep's offset (ms) from the whole second in `seconds` of live.mp4."""
    import socket
    with socket.create_connection(("127.0.0.1", port), timeout=10) as c:
        c.sendall(b"GET /live.mp4 HTTP/1.1\r\nHost: bench\r\n\r\n")
        data, deadline = b"", time.monotonic() + seconds
        while time.monotonic() < deadline:
            data += c.recv(1 << 16)
    body = data[data.index(b"\r\n\r\n") + 4:]
    # Chunked transfer: the chunks' bytes, in order.
    stream, i = b"", 0
    while True:
        end = body.find(b"\r\n", i)
        if end < 0:
            break
        size = int(body[i:end].split(b";")[0], 16)
        if size == 0 or end + 2 + size > len(body):
            stream += body[end + 2:end + 2 + size]
            break
        stream += body[end + 2:end + 2 + size]
        i = end + 2 + size + 2
    whole, k = 0, 0
    while k + 8 <= len(stream):
        n = int.from_bytes(stream[k:k + 4], "big")
        if n < 8 or k + n > len(stream):
            break
        k += n
        whole = k
    mp4 = work / "live.mp4"
    mp4.write_bytes(stream[:whole])
    return offsets(mp4)


PLAYOUT = r"""
const [count, done] = [arguments[0], arguments[arguments.length - 1]];
document.getElementById('live').muted = false;  // the Listen button: a muted track is not played out
const rows = [];
let first = null;
const step = async () => {
  const s = await window.viewfinderPreview.soundStats();
  if (s && s.soundAgeMs !== null && s.pictureAgeMs !== null) {
    first = first || s;
    rows.push([s.soundAgeMs, s.pictureAgeMs]);
  }
  if (rows.length < count) { setTimeout(step, 100); return; }
  // Chromium's jitter buffer over the same samples: its mean hold per sample emitted (ms).
  const held = (s.jitterBufferDelay - first.jitterBufferDelay) / Math.max(1, s.jitterBufferEmitted - first.jitterBufferEmitted);
  // …and the audio device's playout delay, its mean over the samples it played meanwhile.
  const played = s.playoutDelay == null ? null
    : (s.playoutDelay - first.playoutDelay) / Math.max(1, s.playoutSamples - first.playoutSamples);
  done({rows, jitterMs: held * 1000, playoutMs: played == null ? null : played * 1000});
};
step();
"""


def webrtc_playout(port, samples=100):
    """([(sound's age, picture's age)], the jitter buffer's mean hold, the audio device's mean
    playout delay or None) in ms at Chromium, the page's WebRTC preview unmuted: each age an
    inbound track's estimatedPlayoutTimestamp (the sender's capture time, mapped through its
    sender reports, of what the track plays now) against the clock, every 100 ms after the
    first 5 s (Chromium's A/V sync settles)."""
    from live import browser
    d = browser()
    try:
        d.get(f"http://127.0.0.1:{port}/")
        wait_until(lambda: d.execute_script("return window.viewfinderPreview && window.viewfinderPreview.transport()"),
                   lambda t: t == "WebRTC", lambda t: f"the page's preview is {t}, not WebRTC", timeout=20)
        d.set_script_timeout(60)
        d.execute_async_script(PLAYOUT, 50)  # 5 s: unmuted, played out, A/V sync settled
        r = d.execute_async_script(PLAYOUT, samples)
        return r["rows"], r["jitterMs"], r["playoutMs"]
    finally:
        d.quit()


def record(p, port, audio):
    """A movie of SECONDS with or without sound: (the server's CPU in % of a core over the
    window, the movie's record)."""
    post(port, "/api/session/recording/start", {"audio": audio})
    time.sleep(1.0)  # the encoders' set-up, outside the window
    c0, t0 = cpu_seconds(p.pid), time.monotonic()
    time.sleep(SECONDS)
    c1, t1 = cpu_seconds(p.pid), time.monotonic()
    status, movie = request(port, "/api/session/recording/stop", b"")
    if status != 201:
        raise RuntimeError(f"recording/stop: {status} {movie}")
    return (c1 - c0) / (t1 - t0) * 100, movie


def reference(work, port):
    """FFmpeg's CLI on SECONDS of the synthetic microphone: CPU seconds per second of sound.
    Also each encode alone, the server's (viewfinder-bench audio) beside the CLI's, on a
    minute of that sound: {codec: (ours, CLI's)} in CPU seconds per second."""
    wav = work / "mic.wav"
    wav.write_bytes(get(port, f"/audio.wav?seconds={SECONDS:g}", timeout=SECONDS + 10))

    def cpu(seconds, source, codec, raw=()):
        """FFmpeg's CLI encoding `seconds` of `source` with `codec`: its CPU seconds."""
        c, out = child_cpu(["ffmpeg", "-v", "error", *raw, "-t", f"{seconds:g}", "-i", str(source), *codec,
                            "-f", "null", "-"], capture_output=True)
        if out.returncode != 0:
            raise RuntimeError(f"ffmpeg: {out.stderr.decode()}")
        return c
    aac = ("-c:a", "aac", "-b:a", "64k")
    recording = (cpu(SECONDS, wav, aac) - cpu(1, wav, aac)) / (SECONDS - 1)
    # A minute: the clip ten times over (an encode of 6 s is a few tens of milliseconds).
    pcm = wav.read_bytes()[44:] * max(1, round(60 / SECONDS))
    minute = work / "mic-minute.s16"
    minute.write_bytes(pcm)
    length = len(pcm) / 96_000
    raw = ("-f", "s16le", "-ar", "48000", "-ac", "1")
    alone = {}
    for codec, cli in (("aac", aac),
                       ("opus", ("-c:a", "libopus", "-b:a", "32k", "-application", "lowdelay", "-frame_duration", "10"))):
        out = subprocess.run([str(BENCH), "audio", str(minute), codec], capture_output=True, text=True, check=True)
        ours = json.loads(out.stdout.strip().splitlines()[-1])["cpuSeconds"] / length
        alone[codec] = (ours, (cpu(length, minute, cli, raw) - cpu(1, minute, cli, raw)) / (length - 1))
    return recording, alone


def capture_cost(work):
    """The microphone's capture alone (% of a core): a server running the camera with its
    microphone and nothing consuming either, less the same server with `"audio": null`, over
    CAPTURE_WINDOW s each (after 3 s of start-up)."""
    def idle(microphone):
        p, _ = start(work, microphone)
        try:
            time.sleep(3)
            c0, t0 = cpu_seconds(p.pid), time.monotonic()
            time.sleep(CAPTURE_WINDOW)
            return (cpu_seconds(p.pid) - c0) / (time.monotonic() - t0) * 100
        finally:
            stop_server(p)
    return idle(True) - idle(False)


def bench():
    runs = []
    with tempfile.TemporaryDirectory(prefix="viewfinder-sound-") as tmp:
        work = Path(tmp)
        p, port = start(work)
        try:
            for _ in range(RUNS):
                mute, _ = record(p, port, False)
                loud, movie = record(p, port, True)
                if not movie.get("audio"):
                    raise RuntimeError(f"the movie has no sound: {movie}")
                found = offsets(work / "movies" / f"{movie['id']}.mp4")
                recording, alone = reference(work, port)
                runs.append(dict(cost=loud - mute, offsets=found, reference=recording, alone=alone,
                                 rtsp=rtsp_offsets(work, RTSP_PORT), live=live_offsets(work, port)))
            # After every recording: a WebRTC session lives on in the server for a while after
            # its browser quits (until ICE gives up), and would be counted in a mute window.
            for r in runs:
                r["webrtc"], r["jitter"], r["playout"] = webrtc_playout(port)
        finally:
            stop_server(p)
        for r in runs:
            r["capture"] = capture_cost(work)
    return runs


def fmt(x):
    return "–" if x is None else f"{x:.1f}"


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(len(xs) * p / 100))]


def main():
    runs, started, load, took = timed(bench)
    med = statistics.median
    every = [o for r in runs for o in r["offsets"]]
    rtsp = [o for r in runs for o in r["rtsp"]]
    live = [o for r in runs for o in r["live"]]
    cost = med(r["cost"] for r in runs)
    # Per run, the p50 of its samples: the sound's age, the picture's, and the sound's lag behind it.
    sound_age = med(med(a for a, _ in r["webrtc"]) for r in runs)
    picture_age = med(med(v for _, v in r["webrtc"]) for r in runs)
    lag = med(med(a - v for a, v in r["webrtc"]) for r in runs)
    lags = [a - v for r in runs for a, v in r["webrtc"]]
    jitter = med(r["jitter"] for r in runs)
    playouts = [r["playout"] for r in runs if r["playout"] is not None]
    playout = med(playouts) if playouts else None
    # What is left once Chromium's own holds are taken off: capture → arrival at the client.
    arrival = sound_age - jitter - (playout or 0)
    ref = med(r["reference"] for r in runs) * 100  # % of a core
    aac = [med(r["alone"]["aac"][k] for r in runs) * 100 for k in (0, 1)]
    opus = [med(r["alone"]["opus"][k] for r in runs) * 100 for k in (0, 1)]
    capture = med(r["capture"] for r in runs)
    section = [
        HEADING, "",
        written_by("sound.py", started, load, took), "",
        f"{RUNS} runs; each records {SECONDS:g} s without sound and {SECONDS:g} s with it on one server "
        "(`python3 bench/sound.py`; the method is its docstring).", "",
        "| figure | Viewfinder | reference | ratio |",
        "|---|---|---|---|",
        f"| A/V offset, median of {len(every)} beeps (ms; + is late) | {med(every):+.2f} | 0 (the frame whose timecode crosses the second) | — |",
        f"| A/V offset, range (ms) | {min(every):+.2f} … {max(every):+.2f} | | |",
        f"| live.mp4 A/V offset as ffmpeg plays it, median of {len(live)} beeps (ms) | {med(live):+.2f} | 0 | — |",
        f"| live.mp4 A/V offset, range (ms) | {min(live):+.2f} … {max(live):+.2f} | | |",
        f"| RTSP A/V offset as ffmpeg lines it up, median of {len(rtsp)} beeps (ms) | {med(rtsp):+.2f} | 0 | — |",
        f"| RTSP A/V offset, range (ms) | {min(rtsp):+.2f} … {max(rtsp):+.2f} | | |",
        f"| WebRTC at Chromium: the sound played after the picture of the same instant, p50 (ms) | {lag:+.1f} | 0 | — |",
        f"| WebRTC at Chromium: that lag, p5 … p95 of {len(lags)} samples (ms) | {pct(lags, 5):+.1f} … {pct(lags, 95):+.1f} | | |",
        f"| WebRTC at Chromium: capture → played, the sound, p50 (ms) | {sound_age:.1f} | {picture_age:.1f} (the picture, same client) "
        f"| {sound_age / picture_age if picture_age > 0 else float('nan'):.2f} |",
        f"| … of which Chromium's jitter buffer held it (mean, ms) | {jitter:.1f} | | |",
        f"| … and its audio device's playout delay (mean, ms) | {fmt(playout)} | | |",
        f"| WebRTC: capture → arrival at Chromium, the sound (p50 age less those two, ms) | {arrival:.1f} | | |",
        f"| the sound's cost in a recording (% of one core) | {cost:.2f} | {ref:.2f} (`ffmpeg -c:a aac -b:a 64k`, same sound) "
        f"| {cost / ref if ref > 0 else float('nan'):.2f} |",
        f"| the AAC encode alone, 64 kbit/s (% of one core) | {aac[0]:.2f} | {aac[1]:.2f} (the same CLI, a minute of the sound) "
        f"| {aac[0] / aac[1] if aac[1] > 0 else float('nan'):.2f} |",
        f"| the Opus encode alone, WebRTC's: 32 kbit/s, 10 ms frames (% of one core) | {opus[0]:.2f} | {opus[1]:.2f} "
        "(`ffmpeg -c:a libopus -b:a 32k -application lowdelay -frame_duration 10`, a minute of the sound) "
        f"| {opus[0] / opus[1] if opus[1] > 0 else float('nan'):.2f} |",
        f"| capturing the microphone, nothing consuming it (% of one core) | {capture:.2f} | | |",
        f"| a camera's sound: capture + AAC + Opus, each alone (% of one core) | {capture + aac[0] + opus[0]:.2f} "
        f"| {aac[1] + opus[1]:.2f} (the two CLIs' encodes) | |",
        "",
        "Per run (cost % of a core; offsets ms): " + "; ".join(
            f"{r['cost']:.2f} ({', '.join(f'{o:+.1f}' for o in r['offsets'])})" for r in runs) + ".",
        "",
    ]
    publish("sound.py", section, took)


if __name__ == "__main__":
    main()
