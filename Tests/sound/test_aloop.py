#!/usr/bin/python3
"""`make test-alsa`: a microphone on a real ALSA driver (issue 37, item 6). The kernel's
snd-aloop is a sound card whose playback side comes back on its capture side: a known
signal played into `hw:Loopback,0` (aplay) is what a camera configured with
`"audio": "hw:CARD=Loopback,DEV=1,SUBDEV=0"` captures. Checked through the server as clients
see it: the state (running, the format the card gave, no error), the camera list (the card's
rates and channels), `audio.wav` (the tone's frequency and level in the captured PCM), the
digital gain, mute (silence), level events, and the refusals — a busy subdevice and a card
that does not exist each leave their camera's picture running and say why. Talk-back the
other way: the camera's speaker is the loopback's second playback subdevice, a WHIP talker
(GStreamer's webrtcbin sending a 440 Hz sine as Opus) talks to it, and arecord on the
matching capture subdevice hears the tone; with the subdevice held by aplay, the offer gets
503 `speaker_unavailable` naming ALSA's reason.

Runs where snd-aloop can be loaded (root): inside `scripts/vm`. Standard library only, plus
aplay (alsa-utils). Every wait polls against a deadline. Prints PASS/FAIL per check and
`N passed, N failed`; exits 1 when anything failed.
"""
import json
import math
import os
import struct
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "vm"))
import vmtest  # noqa: E402
from vmtest import check, poll  # noqa: E402
CAPTURE = "hw:CARD=Loopback,DEV=1,SUBDEV=0"
PLAYBACK = "hw:CARD=Loopback,DEV=0,SUBDEV=0"
SPEAKER = "hw:CARD=Loopback,DEV=0,SUBDEV=1"
SPEAKER_CAPTURE = "hw:CARD=Loopback,DEV=1,SUBDEV=1"
TALK_HZ = 440
TONE_HZ, TONE_DBFS = 1000, -12.0


def http(port, method, path, body=None, timeout=20):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request("http://127.0.0.1:%d%s" % (port, path), data=data, method=method,
                                 headers={"Content-Type": "application/json"} if data else {})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()


def state(port, camera):
    _, _, body = http(port, "GET", "/api/cameras/%s/session" % camera)
    return json.loads(body)


