#!/usr/bin/env python3
"""Live clients that come and go leave nothing behind (issue 27, item 7). Against the real
server (a process of its own, synthetic cameras), CYCLES times each (default 200; `make
soak-live` runs 1,000):

- WHEP: POST an offer Chromium made (Tests/ViewfinderAppTests/Fixtures/chromium-offer.sdp),
  then DELETE the session: a webrtcbin pipeline built and torn down;
- RTSP: OPTIONS, DESCRIBE, SETUP (interleaved TCP), PLAY, an RTP packet read, TEARDOWN: the
  shared media is built and, its last client gone, unprepared;
- live.mp4: connect, read the init segment and a fragment, close;
- with sound (the synthetic microphone, issue 37): WHEP with an offer that also receives
  Opus (the camera's Opus encode subscribed and left), RTSP of the camera's own path with its
  AAC stream set up beside the picture, and a 50 ms `audio.wav` clip;
- RTP/JPEG: the same RTSP cycle on the main camera's `/main/jpeg` (the preview's pictures);
- ONVIF: GetProfiles through Media and Media2 (SOAP read by libxml2, a profile per stream);
- ONVIF push: Subscribe with a webhook's address (a Python HTTP server here), its first Notify
  POSTed by libcurl on a thread of its own and taken, then Unsubscribe: the delivery ends;
- talk-back: POST a WHIP offer that sends Opus to the camera's (synthetic) speaker, DELETE it:
  a receiving webrtcbin pipeline built and torn down, the speaker opened and closed;
- RTSP talk-back: the RTSP cycle on the camera's own path requiring ONVIF's backchannel (a
  media of its own, with a G.711 decoder to the speaker), a packet sent into it, TEARDOWN.

Then the process's open descriptors and threads are back where they were after a short
warm-up (thread pools full), and its resident memory has not grown by more than a bound.
Also: a live.mp4 client that stops reading does not stall another one. Prints the figures.

Usage: test_leaks.py [BINARY]   (CYCLES=N in the environment)
"""
import os, re, select, shutil, socket, subprocess, sys, tempfile, threading, time, urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer  # `http` is this file's request helper
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BINARY = Path(sys.argv[1] if len(sys.argv) > 1 else os.environ.get("VIEWFINDER_BINARY", ROOT / ".build/debug/viewfinder"))
CYCLES = int(os.environ.get("CYCLES", "200"))
OFFER = (ROOT / "Tests/ViewfinderAppTests/Fixtures/chromium-offer.sdp").read_text()


