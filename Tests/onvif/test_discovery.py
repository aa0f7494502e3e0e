#!/usr/bin/python3
"""`make test` (issue 39): WS-Discovery between two network namespaces joined by a veth pair
(multicast never leaves them), as Home Assistant finds cameras: the server in `vf-cam`
(10.78.0.1, HTTP on 0.0.0.0), the searcher in `vf-nvr` (10.78.0.2) — PyPI's WSDiscovery, the
library Home Assistant's ONVIF config flow uses (it skips loopback: on loopback alone it finds
nothing, whatever the device does). Checked: the Hello the server sends as it starts, a
ProbeMatch to HA's search (type NetworkVideoTransmitter, the Streaming scope) naming the
device service on the address the NVR can reach, a raw Probe answered within a second
(measured), a Probe for another type or scope left unanswered, Home Assistant's client
signing in at the XAddr from the other namespace, and the Bye at stop. Needs root (ip netns).

Prints PASS/FAIL per check and `N passed, N failed`; exits 1 when anything failed.
"""
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from harness import PASSWORD, ROOT, VENV, check, make_venv, summary
from harness import start as start_server

CAM_NS, NVR_NS = "vf-cam", "vf-nvr"
CAM_IP, NVR_IP = "10.78.0.1", "10.78.0.2"


def run(*args):
    subprocess.run(args, check=True)


def namespaces_up():
    namespaces_down()
    run("ip", "netns", "add", CAM_NS)
    run("ip", "netns", "add", NVR_NS)
    run("ip", "link", "add", "vf-cam0", "netns", CAM_NS, "type", "veth", "peer", "name", "vf-nvr0", "netns", NVR_NS)
    for ns, ifname, ip in ((CAM_NS, "vf-cam0", CAM_IP), (NVR_NS, "vf-nvr0", NVR_IP)):
        run("ip", "netns", "exec", ns, "ip", "addr", "add", ip + "/24", "dev", ifname)
        run("ip", "netns", "exec", ns, "ip", "link", "set", ifname, "up")
        run("ip", "netns", "exec", ns, "ip", "link", "set", "lo", "up")
        # Multicast out of the veth (there is no default route in a namespace).
        run("ip", "netns", "exec", ns, "ip", "route", "add", "224.0.0.0/4", "dev", ifname)


def namespaces_down():
    for ns in (CAM_NS, NVR_NS):
        subprocess.run(["ip", "netns", "del", ns], capture_output=True)


def in_nvr(code, timeout=60):
    """Runs Python `code` in the NVR's namespace with the venv (onvif-zeep-async, WSDiscovery);
    its last stdout line, read as JSON."""
    p = subprocess.run(["ip", "netns", "exec", NVR_NS, str(VENV / "bin/python3"), "-c", code],
                       capture_output=True, text=True, timeout=timeout)
    try:
        return json.loads(p.stdout.strip().splitlines()[-1])
    except (IndexError, ValueError):
        return {"error": p.stderr[-1500:] or p.stdout[-500:]}


LISTEN = r'''
import json, socket, struct, time, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", 3702))
s.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP, struct.pack("4s4s", socket.inet_aton("239.255.255.250"), socket.inet_aton("%s")))
print("listening", flush=True)
s.settimeout(%d)
try:
    while True:
        data, who = s.recvfrom(65536)
        text = data.decode("utf-8", "replace")
        if "%s" in text:
            print(json.dumps({"from": who[0], "text": text}), flush=True)
            break
except socket.timeout:
    print(json.dumps({"error": "nothing in time"}), flush=True)
'''