def tone_wav(path, seconds):
    """A 48 kHz stereo 16-bit WAV of the tone (what aplay plays into the loopback): one
    period (48 samples at 1 kHz) repeated, long enough that aplay never restarts mid-test."""
    amp = 32767 * 10 ** (TONE_DBFS / 20)
    period = 48000 // TONE_HZ
    one = b"".join(struct.pack("<hh", v, v) for v in
                   (int(amp * math.sin(2 * math.pi * i / period)) for i in range(period)))
    pcm = one * (int(48000 * seconds) // period)
    with open(path, "wb") as f:
        f.write(b"RIFF" + struct.pack("<I", 36 + len(pcm)) + b"WAVEfmt " +
                struct.pack("<IHHIIHH", 16, 1, 2, 48000, 48000 * 4, 4, 16) + b"data" + struct.pack("<I", len(pcm)) + pcm)


def samples(wav):
    """The first channel's samples of a 16-bit WAV body (its 44-byte header skipped)."""
    channels = struct.unpack("<H", wav[22:24])[0]
    count = (len(wav) - 44) // 2
    values = struct.unpack("<%dh" % count, wav[44:44 + 2 * count])
    return list(values[::channels]), channels, struct.unpack("<I", wav[24:28])[0]


def loudest(clips):
    """The clip with the most sound in it."""
    return max(clips, key=sounding)


def tone_stretches(values):
    """The stretches of sound in `values`, as (start, end) sample indices: runs of samples
    above -50 dBFS, each ended by 5 ms of quiet. In a VM without KVM a player falls behind now
    and then and the card plays silence meanwhile (the longest unbroken stretch was at times
    shorter than 50 ms)."""
    stretches, start, quiet = [], None, 0
    for i, v in enumerate(values + [0] * 241):
        if abs(v) > 100:
            if start is None:
                start = i
            quiet = 0
        elif start is not None:
            quiet += 1
            if quiet > 240:
                stretches.append((start, i - quiet))
                start, quiet = None, 0
    return stretches


def tone_frequency(values, rate):
    """The tone's frequency: the median length of its periods (between rising zero crossings,
    placed between samples by interpolation) within the stretches of sound; 0 when they hold
    less than 50 ms of it. A median, not crossings over time: under an emulated VM's load the
    talk path drops late packets and buffers (its jitter buffer, its appsink), and each splice
    inside a stretch would otherwise count as extra periods (440 Hz measured as 452)."""
    periods, span = [], 0
    for start, end in tone_stretches(values):
        crossings = [k - 1 + values[k - 1] / (values[k - 1] - values[k])
                     for k in range(start + 1, end) if values[k - 1] < 0 <= values[k]]
        periods += [b - a for a, b in zip(crossings, crossings[1:])]
        span += crossings[-1] - crossings[0] if len(crossings) >= 2 else 0
    if span < rate // 20:
        return 0.0
    periods.sort()
    return rate / periods[len(periods) // 2]


def sounding(values):
    """Samples within stretches of sound."""
    return sum(end - start for start, end in tone_stretches(values))


def start_server(tmp):
    cameras = [{"id": "loop", "source": "synthetic", "position": "rear", "audio": CAPTURE, "speaker": SPEAKER, "autostart": True},
               {"id": "busy", "source": "synthetic", "position": "front", "audio": CAPTURE},
               {"id": "none", "source": "synthetic", "position": "external", "audio": "hw:CARD=NoSuchCard,DEV=0"}]
    p, ports = vmtest.start_server(tmp, {
        "cameras": cameras, "session": {"preset": "352x288", "camera": "loop"},
        "synthetic": {"noise": False}, "rtsp": {"enabled": False},
        "capture": {"directory": os.path.join(tmp, "p")}, "recording": {"directory": os.path.join(tmp, "m")}})
    if "http" not in ports:
        p.kill()
        sys.exit("the server did not start: " + vmtest.server_log(tmp))
    return p, ports["http"]


def talk(port, listen=None):
    """A WHIP talker: webrtcbin sending a 440 Hz sine as Opus to camera `loop`'s speaker; once
    connected (DTLS in an emulated VM takes seconds), `listen()` runs while it talks, then
    DELETE. Answers the POST's status, its body (the error when refused), and what `listen`
    answered (None when the talk never connected)."""
    import gi
    gi.require_version("Gst", "1.0")
    gi.require_version("GstWebRTC", "1.0")
    gi.require_version("GstSdp", "1.0")
    from gi.repository import Gst, GstSdp, GstWebRTC
    Gst.init(None)
    pipe = Gst.parse_launch(
        "audiotestsrc is-live=true wave=sine freq=%d volume=0.25 ! audioconvert ! audioresample "
        "! audio/x-raw,rate=48000,channels=1 ! opusenc ! rtpopuspay pt=111 "
        "! application/x-rtp,media=audio,encoding-name=OPUS,payload=111,clock-rate=48000 ! webrtcbin name=w bundle-policy=max-bundle"
        % TALK_HZ)
    w = pipe.get_by_name("w")
    # An offer is made once webrtcbin asks for one and its stream's caps have come (an offer
    # made before has no SDP).
    needed = threading.Event()
    w.connect("on-negotiation-needed", lambda *_: needed.set())
    pipe.set_state(Gst.State.PLAYING)
    try:
        pad = w.get_static_pad("sink_0")
        if not needed.wait(10) or not poll(lambda: pad.get_current_caps(), 10, 0.05):
            return 0, "webrtcbin never got its stream's caps", None
        made = Gst.Promise.new()
        w.emit("create-offer", None, made)
        made.wait()
        reply = made.get_reply()  # owns the offer: kept while it is used
        offer = reply.get_value("offer")
        local = Gst.Promise.new()
        w.emit("set-local-description", offer, local)
        local.wait()
        poll(lambda: w.get_property("ice-gathering-state") == GstWebRTC.WebRTCICEGatheringState.COMPLETE, 3, 0.05)
        sdp = w.get_property("local-description").sdp.as_text()
        req = urllib.request.Request("http://127.0.0.1:%d/api/cameras/loop/talk" % port, data=sdp.encode(), method="POST",
                                     headers={"Content-Type": "application/sdp"})
        try:
            with urllib.request.urlopen(req, timeout=20) as r:
                status, location, answer = r.status, r.headers["Location"], r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode(), None
        _, message = GstSdp.SDPMessage.new_from_text(answer)
        remote = Gst.Promise.new()
        w.emit("set-remote-description", GstWebRTC.WebRTCSessionDescription.new(GstWebRTC.WebRTCSDPType.ANSWER, message), remote)
        remote.wait()
        connected = poll(lambda: w.get_property("connection-state") == GstWebRTC.WebRTCPeerConnectionState.CONNECTED, 60, 0.1)
        heard = listen() if connected and listen else None
        http(port, "DELETE", location)
        return status, answer, heard
    finally:
        pipe.set_state(Gst.State.NULL)


def main():
    # libnice gathers no candidate on loopback, the VM's only interface: a dummy interface
    # gives the talker one (its checks reach the server's 127.0.0.1 through the local table).
    if os.environ.get("VIEWFINDER_VM") and not os.path.exists("/sys/class/net/vf-talk0"):
        subprocess.run(["modprobe", "dummy"], check=False)
        for args in (["link", "add", "vf-talk0", "type", "dummy"], ["addr", "add", "10.77.0.1/24", "dev", "vf-talk0"],
                     ["link", "set", "vf-talk0", "up"]):
            subprocess.run(["ip"] + args, check=False)
    if not os.path.isdir("/proc/asound/Loopback"):
        subprocess.run(["modprobe", "snd-aloop", "pcm_substreams=2"], check=True)
    poll(lambda: os.path.isdir("/proc/asound/Loopback"), 10)
    tmp = tempfile.mkdtemp(prefix="vf-aloop-")
    wav = os.path.join(tmp, "tone.wav")
    tone_wav(wav, 120)
    # The tone, for longer than the test, into the loopback's playback side, a second ahead
    # (a buffer of 1 s: a VM without KVM stalls the player for longer than its default half).
    player = subprocess.Popen(["sh", "-c", "while :; do aplay -q -D %s -B 1000000 %s || sleep 0.2; done" % (PLAYBACK, wav)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    server, port = start_server(tmp)
    try:
        s = poll(lambda: (lambda st: st if st["audio"] and st["audio"]["running"] else None)(state(port, "loop")), 20)
        check("the loopback's capture side runs as the camera's microphone", bool(s), state(port, "loop")["audio"])
        if s:
            check("the state names the device and the format the card gave",
                  s["audio"]["device"] == CAPTURE and s["audio"]["format"]["sampleRate"] == 48000 and s["audio"]["error"] is None,
                  s["audio"])
        _, _, body = http(port, "GET", "/api/cameras")
        listed = {c["id"]: c.get("audio") for c in json.loads(body)["cameras"]}
        check("the camera list has the card's rates and channels",
              listed["loop"] and 48000 in listed["loop"].get("rates", []) and listed["loop"].get("channels"), listed["loop"])

        # In a VM without KVM the player falls behind now and then and the card plays silence
        # meanwhile: a measurement of the tone takes the loudest of three clips.
        asked = time.time()
        status, headers, clip = http(port, "GET", "/cameras/loop/audio.wav?seconds=1")
        answered = time.time()
        check("audio.wav answers a clip", status == 200 and clip[:4] == b"RIFF", status)
        if status == 200:
            values, channels, rate = samples(clip)
            check("a clip of exactly one second", len(values) == rate, (len(values), rate))
            stamp = float(headers.get("X-Timestamp", "0"))
            check("X-Timestamp is the capture time of the first sample (after the request, before the answer)",
                  asked - 0.5 <= stamp <= answered, (stamp - asked, answered - asked))
            # The tone is measured in a clip that holds a quarter second of it: up to eight
            # clips are taken until one does (the player's underruns under TCG are silence on
            # the card, not the server's). Each clip's sound and the server's overrun count are
            # printed, so that a failure says which side went quiet.
            clips = [values]
            while sounding(clips[-1]) < rate // 4 and len(clips) < 8:
                clips.append(samples(http(port, "GET", "/cameras/loop/audio.wav?seconds=1")[2])[0])
            values = loudest(clips)
            level = 20 * math.log10((max(abs(v) for v in values) or 1) / 32768)
            hz = tone_frequency(values, rate)
            print("      clips' sound (ms): %s; the server's overruns: %s" % (
                [round(sounding(c) * 1000 / rate) for c in clips], state(port, "loop")["audio"].get("overruns")))
            check("the tone played in is the tone captured: %.1f dBFS, %.0f Hz" % (level, hz),
                  abs(level - TONE_DBFS) < 1.0 and abs(hz - TONE_HZ) <= 10, (level, hz))

        status, _, body = http(port, "POST", "/api/cameras/loop/session/audio", {"gainDb": 6})
        gained = json.loads(body)["audio"] if status == 200 else {}
        check("the loopback has no capture volume: a digital gain", gained.get("gainControl") == "digital" and gained.get("gainDb") == 6, gained)
        values = loudest([samples(http(port, "GET", "/cameras/loop/audio.wav?seconds=0.5")[2])[0] for _ in range(3)])
        level = 20 * math.log10((max(abs(v) for v in values) or 1) / 32768)
        check("+6 dB on the captured tone: %.1f dBFS" % level, abs(level - (TONE_DBFS + 6)) < 1.0, level)
        http(port, "POST", "/api/cameras/loop/session/audio", {"gainDb": 0, "muted": True})
        _, _, clip = http(port, "GET", "/cameras/loop/audio.wav?seconds=0.5")
        values, _, _ = samples(clip)
        check("muted: silence, as long as asked", max(abs(v) for v in values) == 0 and len(values) == 24000, len(values))
        http(port, "POST", "/api/cameras/loop/session/audio", {"muted": False})

        # A busy subdevice and a card that is not there: the picture runs, the error says why.
        for camera, why in (("busy", "busy"), ("none", "snd_pcm_open hw:CARD=NoSuchCard,DEV=0")):
            http(port, "POST", "/api/cameras/%s/session/start" % camera)
            st = poll(lambda: (lambda x: x if x["audio"]["error"] else None)(state(port, camera)), 10)
            check("%s: the camera runs without sound and says why" % camera,
                  st and st["state"] == "running" and not st["audio"]["running"] and why in st["audio"]["error"], st and st["audio"])
        check("the loopback's camera kept its sound", state(port, "loop")["audio"]["running"])
        # Stopped, they give up the card: `busy` would take the subdevice the moment `loop` lets go.
        for camera in ("busy", "none"):
            http(port, "POST", "/api/cameras/%s/session/stop" % camera)

        # Stopping the camera closes the card (another program can open it); starting opens it again.
        http(port, "POST", "/api/cameras/loop/session/stop")
        probe = subprocess.run(["arecord", "-q", "-D", CAPTURE, "-f", "S16_LE", "-r", "48000", "-c", "2", "-d", "1", "/dev/null"],
                               capture_output=True, timeout=20)
        check("a stopped camera leaves the card free (arecord opens it)", probe.returncode == 0, probe.stderr[-300:])
        http(port, "POST", "/api/cameras/loop/session/start")
        check("started again, the microphone is back",
              poll(lambda: state(port, "loop")["audio"]["running"], 10))

        # Talk-back: a WHIP talker's voice on the camera's ALSA speaker, heard on the loopback.
        _, _, body = http(port, "GET", "/api/cameras")
        speaker = {c["id"]: c.get("speaker") for c in json.loads(body)["cameras"]}["loop"]
        check("the camera list names its speaker", speaker == {"device": SPEAKER, "talking": False}, speaker)
        heard = os.path.join(tmp, "heard.wav")

        def listen():
            # Three seconds of the speaker, from the loopback's capture side of its subdevice.
            subprocess.run(["arecord", "-q", "-D", SPEAKER_CAPTURE, "-f", "S16_LE", "-r", "48000", "-c", "2", "-d", "3", heard],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=30)
            return open(heard, "rb").read() if os.path.exists(heard) else b""
        status, answer, wav = talk(port, listen)
        check("the talker's offer is answered (receiving Opus)", status == 201 and "a=recvonly" in answer, (status, answer[-300:]))
        check("the talker connects", wav is not None)
        values, channels, rate = samples(wav) if wav and len(wav) > 44 else ([], 2, 48000)
        loud = [v for v in values if abs(v) > 1000]
        hz = tone_frequency(values, rate) if loud else 0
        # Half of the three seconds at least: an emulated VM decodes slower than real time at times.
        check("the speaker played the talker's tone: %.0f Hz, %d loud samples" % (hz, len(loud)),
              len(loud) > rate // 2 and abs(hz - TALK_HZ) <= 10, (hz, len(loud)))
        check("the talk ended with the DELETE", poll(lambda: not {c["id"]: c.get("speaker") for c in
                                                             json.loads(http(port, "GET", "/api/cameras")[2])["cameras"]}["loop"]["talking"], 10))
        # The speaker's subdevice held by another program: the offer is refused, naming why.
        holder = subprocess.Popen(["aplay", "-q", "-D", SPEAKER, "-f", "S16_LE", "-r", "48000", "-c", "2", "-d", "30", "/dev/zero"],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            time.sleep(0.5)  # aplay opening the device: nothing to wait on but its open
            status, body, _ = talk(port)
            check("a busy speaker refuses the talk: 503 speaker_unavailable", status == 503 and "speaker_unavailable" in body, (status, body))
        finally:
            holder.kill()
    finally:
        server.terminate()
        try:
            server.wait(10)
        except subprocess.TimeoutExpired:
            server.kill()
        player.kill()
        subprocess.run(["pkill", "-f", "aplay -q -D %s" % PLAYBACK])
    sys.exit(vmtest.summary())


if __name__ == "__main__":
    main()