class Server:
    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="vf-leaks-")
        config = Path(self.dir) / "config.json"
        config.write_text('{"capture": {"directory": "%s/p"}, "recording": {"directory": "%s/m"}, "live": {"maxClients": 1000}}'
                          % (self.dir, self.dir))
        self.proc = subprocess.Popen([str(BINARY), "--config", str(config), "--port", "0", "--rtsp-port", "0",
                                      "--cameras", "synthetic", "--preset", "640x480", "--log-level", "error"],
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        ready, _, _ = select.select([self.proc.stdout], [], [], 60)
        if not ready:
            self.proc.kill()
            raise RuntimeError("viewfinder did not start in 60 s")
        self.port = int(re.search(rb"127\.0\.0\.1:(\d+)", self.proc.stdout.readline()).group(1))
        self.rtsp = int(re.search(rb":(\d+)/main", self.proc.stdout.readline()).group(1))

    def usage(self):
        pid = self.proc.pid
        rss = int(re.search(r"VmRSS:\s+(\d+)", Path(f"/proc/{pid}/status").read_text()).group(1)) // 1024
        return {"fds": len(os.listdir(f"/proc/{pid}/fd")), "threads": len(os.listdir(f"/proc/{pid}/task")), "rss_mb": rss}

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


def http(server, method, path, body=None, headers=None):
    request = urllib.request.Request(f"http://127.0.0.1:{server.port}{path}", data=body, method=method, headers=headers or {})
    with urllib.request.urlopen(request, timeout=15) as r:
        return r.status, dict(r.headers), r.read()


def whep_cycle(server, offer=OFFER):
    status, headers, answer = http(server, "POST", "/api/whep", offer.encode(), {"Content-Type": "application/sdp"})
    assert status == 201, status
    status, _, _ = http(server, "DELETE", headers["Location"])
    assert status == 200, status
    return answer.decode()


def http_json(server, path):
    import json
    return json.loads(http(server, "GET", path)[2])


OFFER_LINES = OFFER.replace("\r\n", "\n").rstrip("\n").split("\n")  # read_text made the line ends \n


def opus_section(mid, direction):
    """An audio section of Opus on the fixture's ICE and DTLS (bundled with its other sections)."""
    value = lambda prefix: next(l for l in OFFER_LINES if l.startswith(prefix))
    return ["m=audio 9 UDP/TLS/RTP/SAVPF 111", "c=IN IP4 0.0.0.0", "a=rtcp:9 IN IP4 0.0.0.0",
            value("a=ice-ufrag:"), value("a=ice-pwd:"), value("a=fingerprint:"), "a=setup:actpass",
            f"a=mid:{mid}", f"a={direction}", "a=rtcp-mux", "a=rtpmap:111 opus/48000/2"]


def offer_with_sound():
    """The Chromium offer with a second section receiving Opus, bundled with the video."""
    lines = ["a=group:BUNDLE 0 1" if l == "a=group:BUNDLE 0" else l for l in OFFER_LINES]
    return "\r\n".join(lines + opus_section(1, "recvonly")) + "\r\n"


OFFER_WITH_SOUND = offer_with_sound()


def whep_sound_cycle(server):
    answer = whep_cycle(server, OFFER_WITH_SOUND)
    assert "m=audio" in answer and "OPUS/48000/2" in answer.upper(), answer


class RTSPClient:
    """Just enough RTSP over one TCP connection: requests, their answers, interleaved data."""

    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.buf = b""
        self.cseq = 0

    def _fill(self, deadline):
        if time.monotonic() > deadline:
            raise TimeoutError("RTSP answer")
        chunk = self.sock.recv(65536)
        if not chunk:
            raise ConnectionError("RTSP connection closed")
        self.buf += chunk

    def request(self, method, url, headers=""):
        self.cseq += 1
        self.sock.sendall(f"{method} {url} RTSP/1.0\r\nCSeq: {self.cseq}\r\n{headers}\r\n".encode())
        deadline = time.monotonic() + 10
        while True:
            self._skip_interleaved()
            end = self.buf.find(b"\r\n\r\n")
            if end >= 0 and not self.buf.startswith(b"$"):
                head = self.buf[:end].decode()
                length = int((re.search(r"(?im)^content-length:\s*(\d+)", head) or [0, 0])[1])
                if len(self.buf) >= end + 4 + length:
                    body = self.buf[end + 4:end + 4 + length].decode()
                    self.buf = self.buf[end + 4 + length:]
                    status = int(head.split()[1])
                    return status, head, body
            self._fill(deadline)

    def _skip_interleaved(self):
        while self.buf.startswith(b"$") and len(self.buf) >= 4:
            n = int.from_bytes(self.buf[2:4], "big")
            if len(self.buf) < 4 + n:
                return
            self.buf = self.buf[4 + n:]

    def rtp_packet(self):
        deadline = time.monotonic() + 10
        while not (self.buf.startswith(b"$") and len(self.buf) >= 4):
            self._fill(deadline)
        n = int.from_bytes(self.buf[2:4], "big")
        while len(self.buf) < 4 + n:
            self._fill(deadline)
        packet = self.buf[4:4 + n]
        self.buf = self.buf[4 + n:]
        return packet

    def close(self):
        self.sock.close()


def rtsp_cycle(server, path="main", described="H264/90000", require=""):
    """`path`'s media: every stream its SDP describes set up (interleaved TCP) and played, an
    RTP packet read, TEARDOWN. With `require` (a Require header's value, on every request), a
    section the SDP marks sendonly (ONVIF's backchannel) is sent a packet of G.711 silence."""
    url = f"rtsp://127.0.0.1:{server.rtsp}/{path}"
    c = RTSPClient(server.rtsp)
    need = f"Require: {require}\r\n" if require else ""
    try:
        assert c.request("OPTIONS", url)[0] == 200
        status, head, sdp = c.request("DESCRIBE", url, "Accept: application/sdp\r\n" + need)
        assert status == 200 and described in sdp, (status, sdp)
        session, backchannel = None, None
        for i, media in enumerate(sdp.split("\nm=")[1:]):
            control = re.search(r"a=control:(\S+)", media).group(1)
            track = control if control.startswith("rtsp:") else url.rstrip("/") + "/" + control
            extra = f"Session: {session}\r\n" if session else ""
            status, head, _ = c.request("SETUP", track, f"{extra}{need}Transport: RTP/AVP/TCP;unicast;interleaved={2 * i}-{2 * i + 1}\r\n")
            assert status == 200, head
            session = session or re.search(r"(?im)^session:\s*([^;\r\n]+)", head).group(1)
            if "a=sendonly" in media:
                backchannel = 2 * i
        assert c.request("PLAY", url, f"Session: {session}\r\n{need}Range: npt=0.000-\r\n")[0] == 200
        packet = c.rtp_packet()
        assert len(packet) >= 12 and packet[0] >> 6 == 2, "an RTP packet"
        if require:
            assert backchannel is not None, sdp
            rtp = bytes([0x80, 0]) + (1).to_bytes(2, "big") + (160).to_bytes(4, "big") + (0x5eed).to_bytes(4, "big") + b"\xff" * 160
            c.sock.sendall(b"$" + bytes([backchannel]) + len(rtp).to_bytes(2, "big") + rtp)
        c.request("TEARDOWN", url, f"Session: {session}\r\n{need}")
    finally:
        c.close()


def talk_offer():
    """An offer with one audio section sending Opus, as a talker's."""
    return "\r\n".join(["v=0", "o=- 1 2 IN IP4 127.0.0.1", "s=-", "t=0 0", "a=group:BUNDLE 0"]
                       + opus_section(0, "sendonly") + [""])


TALK_OFFER = talk_offer()


def talk_cycle(server):
    status, headers, answer = http(server, "POST", f"/api/cameras/{server.camera}/talk", TALK_OFFER.encode(),
                                   {"Content-Type": "application/sdp"})
    assert status == 201 and b"a=recvonly" in answer, status
    status, _, _ = http(server, "DELETE", headers["Location"])
    assert status == 200, status


def rtsp_sound_cycle(server):
    """The camera's own path (the main camera's id), picture and AAC both set up and played."""
    rtsp_cycle(server, server.camera, "MPEG4-GENERIC/48000")


def rtsp_talk_cycle(server):
    """ONVIF's backchannel on the camera's own path: the picture, its sound and the talker's
    section set up, a G.711 packet sent; TEARDOWN gives the speaker back (awaited: the next
    talker would be refused while it is taken)."""
    rtsp_cycle(server, server.camera, "PCMU/8000", require="www.onvif.org/ver20/backchannel")
    deadline = time.monotonic() + 5
    while not speaker_free(server):
        assert time.monotonic() < deadline, "the speaker was not given back after TEARDOWN"
        time.sleep(0.01)


def speaker_free(server):
    cameras = http_json(server, "/api/cameras")["cameras"]
    return not next(c for c in cameras if c["id"] == server.camera)["speaker"]["talking"]


def jpeg_cycle(server):
    rtsp_cycle(server, "main/jpeg", "JPEG/90000")


SOAP = ('<s:Envelope xmlns:s="http://www.w3.org/2003/05/soap-envelope" xmlns:m="http://www.onvif.org/ver%s/media/wsdl">'
        '<s:Body><m:GetProfiles/></s:Body></s:Envelope>')


def onvif_cycle(server):
    for service, version in (("media_service", "10"), ("media2_service", "20")):
        status, _, body = http(server, "POST", "/onvif/" + service, (SOAP % version).encode(),
                               {"Content-Type": "application/soap+xml; charset=utf-8"})
        assert status == 200 and b"main" in body, (service, status, body[-200:])


class Webhook:
    """A consumer for ONVIF's push subscriptions: counts the POSTs it is sent."""

    def __init__(self):
        self.posts = 0
        self.arrived = threading.Condition()
        hook = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()
                with hook.arrived:
                    hook.posts += 1
                    hook.arrived.notify_all()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = "http://127.0.0.1:%d/hook" % self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def wait(self, n, timeout=10):
        with self.arrived:
            assert self.arrived.wait_for(lambda: self.posts >= n, timeout), f"{n} POSTs within {timeout} s (got {self.posts})"


SUBSCRIBE = ('<s:Envelope xmlns:s="http://www.w3.org/2003/05/soap-envelope" xmlns:wsnt="http://docs.oasis-open.org/wsn/b-2" '
             'xmlns:wsa="http://www.w3.org/2005/08/addressing"><s:Body>%s</s:Body></s:Envelope>')


def push_cycle(server):
    if not hasattr(server, "webhook"):
        server.webhook = Webhook()
    hook, soap = server.webhook, {"Content-Type": "application/soap+xml; charset=utf-8"}
    before = hook.posts
    status, _, body = http(server, "POST", "/onvif/events_service", (SUBSCRIBE % (
        "<wsnt:Subscribe><wsnt:ConsumerReference><wsa:Address>%s</wsa:Address></wsnt:ConsumerReference>"
        "<wsnt:InitialTerminationTime>PT60S</wsnt:InitialTerminationTime></wsnt:Subscribe>" % hook.url)).encode(), soap)
    assert status == 200, (status, body[-200:])
    address = re.search(rb"<wsa:Address>[^<]*(/onvif/subscriptions/\d+)</wsa:Address>", body).group(1).decode()
    hook.wait(before + 1)  # the properties, pushed
    status, _, body = http(server, "POST", address, (SUBSCRIBE % "<wsnt:Unsubscribe/>").encode(), soap)
    assert status == 200, (status, body[-200:])


def wav_cycle(server):
    status, headers, body = http(server, "GET", "/audio.wav?seconds=0.05")
    assert status == 200 and body[:4] == b"RIFF" and len(body) == 44 + 4800, (status, len(body))


def mp4_cycle(server):
    s = socket.create_connection(("127.0.0.1", server.port), timeout=10)
    try:
        s.sendall(b"GET /live.mp4 HTTP/1.1\r\nHost: x\r\n\r\n")
        data, deadline = b"", time.monotonic() + 10
        while b"mdat" not in data:
            assert time.monotonic() < deadline, "a fragment within 10 s"
            chunk = s.recv(65536)
            assert chunk, "the stream ended"
            data += chunk
        assert data.startswith(b"HTTP/1.1 200") and b"moov" in data
    finally:
        s.close()


def settled(server, baseline, timeout=20):
    """The usage once threads and descriptors stop falling (pipelines end on other threads)."""
    deadline, last = time.monotonic() + timeout, None
    while time.monotonic() < deadline:
        u = server.usage()
        if u["fds"] <= baseline["fds"] + 2 and u["threads"] <= baseline["threads"] + 2:
            return u
        if last == u:
            time.sleep(0.5)
        last = u
        time.sleep(0.2)
    return server.usage()


def a_stalled_reader_does_not_stall_another(server):
    stalled = socket.create_connection(("127.0.0.1", server.port), timeout=10)
    stalled.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    stalled.sendall(b"GET /live.mp4 HTTP/1.1\r\nHost: x\r\n\r\n")  # and never reads
    try:
        reader = socket.create_connection(("127.0.0.1", server.port), timeout=10)
        reader.sendall(b"GET /live.mp4 HTTP/1.1\r\nHost: x\r\n\r\n")
        got, start = 0, time.monotonic()
        while time.monotonic() - start < 4:  # 4 s of frames while the other one stalls
            chunk = reader.recv(65536)
            assert chunk, "the reading client's stream ended"
            got += chunk.count(b"mdat")
        reader.close()
        assert got >= 60, f"{got} fragments in 4 s beside a stalled client"
        return got
    finally:
        stalled.close()


def main():
    server = Server()
    failures = []
    try:
        server.camera = http_json(server, "/api/session")["camera"]["id"]
        for kind, cycle in (("WHEP", whep_cycle), ("RTSP", rtsp_cycle), ("live.mp4", mp4_cycle),
                            ("WHEP with sound", whep_sound_cycle), ("RTSP with sound", rtsp_sound_cycle),
                            ("audio.wav", wav_cycle), ("talk", talk_cycle), ("RTP/JPEG", jpeg_cycle),
                            ("ONVIF", onvif_cycle), ("ONVIF push", push_cycle), ("RTSP talk-back", rtsp_talk_cycle)):
            for _ in range(20):  # warm-up: thread pools and caches at their working size
                cycle(server)
            baseline = settled(server, server.usage(), timeout=3)
            start = time.monotonic()
            for _ in range(CYCLES):
                cycle(server)
            elapsed = time.monotonic() - start
            after = settled(server, baseline)
            line = (f"{kind}: {CYCLES} cycles in {elapsed:.1f} s ({1000 * elapsed / CYCLES:.0f} ms each); "
                    f"fds {baseline['fds']} -> {after['fds']}, threads {baseline['threads']} -> {after['threads']}, "
                    f"RSS {baseline['rss_mb']} -> {after['rss_mb']} MB")
            print(line)
            if after["fds"] > baseline["fds"] + 2 or after["threads"] > baseline["threads"] + 2:
                failures.append(f"{kind} leaks: {line}")
            if after["rss_mb"] - baseline["rss_mb"] > 64:
                failures.append(f"{kind} grows: {line}")
        got = a_stalled_reader_does_not_stall_another(server)
        print(f"live.mp4: {got} fragments in 4 s to a reader beside a client that stopped reading")
        assert http(server, "GET", "/healthz")[0] == 200
    except Exception as e:  # a cycle that failed: the figures so far and the reason
        failures.append(f"{type(e).__name__}: {e}")
    finally:
        server.stop()
    for f in failures:
        print("FAIL:", f, file=sys.stderr)
    print(f"live leaks: {'failed' if failures else 'passed'}")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
