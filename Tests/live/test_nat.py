#!/usr/bin/python3
"""A WebRTC viewer beyond the camera's network, through real NATs (issue 58, item 6).

Network namespaces make the picture: an "internet" (a bridge, 203.0.113.0/24) with Debian's
coturn on it (use-auth-secret), whose default route goes into a namespace that forwards nothing
(as the real internet drops a private address: coturn closes an allocation, relay and all, when
a send to a peer fails with "network unreachable" instead); the camera's router (203.0.113.10,
its LAN 192.168.1.0/24: the camera .2 and a neighbour .3) and the viewer's router (203.0.113.20,
its LAN 10.0.0.0/24: the viewer .2), each doing real NAT with iptables (MASQUERADE; symmetric
with --random-fully). The server (the debug build, a synthetic camera) runs on the camera's LAN;
the viewer is aiortc (PyPI, a venv under .build/) decoding the H.264 it receives. Signalling
(WHEP over HTTP) reaches the camera through a forwarded TCP port, as a user's router is told to.

The cases, each with a server configured as a user of that network would:
  lan        the neighbour on the camera's LAN: host to host.
  one-nat    the camera on a public address (its router routes), the viewer behind NAT.
  forwarded  both behind NAT; the camera's webrtc.udpPorts forwarded by its router (UDP and
             TCP) and its webrtc.publicAddresses the router's address; no TURN.
  symmetric  both behind symmetric NATs (--random-fully), nothing forwarded but HTTP: TURN
             (webrtc.turn, credentials minted per viewer) carries it.
  udp-blocked  the viewer's router drops all UDP: TURN over TCP from the viewer's side.
  udp-blocked-tls  as udp-blocked, but TURN over TLS only (turns:, coturn's 5349), on both sides:
             the viewer (trusting coturn's certificate) and the camera's own relay.
  ice-tcp    the viewer's router drops all UDP and there is no TURN: the page in Chromium
             (aiortc has no ICE-TCP) reaches the camera's forwarded TCP port, ICE over TCP to
             the passive candidate webrtc.publicAddresses names.
  symmetric-trickled  as symmetric, but the viewer's offer has no candidates: they come after
             it, PATCHed to the session (trickle ICE, RFC 9725), as a trickling browser sends them.
  moved      as forwarded, the page in Chromium: once it plays, the viewer's address changes
             (a laptop moving between networks); the page must play again by WebRTC by itself
             (it offers again when its connection is lost), within RECOVERED_WITHIN.
  servers-silent  as forwarded, but the server's STUN and TURN servers never answer (their
             packets dropped on the way): the answer waits for them (libnice gives them up after
             some 2 s; 3 s at most), the log says which did not answer, and the viewer plays by the forwarded port all the same.
  turn-refused  UDP blocked at the viewer and a TURN server that refuses the server's credentials
             (webrtc.turn's secret not coturn's): must NOT connect, and say why — the page's
             badge title (ICE's state, the TURN server's 401) and the server's log (the
             allocation refused).
  symmetric-without-turn  the symmetric NATs with no TURN server: must NOT connect (the rig's
             NATs are what they say: no direct path through two of them).
  symmetric-withheld  as symmetric-trickled without the PATCH: must NOT connect (the server
             cannot reach a viewer whose candidates it never had: the trickled ones are what
             connect the case above).
Each: connected, the first frame's time from the offer, the selected pair (from the viewer's
ICE agent, and as the server's state reports it: `viewers[].path`), frames decoded over SECONDS
(default 10), and the TURN secret absent from every byte the viewer received (bodies and headers).

Needs root (namespaces, iptables). Run by `make test`: /usr/bin/python3 Tests/live/test_nat.py
[CASE...]; NAT_DEBUG=1 prints the server's log lines naming each selected pair with its addresses.
"""
import contextlib
import json
import os
import re
import select
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
import procfs  # noqa: E402  (a process's CPU seconds, as the benchmarks read them)
BINARY = Path(os.environ.get("VIEWFINDER_BINARY", ROOT / ".build/debug/viewfinder"))
VENV = ROOT / ".build/venv-aiortc"
REQUIREMENTS = Path(__file__).with_name("requirements-aiortc.txt")
SECONDS = float(os.environ.get("SECONDS_DECODED", "10"))
SECRET = "nat-rig-shared-secret-" + os.urandom(6).hex()
TAG = f"{os.getpid() % 10000}"
NS = {n: f"vf{n}{TAG}" for n in ("inet", "void", "rcam", "rcli", "cam", "nbr", "cli")}
TURN_IP, RCAM_WAN, RCLI_WAN = "203.0.113.1", "203.0.113.10", "203.0.113.20"
CAM_IP, NBR_IP, CLI_IP = "192.168.1.2", "192.168.1.3", "10.0.0.2"
MOVED_IP = "10.0.0.7"  # the viewer's address after it moves (the "moved" case)
SILENT_IP = "203.0.113.99"  # the STUN and TURN server that never answers ("servers-silent")
MEDIA_PORTS = (47000, 47003)
# The most a case may take to show its first frame: a bound on the wait, not a goal (the
# figures are printed; make bench measures them).
FIRST_FRAME_WITHIN = 20
# The most the page may take to play again by WebRTC after the viewer's address changed (a bound;
# the figure is printed).
RECOVERED_WITHIN = 10
# The cases whose camera's router forwards its media ports (UDP and TCP), its public address configured.
FORWARDED = ("forwarded", "ice-tcp", "moved", "servers-silent")
# The cases whose server has a TURN server (webrtc.turn).
TURNED = ("symmetric", "symmetric-trickled", "symmetric-withheld", "udp-blocked", "udp-blocked-tls", "turn-refused")


