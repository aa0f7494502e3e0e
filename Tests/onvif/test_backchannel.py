#!/usr/bin/env python3
"""ONVIF's audio backchannel (issue 39): a client that sends `Require:
www.onvif.org/ver20/backchannel` with its DESCRIBE of a camera's RTSP path gets, beside the
picture, an SDP section it sends into (`a=sendonly`, G.711 µ-law at 8 kHz), and what it says
plays on the camera's speaker — one talker a camera, over RTSP or WHIP alike.

The talker is GStreamer's own ONVIF client, rtspsrc with `backchannel=onvif`, sending a tone
by its `push-backchannel-sample` signal (talker.c), over TCP and over UDP; the synthetic speaker keeps
what it played (`speaker.wav`), whose pitch is measured. Raw DESCRIBEs check the answers a
client that may not talk gets: a second talker (503), a viewer (403), a camera without a
speaker or a path of pictures alone (551, Option Not Supported), an unknown requirement (551)."""
import array
import base64
import json
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

from pathlib import Path

from harness import PASSWORD, ROOT, check, served, summary

HERE = Path(__file__).resolve().parent

CONFIG = {
    "server": {"host": "127.0.0.1", "port": 0, "publicDirectory": str(ROOT / "Public")},
    "cameras": [{"id": "rear", "source": "synthetic", "position": "rear"},
                {"id": "mute", "source": "synthetic", "position": "front", "speaker": None}],
    "session": {"preset": "640x480", "fps": 15}, "synthetic": {"noise": False}, "rtsp": {"port": 0}}
USERS = [("boss", "operator", False), ("eve", "viewer", False)]
BACKCHANNEL = "www.onvif.org/ver20/backchannel"


def basic(user):
    return "Basic " + base64.b64encode(("%s:%s" % (user, PASSWORD)).encode()).decode()


def api(port, path, method="GET", body=None, user="boss", type="application/json"):
    """(status, body bytes) of an HTTP request signed in as `user`."""
    req = urllib.request.Request("http://127.0.0.1:%d%s" % (port, path), data=body, method=method,
                                 headers={"Authorization": basic(user), "Content-Type": type})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def talking(port, camera="rear"):
    cameras = json.loads(api(port, "/api/cameras")[1])["cameras"]
    return next(c for c in cameras if c["id"] == camera).get("speaker", {}).get("talking")


def poll(fn, timeout):
    """Whether fn() became true within `timeout` seconds (checked every 100 ms)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if fn():
            return True
        time.sleep(0.1)
    return bool(fn())


class Describe:
    """A raw DESCRIBE on a connection of its own, kept open until close(): status, headers, body."""

    def __init__(self, port, path, user="boss", require=BACKCHANNEL):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        lines = ["DESCRIBE rtsp://127.0.0.1:%d%s RTSP/1.0" % (port, path), "CSeq: 1", "Accept: application/sdp"]
        if user:
            lines.append("Authorization: " + basic(user))
        if require:
            lines.append("Require: " + require)
        self.sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = self.sock.recv(4096)
            if not chunk:
                break
            data += chunk
        head, _, body = data.partition(b"\r\n\r\n")
        lines = head.decode(errors="replace").split("\r\n")
        self.status = int(lines[0].split()[1]) if lines and len(lines[0].split()) > 1 else 0
        self.headers = {k.strip().lower(): v.strip() for k, _, v in (l.partition(":") for l in lines[1:])}
        length = int(self.headers.get("content-length", "0"))
        while len(body) < length:
            chunk = self.sock.recv(4096)
            if not chunk:
                break
            body += chunk
        self.sdp = body.decode(errors="replace")

    def close(self):
        self.sock.close()


def build_talker(tmp):
    """Tests/onvif/talker.c built against this machine's GStreamer: its path."""
    out = tmp / "talker"
    flags = subprocess.run(["pkg-config", "--cflags", "--libs", "gstreamer-1.0", "gstreamer-app-1.0"],
                           capture_output=True, text=True, check=True).stdout.split()
    subprocess.run(["gcc", "-O1", "-Wall", "-o", str(out), str(HERE / "talker.c")] + flags, check=True)
    return out


def pitch(samples, rate=48000):
    """(Hz from the rising zero crossings, peak) of the samples."""
    rising = sum(1 for a, b in zip(samples, samples[1:]) if a < 0 <= b)
    return rising / (len(samples) / rate), max((abs(v) for v in samples), default=0)