def listen_for(action, seconds):
    """A listener in the NVR's namespace joined to the group, until `action` (Hello, Bye)
    arrives: (process, a function answering its JSON)."""
    p = subprocess.Popen(["ip", "netns", "exec", NVR_NS, "/usr/bin/python3", "-c", LISTEN % (NVR_IP, seconds, action)],
                         stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "listening"

    def result():
        out = p.communicate(timeout=seconds + 30)[0]
        try:
            return json.loads(out.strip().splitlines()[-1])
        except (IndexError, ValueError):
            return {"error": out}
    return result


def start(tmp):
    p, http, _ = start_server(tmp, {
        "server": {"host": "0.0.0.0", "port": 0, "publicDirectory": str(ROOT / "Public")},
        "cameras": [{"id": "rear", "source": "synthetic", "position": "rear"}],
        "session": {"preset": "352x288", "fps": 15}, "synthetic": {"noise": False}, "rtsp": {"enabled": False}},
        [("ha", "viewer", True)], prefix=("ip", "netns", "exec", CAM_NS))
    return p, http


PROBE = '''<?xml version="1.0" encoding="UTF-8"?><s:Envelope xmlns:s="http://www.w3.org/2003/05/soap-envelope"
 xmlns:a="http://schemas.xmlsoap.org/ws/2004/08/addressing" xmlns:d="http://schemas.xmlsoap.org/ws/2005/04/discovery"
 xmlns:dn="http://www.onvif.org/ver10/network/wsdl"><s:Header><a:MessageID>urn:uuid:%s</a:MessageID>
<a:To>urn:schemas-xmlsoap-org:ws:2005:04:discovery</a:To><a:Action>http://schemas.xmlsoap.org/ws/2005/04/discovery/Probe</a:Action>
</s:Header><s:Body><d:Probe><d:Types>%s</d:Types>%s</d:Probe></s:Body></s:Envelope>'''

RAW = r'''
import json, socket, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("%s", 0))
s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_IF, socket.inet_aton("%s"))
probe = %r
start = time.monotonic()
s.sendto(probe.encode(), ("239.255.255.250", 3702))
s.settimeout(%f)
try:
    data, who = s.recvfrom(65536)
    print(json.dumps({"seconds": time.monotonic() - start, "from": who[0], "text": data.decode()}))
except socket.timeout:
    print(json.dumps({"seconds": None}))
'''


def raw_probe(types="dn:NetworkVideoTransmitter", scopes="", wait=3.0):
    body = PROBE % (uuid.uuid4(), types, "<d:Scopes>%s</d:Scopes>" % scopes if scopes else "")
    return in_nvr(RAW % (NVR_IP, NVR_IP, body, wait))


SEARCH = r'''
import json
from wsdiscovery.discovery import ThreadedWSDiscovery
from wsdiscovery import QName, Scope
wsd = ThreadedWSDiscovery()
wsd.start()
try:
    # As Home Assistant's config flow: every NetworkVideoTransmitter with the Streaming scope.
    found = wsd.searchServices(types=[QName("http://www.onvif.org/ver10/network/wsdl", "NetworkVideoTransmitter")],
                               scopes=[Scope("onvif://www.onvif.org/Profile/Streaming")], timeout=4)
    print(json.dumps([{"epr": s.getEPR(), "xaddrs": s.getXAddrs(), "scopes": [str(x.getValue()) for x in s.getScopes()]} for s in found]))
finally:
    wsd.stop()
'''

SIGN_IN = r'''
import asyncio, json, onvif
from pathlib import Path
async def main():
    cam = onvif.ONVIFCamera("%s", %d, "ha", %r, str(Path(onvif.__file__).parent / "wsdl"))
    try:
        await cam.update_xaddrs()
        info = await (await cam.create_devicemgmt_service()).GetDeviceInformation()
        print(json.dumps({"manufacturer": info.Manufacturer, "model": info.Model}))
    finally:
        await cam.close()
asyncio.run(main())
'''


def main():
    if os.geteuid() != 0:
        print("test_discovery: needs root (ip netns)")
        return 1
    make_venv()
    tmp = Path(tempfile.mkdtemp(prefix="vf-discovery-"))
    namespaces_up()
    p = None
    try:
        hello = listen_for("/discovery/Hello", 60)
        p, port = start(tmp)
        xaddr = "http://%s:%d/onvif/device_service" % (CAM_IP, port)
        h = hello()
        check("Hello at start, from the camera's namespace, naming %s" % xaddr,
              h.get("from") == CAM_IP and xaddr in h.get("text", "") and "NetworkVideoTransmitter" in h.get("text", ""), h)

        found = in_nvr(SEARCH)
        mine = [s for s in found if isinstance(s, dict) and xaddr in s["xaddrs"]] if isinstance(found, list) else []
        check("Home Assistant's search (WSDiscovery, NetworkVideoTransmitter + Streaming) finds it at %s" % xaddr,
              len(mine) == 1 and mine[0]["epr"].startswith("urn:uuid:")
              and any(s.startswith("onvif://www.onvif.org/name/") for s in mine[0]["scopes"]), found)

        times = []
        for _ in range(5):
            r = raw_probe()
            times.append(r.get("seconds"))
        answered = [t for t in times if t is not None]
        check("five raw Probes each answered within a second (%s ms)" % ", ".join("%.1f" % (t * 1000) for t in answered),
              len(answered) == 5 and max(answered) < 1.0, times)
        r = raw_probe()
        check("the ProbeMatch relates to the Probe and comes from the camera", r.get("from") == CAM_IP
              and "RelatesTo" in r.get("text", "") and "ProbeMatches" in r.get("text", ""), r)
        other = raw_probe(types="dn:SomethingElse", wait=1.5)
        check("a Probe for another type is not answered", other.get("seconds") is None, other)
        scoped = raw_probe(scopes="onvif://www.onvif.org/location/mars", wait=1.5)
        check("a Probe for a scope it lacks is not answered", scoped.get("seconds") is None, scoped)
        junk = in_nvr(RAW.replace("probe.encode()", "b'\\x00not xml'") % (NVR_IP, NVR_IP, "", 1.0))
        check("junk on the port is ignored and the next Probe answered", junk.get("seconds") is None and raw_probe().get("seconds") is not None, junk)

        # libonvif's onvif-util (Debian's onvif-tools): its own multicast Probe, then GetHostname.
        listed = subprocess.run(["ip", "netns", "exec", NVR_NS, "onvif-util", "-a"], capture_output=True, text=True, timeout=60)
        check("onvif-util -a (libonvif) lists it: %s" % listed.stdout.strip().splitlines()[-1:],
              "%s " % CAM_IP in listed.stdout and "Viewfinder rear" in listed.stdout, (listed.stdout[-500:], listed.stderr[-300:]))
        # Its login: found by discovery, then GetCapabilities and a signed GetDeviceInformation.
        # (Debian 12's libonvif 1.4.4 seeds its nonce generator with the second on every
        # request, so its next calls within that second repeat the nonce, which is refused as
        # a replay; upstream fixed it in 2025, "Fix nonce repeat".)
        login = subprocess.run(["ip", "netns", "exec", NVR_NS, "onvif-util", "-u", "ha", "-p", PASSWORD, CAM_IP],
                               input="quit\n", capture_output=True, text=True, timeout=60)
        check("onvif-util signs in at the discovered address: %s" % " ".join(login.stdout.split()[:12]),
              "successfully connected" in login.stdout and "Viewfinder" in login.stdout, (login.stdout[-500:], login.stderr[-300:]))

        signed = in_nvr(SIGN_IN % (CAM_IP, port, PASSWORD))
        check("Home Assistant's client signs in at the discovered address from the other namespace",
              signed.get("manufacturer") == "Viewfinder", signed)

        bye = listen_for("/discovery/Bye", 30)
        p.terminate()
        p.wait(30)
        b = bye()
        check("Bye at stop", b.get("from") == CAM_IP and "urn:uuid:" in b.get("text", ""), b)
        p = None
    finally:
        if p:
            p.kill()
        namespaces_down()
        subprocess.run(["rm", "-rf", str(tmp)])
    return summary()


if __name__ == "__main__":
    sys.exit(main())