def run(*cmd, check=True):
    return subprocess.run(cmd, check=check, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def ns(name, *cmd, check=True):
    return run("ip", "netns", "exec", NS[name], *cmd, check=check)


def veth(a, a_if, b, b_if):
    run("ip", "link", "add", a_if, "netns", NS[a], "type", "veth", "peer", "name", b_if, "netns", NS[b])
    ns(a, "ip", "link", "set", a_if, "up")
    ns(b, "ip", "link", "set", b_if, "up")


def bridge(name, br, address, ports):
    ns(name, "ip", "link", "add", br, "type", "bridge")
    for p in ports:
        ns(name, "ip", "link", "set", p, "master", br)
    ns(name, "ip", "addr", "add", address, "dev", br)
    ns(name, "ip", "link", "set", br, "up")


def build():
    """The namespaces and their links; routing and NAT are each case's (`nat`)."""
    teardown()
    for n in NS.values():
        run("ip", "netns", "add", n)
    for n in NS:
        ns(n, "ip", "link", "set", "lo", "up")
    # The internet: a bridge joining the two routers; coturn on its address.
    veth("inet", "wcam", "rcam", "wan")
    veth("inet", "wcli", "rcli", "wan")
    bridge("inet", "net", f"{TURN_IP}/24", ["wcam", "wcli"])
    # Where the internet sends what it has no route for: a namespace that forwards nothing.
    veth("inet", "tovoid", "void", "in")
    ns("inet", "ip", "addr", "add", "198.18.0.1/30", "dev", "tovoid")
    ns("void", "ip", "addr", "add", "198.18.0.2/30", "dev", "in")
    ns("inet", "ip", "route", "add", "default", "via", "198.18.0.2")
    ns("inet", "sysctl", "-qw", "net.ipv4.ip_forward=1")
    # The camera's LAN (the camera and a neighbour on a bridge in its router) and the viewer's.
    veth("rcam", "lcam", "cam", "eth0")
    veth("rcam", "lnbr", "nbr", "eth0")
    bridge("rcam", "lan", "192.168.1.1/24", ["lcam", "lnbr"])
    veth("rcli", "lan", "cli", "eth0")
    ns("rcli", "ip", "addr", "add", "10.0.0.1/24", "dev", "lan")
    for r, wan in (("rcam", RCAM_WAN), ("rcli", RCLI_WAN)):
        ns(r, "ip", "addr", "add", f"{wan}/24", "dev", "wan")
        ns(r, "ip", "route", "add", "default", "via", TURN_IP)
        ns(r, "sysctl", "-qw", "net.ipv4.ip_forward=1")
    for host, ip, gw in (("cam", CAM_IP, "192.168.1.1"), ("nbr", NBR_IP, "192.168.1.1"), ("cli", CLI_IP, "10.0.0.1")):
        ns(host, "ip", "addr", "add", f"{ip}/24", "dev", "eth0")
        ns(host, "ip", "route", "add", "default", "via", gw)


def teardown():
    for n in NS.values():
        run("ip", "netns", "del", n, check=False)


def nat(case, http_port):
    """The routers' rules for `case` (flushed first)."""
    for r in ("rcam", "rcli"):
        ns(r, "iptables", "-t", "nat", "-F")
        ns(r, "iptables", "-F")
    ns("inet", "ip", "route", "del", "192.168.1.0/24", check=False)
    random = ["--random-fully"] if case.startswith("symmetric") else []
    if case == "one-nat":
        # The camera's router routes: the camera's address is public.
        ns("inet", "ip", "route", "add", "192.168.1.0/24", "via", RCAM_WAN)
    else:
        ns("rcam", "iptables", "-t", "nat", "-A", "POSTROUTING", "-o", "wan", "-j", "MASQUERADE", *random)
        # The camera's HTTP, forwarded: WHEP's signalling.
        ns("rcam", "iptables", "-t", "nat", "-A", "PREROUTING", "-i", "wan", "-p", "tcp", "--dport", str(http_port),
           "-j", "DNAT", "--to-destination", CAM_IP)
    if case in FORWARDED:
        ports = f"{MEDIA_PORTS[0]}:{MEDIA_PORTS[1]}"
        for proto in ("udp", "tcp"):
            ns("rcam", "iptables", "-t", "nat", "-A", "PREROUTING", "-i", "wan", "-p", proto, "--dport", ports,
               "-j", "DNAT", "--to-destination", CAM_IP)
    ns("rcli", "iptables", "-t", "nat", "-A", "POSTROUTING", "-o", "wan", "-j", "MASQUERADE", *random)
    if case in ("udp-blocked", "udp-blocked-tls", "ice-tcp", "turn-refused"):
        ns("rcli", "iptables", "-A", "FORWARD", "-p", "udp", "-j", "DROP")
    if case == "servers-silent":  # dropped, not refused: no ICMP tells the camera it is in vain
        ns("rcam", "iptables", "-A", "FORWARD", "-d", SILENT_IP, "-j", "DROP")


class Daemon:
    """A process of the rig with its directory (its log in it): stopped, the directory goes."""

    def log(self):
        return (Path(self.dir) / "log").read_text(errors="replace")

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        shutil.rmtree(self.dir, ignore_errors=True)


class Turn(Daemon):
    """Debian's coturn on the internet's bridge, TURN REST credentials (use-auth-secret): UDP and
    TCP on 3478, TLS on 5349 with a certificate made here for its address (`ca`: the file a
    viewer trusts it by)."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="vf-turn-")
        self.ca, key = str(Path(self.dir) / "cert.pem"), str(Path(self.dir) / "key.pem")
        run("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=turn.viewfinder.test",
            "-addext", f"subjectAltName=IP:{TURN_IP}", "-keyout", key, "-out", self.ca)
        self.proc = subprocess.Popen(
            ["ip", "netns", "exec", NS["inet"], "turnserver", "-n", "--listening-ip", TURN_IP, "--relay-ip", TURN_IP,
             "--listening-port", "3478", "--use-auth-secret", "--static-auth-secret", SECRET, "--realm", "viewfinder.test",
             "--tls-listening-port", "5349", "--cert", self.ca, "--pkey", key, "--no-dtls", "--fingerprint", "--no-cli", "--simple-log", "--log-file", "stdout",
             "--pidfile", str(Path(self.dir) / "pid"), "--db", str(Path(self.dir) / "turndb"), "--min-port", "49152", "--max-port", "49999"],
            stdout=open(Path(self.dir) / "log", "w"), stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and not self.listening():
            time.sleep(0.1)

    def listening(self):
        """Its listeners are bound: UDP and TCP on 3478, TLS on 5349 (coturn says so in no log
        line by default)."""
        return all(ns("inet", "ss", "-Hln", proto, f"sport = :{port}").stdout.strip()
                   for proto, port in (("-u", 3478), ("-t", 3478), ("-t", 5349)))



class Server(Daemon):
    """The debug build in the camera's namespace, on every address, configured for `case`."""

    def __init__(self, case, public=ROOT / "Public"):
        self.dir = tempfile.mkdtemp(prefix="vf-nat-")
        webrtc = {"udpPorts": list(MEDIA_PORTS)}
        if case in FORWARDED:
            webrtc["publicAddresses"] = [RCAM_WAN]
        if case == "servers-silent":
            webrtc["iceServers"] = [{"urls": [f"stun:{SILENT_IP}:3478"]}]
            webrtc["turn"] = {"urls": [f"turn:{SILENT_IP}:3478?transport=udp"], "secret": SECRET, "ttl": 600}
        if case in TURNED:
            urls = [f"turns:{TURN_IP}:5349"] if case == "udp-blocked-tls" else \
                [f"turn:{TURN_IP}:3478?transport=udp", f"turn:{TURN_IP}:3478?transport=tcp"]
            webrtc["turn"] = {"urls": urls,
                              "secret": SECRET + ("-not-coturns" if case == "turn-refused" else ""), "ttl": 600}
        config = Path(self.dir) / "config.json"
        config.write_text(json.dumps({
            "auth": "none", "server": {"host": "0.0.0.0"},
            "cameras": [{"id": "rear", "source": "synthetic", "position": "rear", "preset": "640x480"}],
            "synthetic": {"microphone": False}, "webrtc": webrtc, "rtsp": {"enabled": False},
            "capture": {"directory": str(Path(self.dir) / "photos")}, "recording": {"directory": str(Path(self.dir) / "movies")}}))
        self.proc = subprocess.Popen(["ip", "netns", "exec", NS["cam"], str(BINARY), "--config", str(config), "--port", "0",
                                      "--public-directory", str(public), "--log-level", "info"],
                                     stdout=subprocess.PIPE, stderr=open(Path(self.dir) / "log", "w"))
        ready, _, _ = select.select([self.proc.stdout], [], [], 60)
        if not ready:
            self.stop()
            raise RuntimeError("viewfinder did not start in 60 s")
        self.port = int(re.search(r"http://[\d.]+:(\d+)", self.proc.stdout.readline().decode()).group(1))
        ns("cam", "curl", "-sf", "-X", "POST", f"http://127.0.0.1:{self.port}/api/session/start", "-o", "/dev/null")



# ---------------------------------------------------------------- the viewer (aiortc, in its namespace)

def withheld(sdp):
    """The offer without its candidates, and them as RFC 8840's fragment (what a trickling
    browser PATCHes after its offer): aiortc gathers every candidate before its offer."""
    lines = sdp.split("\r\n")
    value = lambda key: next(l for l in lines if l.startswith(key))
    candidates = [l for l in lines if l.startswith("a=candidate:")]
    offer = "\r\n".join(l for l in lines if not l.startswith(("a=candidate:", "a=end-of-candidates")))
    fragment = "\r\n".join([value("a=ice-ufrag:"), value("a=ice-pwd:"), "m=video 9 UDP/TLS/RTP/SAVPF 0", value("a=mid:"),
                             *candidates, "a=end-of-candidates", ""])
    return offer, fragment, len(candidates)


def viewer(url, turn_transport, seconds, within, trickle=""):
    """WHEP with aiortc: prints one JSON line with what it saw. `trickle`: "patch" sends the
    offer without candidates and PATCHes them after the answer; "withhold" never sends them."""
    import asyncio
    import urllib.error
    import urllib.request
    from aiortc import RTCConfiguration, RTCIceServer, RTCPeerConnection, RTCSessionDescription

    received = []

    def http(method, path, body=None, headers=None):
        req = urllib.request.Request(url + path, data=body, method=method, headers=headers or {})
        with urllib.request.urlopen(req, timeout=15) as r:
            data = r.read()
            received.append(str(r.headers) + data.decode(errors="replace"))
            return r.status, r.headers, data

    async def main():
        servers = []
        if turn_transport:
            _, _, body = http("GET", "api/webrtc/ice-servers")
            for s in json.loads(body)["iceServers"]:
                urls = [u for u in s["urls"] if u.startswith("turns:")] if turn_transport == "tls" else \
                    [u for u in s["urls"] if u.startswith("turn:") and u.endswith("transport=" + turn_transport)]
                if urls and s.get("username"):
                    servers.append(RTCIceServer(urls=urls[0], username=s["username"], credential=s["credential"]))
        pc = RTCPeerConnection(RTCConfiguration(iceServers=servers))
        pc.addTransceiver("video", direction="recvonly")
        frames, first = [], asyncio.get_running_loop().create_future()

        @pc.on("track")
        def on_track(track):
            async def read():
                while True:
                    try:
                        await track.recv()
                    except Exception:
                        return
                    frames.append(time.monotonic())
                    if not first.done():
                        first.set_result(time.monotonic())
            asyncio.ensure_future(read())

        await pc.setLocalDescription(await pc.createOffer())  # aiortc gathers every candidate first
        offer, fragment, count = withheld(pc.localDescription.sdp) if trickle else (pc.localDescription.sdp, None, 0)
        t0 = time.monotonic()
        status, headers, answer = await asyncio.to_thread(http, "POST", "api/whep", offer.encode(),
                                                          {"Content-Type": "application/sdp"})
        location = headers["Location"]
        out = {"status": status, "connected": False, "answered_in": round(time.monotonic() - t0, 3)}
        if trickle == "patch":
            patched, _, _ = await asyncio.to_thread(http, "PATCH", location.lstrip("/"), fragment.encode(),
                                                    {"Content-Type": "application/trickle-ice-sdpfrag", "If-Match": headers["ETag"]})
            out["trickled"] = {"status": patched, "candidates": count}
        await pc.setRemoteDescription(RTCSessionDescription(answer.decode(), "answer"))
        try:
            at = await asyncio.wait_for(first, within)
            out["first_frame"] = round(at - t0, 3)
            n0 = len(frames)
            await asyncio.sleep(seconds)
            out["frames"] = len(frames) - n0
        except asyncio.TimeoutError:
            out["first_frame"] = None
        out["connected"] = pc.connectionState == "connected"
        out["state"] = pc.connectionState
        ice = pc.getTransceivers()[0].receiver.transport.transport
        pair = getattr(ice, "_connection")._nominated.get(1)
        if pair:
            local, remote = pair.local_candidate, pair.remote_candidate
            # A relayed candidate's transport is aioice's TurnTransport; the protocol inside it
            # says how the TURN server is reached (TurnClientTcpProtocol or ...UdpProtocol).
            transport = getattr(pair.protocol, "transport", None)
            inner = getattr(transport, "_TurnTransport__inner_protocol", None)
            protocol = type(inner or transport).__name__
            # Over TLS: the TCP connection to the TURN server has an SSL object.
            tls = bool(inner and getattr(inner, "transport", None) and inner.transport.get_extra_info("ssl_object"))
            out["pair"] = {"local": f"{local.type} {local.transport.lower()} {local.host}:{local.port}",
                           "remote": f"{remote.type} {remote.transport.lower()} {remote.host}:{remote.port}",
                           "via": (protocol + (" over TLS" if tls else "")) if protocol.startswith("TurnClient") else "direct"}
        await pc.close()
        try:
            await asyncio.to_thread(http, "DELETE", location.lstrip("/"))
        except urllib.error.HTTPError as e:
            if e.code != 404 or out["connected"]:
                raise  # a peer that failed is swept by the server: gone is what it should be
        out["ended"] = True
        out["secret_seen"] = any(SECRET_ARG in r for r in received)
        out["bytes_received_checked"] = sum(len(r) for r in received)
        print(json.dumps(out), flush=True)

    asyncio.run(main())


SECRET_ARG = ""

# In the page: the time of the preview's first presented frame, and a count of them.
WATCH = r"""
const video = document.getElementById('live');
window.__count = 0;
window.__times = [];
const step = () => {
  window.__count++;
  const now = performance.now();
  if (!window.__first) window.__first = now;
  if (window.__times.length < 20000) window.__times.push(now);
  video.requestVideoFrameCallback(step);
};
video.requestVideoFrameCallback(step);
"""


def move_address(old, new):
    """The viewer's address changes, as a laptop's does moving between networks: `new` added,
    `old` removed (its sockets' packets go nowhere after), the default route kept."""
    run("sysctl", "-qw", "net.ipv4.conf.eth0.promote_secondaries=1")
    run("ip", "addr", "add", f"{new}/24", "dev", "eth0")
    run("ip", "addr", "del", f"{old}/24", "dev", "eth0")
    run("ip", "route", "replace", "default", "via", "10.0.0.1")


def count_frames(d, out, seconds):
    n0 = d.execute_script("return window.__count")
    time.sleep(seconds)
    out["frames"] = d.execute_script("return window.__count") - n0
    out["transport"] = d.execute_script("return window.viewfinderPreview.transport()")


def page_viewer(url, seconds, within, move=False):
    """The page in headless Chromium (Tests/browser/test_page.py's): prints one JSON line.
    `move`: once it plays, the viewer's address changes (move_address); the page must find
    the camera again by itself, by WebRTC."""
    sys.path.insert(0, str(ROOT / "Tests/browser"))
    from test_page import browser
    d = browser("--autoplay-policy=no-user-gesture-required")
    out = {"connected": False, "first_frame": None}
    try:
        t0 = time.time()
        d.get(url)
        d.execute_script(WATCH)
        deadline = t0 + within
        while time.time() < deadline and not d.execute_script("return window.__first || 0"):
            time.sleep(0.1)
        transport = d.execute_script("return window.viewfinderPreview && window.viewfinderPreview.transport()")
        out["transport"] = transport
        out["badge"] = d.execute_script("const b = document.getElementById('transport'); return [b.textContent, b.title]")
        if d.execute_script("return window.__first || 0") and transport == "WebRTC":
            out["connected"] = True
            out["first_frame"] = round(d.execute_script("return window.__first") / 1000, 3)  # from the navigation
            if move:
                # The picture may pause and must come back: by libnice and the browser's own
                # ICE (Chromium gathers on the new address and checks the camera's candidates
                # from it: the same session, a new pair) or by the page offering again.
                time.sleep(2)
                moved = d.execute_script("return performance.now()")
                move_address(CLI_IP, MOVED_IP)
                try:
                    time.sleep(RECOVERED_WITHIN)
                    out["connection"] = d.execute_script("return window.viewfinderPreview.connection()")
                    times = [t for t in d.execute_script("return window.__times") if t > moved - 2000]
                    before = max([t for t in times if t <= moved], default=moved)
                    after = [t for t in times if t > moved]
                    gaps = [(b - a, b) for a, b in zip([before] + after, after)]
                    longest = max(gaps, default=(None, None))
                    out["paused"] = round(longest[0] / 1000, 2) if longest[0] else None
                    # Back: the first frame after the longest pause, from the move.
                    out["recovered"] = round((longest[1] - moved) / 1000, 2) if longest[1] else None
                    out["reoffered"] = d.execute_script("return window.viewfinderPreview.reconnected().count")
                    out["transport_after"] = d.execute_script("return window.viewfinderPreview.transport()")
                    if not after or out["recovered"] > RECOVERED_WITHIN:
                        out["console"] = [e["message"][-300:] for e in d.get_log("browser")][-15:]
                    count_frames(d, out, seconds)  # on the new address
                finally:
                    move_address(MOVED_IP, CLI_IP)
            else:
                count_frames(d, out, seconds)
    finally:
        d.quit()
    print(json.dumps(out), flush=True)


def watch(case, server, page=False, turn=None):
    """The case's viewer (`page`: the page in Chromium whatever the case) watching `server`: what
    it printed, with the server's view of it — the last path its state gave, the round trips its
    state reported (RTCP, ms), and the server's CPU seconds a second while the viewer had a path
    (and `turn`'s, the coturn, over the same time), and what its log said of the ICE servers."""
    where, url = ("nbr", f"http://{CAM_IP}:{server.port}/") if case == "lan" else \
        ("cli", f"http://{CAM_IP if case == 'one-nat' else RCAM_WAN}:{server.port}/")
    relay = {"symmetric": "udp", "symmetric-trickled": "udp", "symmetric-withheld": "udp", "udp-blocked": "tcp",
             "udp-blocked-tls": "tls"}.get(case, "")
    trickle = {"symmetric-trickled": "patch", "symmetric-withheld": "withhold"}.get(case, "")
    within = 12 if case in APART else FIRST_FRAME_WITHIN
    if page or case in PAGE_CASES:  # the system's python: selenium is Debian's
        command = ["/usr/bin/python3", __file__, "--page", url, str(SECONDS), str(within), "move" if case == "moved" else ""]
    else:
        command = [str(VENV / "bin/python3"), __file__, "--viewer", url, relay, str(SECONDS), str(within), SECRET, trickle]
    trust = ["env", f"SSL_CERT_FILE={turn.ca}"] if turn else []  # coturn's certificate, for turns:
    p = subprocess.Popen(["ip", "netns", "exec", NS[where], *trust, *command], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    # Meanwhile, the server's own view of the viewer: the live output's viewers, each second.
    seen, round_trips, cpu = [], [], []
    while p.poll() is None:
        state = ns("cam", "curl", "-sf", "--max-time", "5", f"http://127.0.0.1:{server.port}/api/session", check=False).stdout
        try:
            outputs = json.loads(state)["outputs"]
        except (ValueError, KeyError):
            outputs = []
        viewers = [v for o in outputs for v in o.get("viewers", []) if v.get("path")]
        seen += [v["path"] for v in viewers]
        round_trips += [v["roundTripMs"] for v in viewers if v.get("roundTripMs")]
        if viewers:
            cpu.append((time.monotonic(), procfs.cpu_seconds(server.proc.pid), turn and procfs.cpu_seconds(turn.proc.pid)))
        time.sleep(0.5)
    out, err = p.communicate()
    line = next((l for l in out.splitlines() if l.startswith("{")), None)
    if line is None:
        return {"error": (out + err)[-3000:]}
    got = json.loads(line)
    got["server_path"] = seen[-1] if seen else None
    got["round_trips_ms"] = round_trips
    # What its log says of the ICE servers (refused; silent).
    log = server.log()
    got["server_refused"] = "refused the allocation" in log
    got["server_said"] = "\n".join(l for l in log.splitlines() if "did not answer" in l or "no TURN server" in l)
    if len(cpu) > 2 and cpu[-1][0] - cpu[0][0] > 1:
        span = cpu[-1][0] - cpu[0][0]
        got["server_cpu_per_s"] = (cpu[-1][1] - cpu[0][1]) / span
        if turn:
            got["turn_cpu_per_s"] = (cpu[-1][2] - cpu[0][2]) / span
    return got


@contextlib.contextmanager
def rig():
    """The rig up for the block — the viewer's venv, the namespaces, coturn (yielded) — and down
    after it."""
    subprocess.run([str(ROOT / "scripts/py-venv"), str(VENV), "--", "--no-deps", "-r", str(REQUIREMENTS)], check=True)
    build()
    turn = Turn()
    try:
        if not turn.listening():
            raise RuntimeError("coturn did not start:\n" + turn.log()[-2000:])
        yield turn
    finally:
        turn.stop()
        teardown()


def play(case, turn, page=False, public=ROOT / "Public"):
    """`case` on a server of its own (serving `public` as its page): what watch() got, and the
    server's log."""
    server = Server(case, public)
    try:
        nat(case, server.port)
        return watch(case, server, page=page, turn=turn), server.log()
    finally:
        server.stop()


CASES = ["lan", "one-nat", "forwarded", "symmetric", "symmetric-trickled", "udp-blocked", "udp-blocked-tls", "ice-tcp", "moved",
         "servers-silent", "symmetric-without-turn", "symmetric-withheld", "turn-refused"]
# The cases whose viewer is the page in Chromium.
PAGE_CASES = ("ice-tcp", "moved", "turn-refused")
# Must not connect: the proof that what the others have (TURN; the trickled candidates) is what
# connects them.
APART = ("symmetric-without-turn", "symmetric-withheld", "turn-refused")
# The pair each case must take, as the viewer's agent has it: its local candidate's type, and
# the remote's (the camera's) type and address.
EXPECTED = {
    "lan": ("host", f"host udp {CAM_IP}"),
    "one-nat": ("host", f"host udp {CAM_IP}"),
    "forwarded": ("host", f"host udp {RCAM_WAN}"),
    "servers-silent": ("host", f"host udp {RCAM_WAN}"),
    "symmetric": ("relay", None),
    "symmetric-trickled": ("relay", None),
    "udp-blocked": ("relay", None),
    "udp-blocked-tls": ("relay", None),
    "ice-tcp": None,  # the page's own peer is not the test's to read: the server's path says TCP
    "moved": None,
}


# The viewer's end as the server's state reports it (ICEPath.remote): the neighbour's host
# address; a NATed viewer's address as its checks came (peer-reflexive); a relayed one's relay.
SERVER_SEES = {"lan": "host", "one-nat": "prflx", "forwarded": "prflx", "servers-silent": "prflx", "symmetric": "relay", "symmetric-trickled": "relay",
               "udp-blocked": "relay", "udp-blocked-tls": "relay", "ice-tcp": "prflx", "moved": "prflx"}


def check(case, got):
    problems = []
    if "error" in got:
        return [f"{case}: the viewer failed: {got['error']}"]
    if case == "symmetric-without-turn":
        return [f"{case}: connected through two symmetric NATs without TURN: the rig's NAT is not symmetric"] \
            if got.get("first_frame") is not None else []
    if case == "turn-refused":
        text, title = got.get("badge") or ["", ""]
        said = [] if got.get("first_frame") is None else [f"{case}: connected, though nothing should carry it"]
        if not text.startswith("MJPEG") or "no ICE candidate pair succeeded" not in title and "ICE still" not in title \
                or f"turn:{TURN_IP}" not in title or "401" not in title:
            said.append(f"{case}: the page's badge does not say why: {text!r}, {title!r}")
        if not got.get("server_refused"):
            said.append(f"{case}: the server's log does not say the TURN server refused its allocation")
        return said
    if case == "symmetric-withheld":
        return [f"{case}: connected though the server never had the viewer's candidates: the trickled case proves nothing"] \
            if got.get("first_frame") is not None else []
    if case == "symmetric-trickled" and (got.get("trickled") or {}).get("status") != 204:
        problems.append(f"{case}: the PATCH of the viewer's candidates was answered {got.get('trickled')}")
    if not got.get("connected") or got.get("first_frame") is None:
        problems.append(f"{case}: not connected ({got.get('state')}), first frame {got.get('first_frame')}")
    if got.get("frames", 0) < SECONDS * 5:
        problems.append(f"{case}: {got.get('frames')} frames decoded in {SECONDS:.0f} s (at least {SECONDS * 5:.0f} wanted)")
    pair = got.get("pair") or {}
    if EXPECTED[case]:
        local, remote = EXPECTED[case]
        if not pair.get("local", "").startswith(local) or (remote and not pair.get("remote", "").startswith(remote)):
            problems.append(f"{case}: selected pair {pair}, expected local {local}, remote {remote}")
    if case == "moved" and got.get("console"):
        problems.append(f"{case}: the page said: " + "\n    ".join(got["console"]))
    # The page's way back: a picture that paused (it does here: libnice, controlled, keeps sending
    # on its old pair) came back because the page offered again.
    if case == "moved" and (got.get("paused") or 0) >= 0.5 and not got.get("reoffered"):
        problems.append(f"{case}: the picture paused {got.get('paused')} s and the page did not offer again")
    if case == "moved" and (got.get("recovered") is None or got.get("recovered") > RECOVERED_WITHIN
                            or got.get("transport_after") != "WebRTC" or got.get("transport") != "WebRTC"):
        problems.append(f"{case}: after the viewer's address changed: back in {got.get('recovered')} s (within {RECOVERED_WITHIN} wanted), "
                        f"by {got.get('transport_after')}, then {got.get('transport')}")
    if case == "servers-silent":
        said = got.get("server_said") or ""
        if f"no TURN server ({SILENT_IP}:3478" not in said or f"the STUN server stun://{SILENT_IP}:3478 did not answer" not in said:
            problems.append(f"{case}: the server's log does not say which ICE servers did not answer: {said!r}")
        if (got.get("answered_in") or 0) > 4.5:
            problems.append(f"{case}: the answer took {got.get('answered_in')} s: the wait for silent servers is 3 s")
    if case == "udp-blocked-tls" and not pair.get("via", "").endswith("over TLS"):
        problems.append(f"{case}: the relay was not reached over TLS: {pair}")
    if case == "udp-blocked" and "Tcp" not in pair.get("via", ""):
        problems.append(f"{case}: the relay was not reached over TCP: {pair}")
    path = got.get("server_path") or {}
    protocol = "tcp" if case == "ice-tcp" else "udp"
    if path.get("remote") != SERVER_SEES[case] or not path.get("local") or path.get("protocol") != protocol:
        problems.append(f"{case}: the server's state says the viewer's path is {path or None}, expected its end {SERVER_SEES[case]} over {protocol}")
    if got.get("secret_seen"):
        problems.append(f"{case}: the TURN secret was in what the viewer received")
    return problems


def main():
    global SECRET_ARG
    if len(sys.argv) == 6 and sys.argv[1] == "--page":
        page_viewer(sys.argv[2], float(sys.argv[3]), float(sys.argv[4]), sys.argv[5] == "move")
        return
    if len(sys.argv) == 8 and sys.argv[1] == "--viewer":
        SECRET_ARG = sys.argv[6]
        viewer(sys.argv[2], sys.argv[3], float(sys.argv[4]), float(sys.argv[5]), sys.argv[7])
        return
    if os.geteuid() != 0:
        sys.exit("test_nat: needs root (network namespaces, iptables)")
    only = [c for c in sys.argv[1:] if c in CASES] or CASES
    failures, rows = [], []
    try:
        with rig() as turn:
            for case in only:
                got, log = play(case, turn)
                if os.environ.get("NAT_DEBUG"):
                    print(json.dumps({k: v for k, v in got.items() if k != "console"}))
                    print("\n".join(l for l in log.splitlines() if ": by " in l))
                problems = check(case, got)
                if problems:
                    problems.append(f"{case}: the server's log:\n" + log[-3000:])
                    if case in TURNED:
                        problems.append(f"{case}: coturn's log:\n" + turn.log()[-3000:])
                failures += problems
                rows.append((case, got))
                moved = f", paused {got.get('paused')} s, back {got.get('recovered')} s after the move, offered again {got.get('reoffered')} times" \
                    if case == "moved" else ""
                print(f"{case}: connected {got.get('connected')}, first frame {got.get('first_frame')} s, "
                      f"{got.get('frames')} frames in {SECONDS:.0f} s, pair {got.get('pair')}, the server's state: {got.get('server_path')}{moved}",
                      flush=True)
    except RuntimeError as e:  # the rig itself
        failures.append(str(e))
    if failures:
        print("FAIL:\n  " + "\n  ".join(failures))
        sys.exit(1)
    print(f"test_nat: passed ({len(rows)} topologies, each as it must)")


if __name__ == "__main__":
    main()