def talk(talker, port, rtsp, path, hz, protocols):
    """GStreamer's rtspsrc talking a tone of `hz` into `path` for eight seconds. While it talks:
    waits (15 s at most) for the last second the speaker played to be loud, and reads then its
    pitch and whether the camera says someone talks. (its JSON report, Hz heard, peak, talking)."""
    p = subprocess.Popen([str(talker), "rtsp://127.0.0.1:%d%s" % (rtsp, path), "boss", PASSWORD, str(hz), "8", protocols],
                         stdout=subprocess.PIPE, text=True)
    heard = {"hz": 0.0, "peak": 0, "talking": None}

    def loud():
        status, wav = api(port, "/api/cameras/rear/speaker.wav?seconds=1")
        samples = array.array("h", wav[44:]) if status == 200 else array.array("h")
        if len(samples) < 24000:
            return False
        heard["hz"], heard["peak"] = pitch(samples)
        heard["talking"] = talking(port)
        return heard["peak"] > 3000 and abs(heard["hz"] - hz) < 0.05 * hz
    poll(loud, 15)
    try:
        out, _ = p.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        p.kill()
        out, _ = p.communicate()
    report = json.loads(out.strip().splitlines()[-1]) if out.strip() else {}
    return report, heard["hz"], heard["peak"], heard["talking"]


def main():
    with served("backchannel", CONFIG, USERS) as (tmp, p, port, rtsp):
        # What a talker is offered: the picture, and a G.711 section it sends into.
        d = Describe(rtsp, "/rear")
        check("DESCRIBE with Require: backchannel is answered 200", d.status == 200, (d.status, d.headers))
        sections = d.sdp.split("\r\nm=")[1:]
        back = [s for s in sections if "a=sendonly" in s]
        check("its SDP has one section the client sends into: G.711 µ-law at 8 kHz",
              len(back) == 1 and back[0].startswith("audio ") and "PCMU/8000" in back[0], d.sdp)
        check("the picture is still the camera's H.264, for the client to receive",
              any(s.startswith("video ") and "H264/90000" in s and "a=recvonly" in s for s in sections), d.sdp)
        check("the speaker is taken from the DESCRIBE on", talking(port) is True, talking(port))
        # A second talker while the first holds it; a viewer beside it is served.
        second = Describe(rtsp, "/rear")
        check("a second talker is refused: 503", second.status == 503, (second.status, second.sdp[:200]))
        second.close()
        viewer = Describe(rtsp, "/rear", require=None)
        check("a viewer (no Require) is served beside the talker", viewer.status == 200 and "a=sendonly" not in viewer.sdp,
              (viewer.status, viewer.sdp))
        viewer.close()
        status, body = api(port, "/api/cameras/rear/talk", "POST", b"v=0\r\n", type="application/sdp")
        check("WHIP's talk route finds the camera busy too: 409 talk_busy", status == 409 and b"talk_busy" in body, (status, body))
        d.close()
        check("the talker that left after its DESCRIBE frees the speaker", poll(lambda: talking(port) is False, 10), talking(port))

        # Who may not talk, and where nobody can.
        refusals = [("a viewer", "/rear", "eve", BACKCHANNEL, 403),
                    ("a camera without a speaker", "/mute", "boss", BACKCHANNEL, 551),
                    ("pictures alone (RTP/JPEG)", "/rear/jpeg", "boss", BACKCHANNEL, 551),
                    ("an unknown requirement", "/rear", "boss", "com.example.teleport", 551)]
        for name, path, user, require, want in refusals:
            r = Describe(rtsp, path, user=user, require=require)
            check("%s: DESCRIBE %s requiring %s is %d" % (name, path, require, want), r.status == want, (r.status, r.sdp[:200]))
            r.close()
        check("after them the speaker is free", talking(port) is False, talking(port))
        viewer = Describe(rtsp, "/rear", user="eve", require=None)
        check("the viewer still watches", viewer.status == 200, viewer.status)
        viewer.close()

        # Talking for real, over TCP (interleaved) and over UDP: the tone is on the speaker.
        talker = build_talker(tmp)
        for protocols, hz in (("tcp", 440), ("udp", 660)):
            report, heard, peak, was_talking = talk(talker, port, rtsp, "/rear", hz, protocols)
            check("%s: rtspsrc found the G.711 backchannel, sent into it and played the picture" % protocols,
                  "PCMU" in (report.get("backchannel") or "") and report.get("pushed", 0) > 100 and not report.get("refused")
                  and report.get("video", 0) > 30 and report.get("error") is None, report)
            check("%s: the speaker played the %d Hz tone (%.0f Hz heard, peak %d)" % (protocols, hz, heard, peak),
                  abs(heard - hz) < 0.05 * hz and peak > 3000, (heard, peak))
            check("%s: the camera said someone talks meanwhile" % protocols, was_talking is True, was_talking)
            check("%s: TEARDOWN frees the speaker" % protocols, poll(lambda: talking(port) is False, 10), talking(port))
        status, _ = api(port, "/api/session")
        check("the server serves on", status == 200 and p.poll() is None, status)
    return summary()


if __name__ == "__main__":
    sys.exit(main())
