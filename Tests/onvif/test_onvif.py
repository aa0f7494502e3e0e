#!/usr/bin/python3
"""`make test` (issue 39): the server as an ONVIF device, driven by the client Home Assistant's
ONVIF integration uses — onvif-zeep-async (pinned as Home Assistant pins it; zeep reads the
answers against ONVIF's own WSDLs), in a venv under .build/ (scripts/py-venv). In the order the
integration calls: GetCapabilities, GetSystemDateAndTime, GetDeviceInformation,
GetNetworkInterfaces (the device's own MAC first), GetProfiles (a main and a sub H.264
profile per camera), GetStreamUri (ffprobe plays it: H.264 at the profile's size) and
GetSnapshotUri (a JPEG, over HTTP Digest as HA fetches it). Sign-in: a viewer given ONVIF sign-in
reads; the same user with a wrong password, a user without ONVIF sign-in, no token at all and a
replayed token are each refused with ter:NotAuthorized; GetUsers needs an operator; the clock
needs no one. Events as HA takes them, both ways at once: a pull point (SetSynchronizationPoint,
PullMessages) and a webhook (Subscribe with the webhook's address, the device POSTing Notify
messages that HA's own NotificationManager.process parses), each seeing a staged walker's
motion start and end, then Unsubscribe. PTZ as HA and Frigate drive it:
an absolute zoom, a field-of-view step, a continuous zoom HA's Stop leaves running (ended by
the default timeout), a continuous pan (two state events: its start and its end), presets; a
viewer may not move. Imaging: a manual exposure and a focus
move reach the session. Every answer of every operation validated against ONVIF's own schemas
(the WSDLs the client bundles, compiled by lxml). Bad input: a DTD (billion laughs), SOAP 1.1, not XML — each a SOAP 1.2 fault, and
the server still answers after.

Prints PASS/FAIL per check and `N passed, N failed`; exits 1 when anything failed.
"""
import asyncio
import base64
import datetime
import hashlib
import http.server
import json
import os
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request
from pathlib import Path

from harness import PASSWORD, ROOT, VENV, check, make_venv, summary
from harness import served


CONFIG = {
    "server": {"host": "127.0.0.1", "port": 0, "publicDirectory": str(ROOT / "Public")},
    "cameras": [{"id": "rear", "source": "synthetic", "position": "rear"},
                {"id": "front", "source": "synthetic", "position": "front"}],
    "session": {"preset": "640x480", "fps": 15}, "synthetic": {"noise": False, "microphone": True}, "rtsp": {"port": 0}}
USERS = [("ha", "viewer", True), ("boss", "operator", True), ("web", "viewer", False)]


def soap(port, body, header=""):
    """A raw SOAP 1.2 request: (status, text)."""
    xml = ('<s:Envelope xmlns:s="http://www.w3.org/2003/05/soap-envelope" xmlns:tds="http://www.onvif.org/ver10/device/wsdl">'
           '<s:Header>%s</s:Header><s:Body>%s</s:Body></s:Envelope>' % (header, body))
    return post(port, xml.encode())


def post(port, data, path="/onvif/device_service"):
    req = urllib.request.Request("http://127.0.0.1:%d%s" % (port, path), data=data, method="POST",
                                 headers={"Content-Type": "application/soap+xml; charset=utf-8"})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def token(user, password, nonce=None, created=None):
    nonce = nonce or os.urandom(16)
    created = created or datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    digest = base64.b64encode(hashlib.sha1(nonce + created.encode() + password.encode()).digest()).decode()
    return ('<wsse:Security xmlns:wsse="http://docs.oasis-open.org/wss/2004/01/oasis-200401-wss-wssecurity-secext-1.0.xsd" '
            'xmlns:wsu="http://docs.oasis-open.org/wss/2004/01/oasis-200401-wss-wssecurity-utility-1.0.xsd"><wsse:UsernameToken>'
            '<wsse:Username>%s</wsse:Username><wsse:Password Type="http://docs.oasis-open.org/wss/2004/01/'
            'oasis-200401-wss-username-token-profile-1.0#PasswordDigest">%s</wsse:Password><wsse:Nonce>%s</wsse:Nonce>'
            '<wsu:Created>%s</wsu:Created></wsse:UsernameToken></wsse:Security>') % (user, digest, base64.b64encode(nonce).decode(), created)


async def as_home_assistant(port, rtsp):
    from onvif import ONVIFCamera
    from zeep.exceptions import Fault
    cam = ONVIFCamera("127.0.0.1", port, "ha", PASSWORD, str(Path(__import__("onvif").__file__).parent / "wsdl"))
    try:
        await cam.update_xaddrs()
        check("GetCapabilities: the media service's address", "http://www.onvif.org/ver10/media/wsdl" in cam.xaddrs
              and cam.xaddrs["http://www.onvif.org/ver10/media/wsdl"].endswith("/onvif/media_service"), cam.xaddrs)
        device = await cam.create_devicemgmt_service()
        t = await device.GetSystemDateAndTime()
        now = datetime.datetime.now(datetime.timezone.utc)
        u = t.UTCDateTime
        told = datetime.datetime(u.Date.Year, u.Date.Month, u.Date.Day, u.Time.Hour, u.Time.Minute, u.Time.Second, tzinfo=datetime.timezone.utc)
        check("GetSystemDateAndTime: the clock within 5 s, NTP (so HA sets nothing)",
              abs((told - now).total_seconds()) < 5 and t.DateTimeType == "NTP", (told, now, t.DateTimeType))
        info = await device.GetDeviceInformation()
        check("GetDeviceInformation: Viewfinder, the camera's model, a serial", info.Manufacturer == "Viewfinder"
              and info.Model and info.SerialNumber and info.FirmwareVersion, info)
        nics = await device.GetNetworkInterfaces()
        # Reached over loopback, which has no MAC of its own (all zeros on every host): the first
        # interface with one comes first — HA's unique id — and loopback is listed too; lo alone
        # only where there is no other interface (an empty network namespace).
        first = nics[0].Info if nics else None
        own = first is not None and first.Name != "lo" and first.HwAddress.strip("0:") != "" \
            and first.HwAddress == Path("/sys/class/net/%s/address" % first.Name).read_text().strip()
        check("GetNetworkInterfaces: enabled, the device's own MAC first (%s %s), loopback after"
              % (first.Name if first else None, first.HwAddress if first else None),
              nics and nics[0].Enabled and (own and any(n.Info.Name == "lo" for n in nics)
                                            or [n.Info.Name for n in nics] == ["lo"]), nics)
        media = await cam.create_media_service()
        profiles = await media.GetProfiles()
        tokens = [p.token for p in profiles]
        check("GetProfiles: a main and a sub H.264 profile and a JPEG one per camera",
              tokens == ["rear_main", "rear_sub", "rear_jpeg", "front_main", "front_sub", "front_jpeg"]
              and [p.VideoEncoderConfiguration.Encoding for p in profiles] == ["H264", "H264", "JPEG"] * 2, tokens)
        a = profiles[0].AudioEncoderConfiguration
        # The rear camera runs with its microphone; the front one is idle here: no sound runs.
        check("the running camera's profiles carry its microphone (AAC at %s kHz), the idle one's none" % (a and a.SampleRate),
              all(p.AudioEncoderConfiguration is not None and p.AudioEncoderConfiguration.Encoding == "AAC" for p in profiles[:2])
              and profiles[0].AudioSourceConfiguration.SourceToken == "rear_mic"
              and all(p.AudioEncoderConfiguration is None for p in profiles[2:]),  # the JPEG stream has no sound
              [(p.token, p.AudioEncoderConfiguration is not None, p.AudioSourceConfiguration and p.AudioSourceConfiguration.SourceToken) for p in profiles])
        main = profiles[0]
        r = main.VideoEncoderConfiguration.Resolution
        check("the main profile is the camera's size: %dx%d" % (r.Width, r.Height), (r.Width, r.Height) == (640, 480), r)
        for p in profiles[:3]:
            setup = {"Stream": "RTP-Unicast", "Transport": {"Protocol": "RTSP"}}
            uri = (await media.GetStreamUri({"StreamSetup": setup, "ProfileToken": p.token})).Uri
            expected = "rtsp://127.0.0.1:%d/rear%s" % (rtsp, {"rear_sub": "/sub", "rear_jpeg": "/jpeg"}.get(p.token, ""))
            codec = "mjpeg" if p.token.endswith("jpeg") else "h264"
            # HA puts its user into the URI, as here.
            signed = uri.replace("rtsp://", "rtsp://ha:%s@" % PASSWORD.replace(" ", "%20"))
            probe = subprocess.run(["ffprobe", "-v", "error", "-rtsp_transport", "tcp", "-select_streams", "v:0", "-show_entries",
                                    "stream=codec_name,width,height", "-of", "json", signed], capture_output=True, text=True, timeout=60)
            streams = json.loads(probe.stdout or "{}").get("streams", [])
            res = p.VideoEncoderConfiguration.Resolution
            check("GetStreamUri %s: %s plays %s at %dx%d" % (p.token, uri, codec, res.Width, res.Height),
                  uri == expected and streams and streams[0]["codec_name"] == codec
                  and (streams[0]["width"], streams[0]["height"]) == (res.Width, res.Height), (uri, streams, probe.stderr[-300:]))
        snap = (await media.GetSnapshotUri({"ProfileToken": "front_main"})).Uri
        # HA fetches it with Digest first (httpx's DigestAuth); curl's Digest here.
        jpeg = subprocess.run(["curl", "-sf", "--digest", "-u", "ha:" + PASSWORD, "--max-time", "30", snap],
                              capture_output=True, timeout=60).stdout
        check("GetSnapshotUri: %s answers a JPEG over Digest" % snap, snap.endswith("/cameras/front/snapshot") and jpeg[:2] == b"\xff\xd8", len(jpeg))
        try:
            await device.GetUsers()
            check("GetUsers needs an operator", False, "a viewer read the users")
        except Fault as f:
            codes = [q.localname for q in f.subcodes or []]
            check("GetUsers needs an operator: %s" % f.message, "NotAuthorized" in codes and "operator" in f.message, (f.message, codes))
    finally:
        await cam.close()

    boss = ONVIFCamera("127.0.0.1", port, "boss", PASSWORD, str(Path(__import__("onvif").__file__).parent / "wsdl"))
    try:
        await boss.update_xaddrs()
        users = await (await boss.create_devicemgmt_service()).GetUsers()
        check("GetUsers as an operator: names and levels, never a password",
              sorted((u.Username, u.UserLevel) for u in users) == [("boss", "Administrator"), ("ha", "User"), ("web", "User")]
              and all(getattr(u, "Password", None) is None for u in users), users)
    finally:
        await boss.close()

    for user, password, why in (("ha", "wrong", "a wrong password"), ("web", PASSWORD, "a user without ONVIF sign-in")):
        bad = ONVIFCamera("127.0.0.1", port, user, password, str(Path(__import__("onvif").__file__).parent / "wsdl"))
        try:
            await bad.update_xaddrs()
            await (await bad.create_devicemgmt_service()).GetDeviceInformation()
            check("%s is refused" % why, False, "answered")
        except Fault as f:
            # What HA's config flow reads as "auth_failed" (a subcode with NotAuthorized).
            codes = [q.localname for q in f.subcodes or []]
            check("%s is refused: %s (%s)" % (why, f.message, codes), "NotAuthorized" in codes, (f.message, codes))
        finally:
            await bad.close()


def api(port, path, body):
    """A POST to the HTTP API as the operator (Digest, as curl signs in)."""
    r = subprocess.run(["curl", "-sf", "--digest", "-u", "boss:" + PASSWORD, "--max-time", "30", "-X", "POST",
                        "-H", "Content-Type: application/json", "-d", json.dumps(body), "http://127.0.0.1:%d%s" % (port, path)],
                       capture_output=True, timeout=60)
    return r.returncode == 0


def api_get(port, path):
    r = subprocess.run(["curl", "-sf", "--digest", "-u", "boss:" + PASSWORD, "--max-time", "30", "http://127.0.0.1:%d%s" % (port, path)],
                       capture_output=True, timeout=60)
    return json.loads(r.stdout or "null")


async def ptz_as_home_assistant(port):
    """Home Assistant's PTZ calls through onvif-zeep-async, as an operator: GetPresets, an
    absolute zoom, Frigate's field-of-view step, HA's ContinuousMove then Stop(Zoom=false),
    GetStatus — each read back from the camera's session state; a viewer is refused."""
    from onvif import ONVIFCamera
    from zeep.exceptions import Fault
    wsdl = str(Path(__import__("onvif").__file__).parent / "wsdl")
    cam = ONVIFCamera("127.0.0.1", port, "boss", PASSWORD, wsdl)
    try:
        await cam.update_xaddrs()
        check("GetCapabilities: the PTZ service's address",
              cam.xaddrs.get("http://www.onvif.org/ver20/ptz/wsdl", "").endswith("/onvif/ptz_service"), cam.xaddrs)
        media = await cam.create_media_service()
        profile = (await media.GetProfiles())[0]
        check("the profile carries a PTZ configuration with the spaces HA needs for its moves",
              profile.PTZConfiguration is not None and profile.PTZConfiguration.DefaultContinuousPanTiltVelocitySpace
              and profile.PTZConfiguration.DefaultRelativePanTiltTranslationSpace, profile.PTZConfiguration)
        ptz = await cam.create_ptz_service()
        check("GetPresets: none yet", not await ptz.GetPresets({"ProfileToken": profile.token}))
        zoom = lambda: (api_get(port, "/api/cameras/rear/session") or {}).get("zoom", {})
        await ptz.AbsoluteMove({"ProfileToken": profile.token, "Position": {"Zoom": {"x": 1 / 7}}})
        z = zoom()
        check("AbsoluteMove zoom 1/7 of 1x-8x: the session zooms 2x (%s)" % z.get("factor"), abs(z.get("factor", 0) - 2) < 0.01, z)
        await ptz.RelativeMove({"ProfileToken": profile.token, "Translation": {"PanTilt": {
            "x": 1, "y": 0, "space": "http://www.onvif.org/ver10/tptz/PanTiltSpaces/TranslationSpaceFov"}}})
        z = zoom()
        check("a field-of-view step of 1 (Frigate's autotracking): the crop's centre moves half a picture right, to %s"
              % z.get("center"), z.get("center") == {"x": 0.75, "y": 0.5}, z)
        status = await ptz.GetStatus({"ProfileToken": profile.token})
        check("GetStatus: pan 0.5 (a 2x crop's centre at the frame's right edge), zoom 1/7",
              abs(status.Position.PanTilt.x - 0.5) < 1e-3 and abs(status.Position.Zoom.x - 1 / 7) < 1e-3, status.Position)
        # HA's "continuous" zoom: ContinuousMove, half a second, Stop with Zoom=false.
        await ptz.ContinuousMove({"ProfileToken": profile.token, "Velocity": {"PanTilt": {"x": 0, "y": 0}, "Zoom": {"x": 0.5}}})
        await asyncio.sleep(0.5)
        await ptz.Stop({"ProfileToken": profile.token, "PanTilt": True, "Zoom": False})
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and zoom().get("ramping"):
            await asyncio.sleep(0.1)
        z = zoom()
        check("ContinuousMove zoom in, Stop(Zoom=false): the zoom went in and stopped by itself (%s)" % z.get("factor"),
              2 < z.get("factor", 0) < 8 and not z.get("ramping"), z)
        # HA's pan: ContinuousMove PanTilt, a second, Stop. The session runs it on a per-frame
        # ramp: announced when it starts and when it stops, not at every step (it was ~20 a second).
        before = zoom().get("center", {})
        events = subprocess.Popen(["curl", "-sN", "--digest", "-u", "boss:" + PASSWORD, "--max-time", "60",
                                   "http://127.0.0.1:%d/api/events?camera=rear" % port], stdout=subprocess.PIPE, text=True)
        states = []
        seen = threading.Event()
        def read_events():
            kind = None
            for line in events.stdout:
                if line.startswith("event:"):
                    kind = line[6:].strip()
                elif line.startswith("data:") and kind == "state":
                    states.append(json.loads(line[5:]).get("zoom", {}))
                    seen.set()
        reader = threading.Thread(target=read_events, daemon=True)
        reader.start()
        check("the event stream opens with the state", seen.wait(10), states)
        first = len(states)
        await ptz.ContinuousMove({"ProfileToken": profile.token, "Velocity": {"PanTilt": {"x": -0.5, "y": 0}}})
        moving = await ptz.GetStatus({"ProfileToken": profile.token})
        await asyncio.sleep(0.8)
        await ptz.Stop({"ProfileToken": profile.token, "PanTilt": True, "Zoom": False})
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not any(not z.get("panning", True) for z in states[first:]):
            await asyncio.sleep(0.02)
        pan = states[first:]
        events.kill()
        after = zoom().get("center", {})
        check("ContinuousMove pan: GetStatus says MOVING, and the crop moved left (%s -> %s)" % (before.get("x"), after.get("x")),
              moving.MoveStatus.PanTilt == "MOVING" and after.get("x", 1) < before.get("x", 0) - 0.05, (moving.MoveStatus, before, after))
        check("a continuous pan publishes two state events, its start and its end (%d)" % len(pan),
              [z.get("panning") for z in pan] == [True, False], pan)
        # Imaging: the session's exposure and focus, read back from its state.
        imaging = await cam.create_imaging_service()
        source = profile.VideoSourceConfiguration.SourceToken
        await imaging.SetImagingSettings({"VideoSourceToken": source, "ImagingSettings": {
            "Exposure": {"Mode": "MANUAL", "ExposureTime": 10000, "Gain": 400}}})
        e = (api_get(port, "/api/cameras/rear/session") or {}).get("exposure", {})
        check("SetImagingSettings MANUAL 10000 us, gain 400: the session's custom exposure (%s)" % e,
              e.get("mode") == "custom" and abs(e.get("duration", 0) - 0.01) < 1e-6 and e.get("iso") == 400, e)
        await imaging.Move({"VideoSourceToken": source, "Focus": {"Absolute": {"Position": 0.3}}})
        f = (api_get(port, "/api/cameras/rear/session") or {}).get("focus", {})
        st = await imaging.GetStatus({"VideoSourceToken": source})
        check("Move focus to 0.3: the lens locked there, and GetStatus says so", f.get("mode") == "locked"
              and abs(f.get("lensPosition", 0) - 0.3) < 1e-6 and abs(st.FocusStatus20.Position - 0.3) < 1e-3, (f, st))
        got = await imaging.GetImagingSettings({"VideoSourceToken": source})
        check("GetImagingSettings: MANUAL exposure and focus", got.Exposure.Mode == "MANUAL" and got.Focus.AutoFocusMode == "MANUAL", got)
        await ptz.SetPreset({"ProfileToken": profile.token, "PresetName": "door"})
        presets = await ptz.GetPresets({"ProfileToken": profile.token})
        check("SetPreset then GetPresets: the preset is listed", [p.Name for p in presets] == ["door"], presets)
    finally:
        await cam.close()
    viewer = ONVIFCamera("127.0.0.1", port, "ha", PASSWORD, wsdl)
    try:
        await viewer.update_xaddrs()
        ptz = await viewer.create_ptz_service()
        try:
            await ptz.AbsoluteMove({"ProfileToken": "rear_main", "Position": {"Zoom": {"x": 1}}})
            check("a viewer's move is refused", False, "moved")
        except Fault as f:
            check("a viewer's move is refused: %s" % f.message, "NotAuthorized" in [q.localname for q in f.subcodes or []]
                  and zoom().get("factor", 8) < 8, f.message)
    finally:
        await viewer.close()


async def events_as_home_assistant(port):
    """Home Assistant's event setup: a pull point made by onvif-zeep-async's PullPointManager,
    SetSynchronizationPoint, PullMessages(PT1M, 100) in a loop; motion read as its parser does
    (the topic's text, the first Source item, the first Data item). A walker staged in the rear
    camera's scene must arrive as IsMotion true, then false."""
    from onvif import ONVIFCamera
    from zeep.exceptions import Fault
    cam = ONVIFCamera("127.0.0.1", port, "ha", PASSWORD, str(Path(__import__("onvif").__file__).parent / "wsdl"))
    try:
        await cam.update_xaddrs()
        check("GetCapabilities: the events service's address",
              cam.xaddrs.get("http://www.onvif.org/ver10/events/wsdl", "").endswith("/onvif/events_service"), cam.xaddrs)
        lost = []
        hook = Webhook()
        notifications = await cam.create_notification_manager(hook.url, datetime.timedelta(minutes=10), lambda: lost.append(True))
        check("Subscribe (HA's webhook): a subscription of its own (%s)" % cam.xaddrs.get(
              "http://www.onvif.org/ver10/events/wsdl/NotificationConsumer"),
              "/onvif/subscriptions/" in cam.xaddrs.get("http://www.onvif.org/ver10/events/wsdl/NotificationConsumer", ""))
        await notifications.set_synchronization_point()  # as HA does, to see the webhook work
        manager = await cam.create_pullpoint_manager(datetime.timedelta(minutes=10), lambda: lost.append(True))
        service = manager.get_service()
        address = cam.xaddrs["http://www.onvif.org/ver10/events/wsdl/PullPointSubscription"]
        check("CreatePullPointSubscription: the pull point's own address (%s)" % address, "/onvif/subscriptions/" in address, address)

        def read(messages):
            out = []
            for msg in messages or []:
                m = msg.Message._value_1
                out.append((msg.Topic._value_1, m.Source.SimpleItem[0].Value, m.Data.SimpleItem[0].Name,
                            m.Data.SimpleItem[0].Value, m.PropertyOperation, m.UtcTime))
            return out

        async def pull(seconds):
            r = await service.PullMessages({"MessageLimit": 100, "Timeout": datetime.timedelta(seconds=seconds)})
            return read(r.NotificationMessage)

        first = await pull(1)
        check("the first pull: each camera's motion as it is, on both topics (Initialized, false)",
              sorted((t, s, v, op) for t, s, _, v, op, _ in first) == sorted(
                  (t, s, "false", "Initialized") for t in ("tns1:RuleEngine/CellMotionDetector/Motion", "tns1:VideoSource/MotionAlarm")
                  for s in ("rear", "front")), first)
        await manager.set_synchronization_point()
        check("SetSynchronizationPoint: the properties again", len(await pull(1)) == 4)

        # A still scene, the detector on, then a walker crossing it in 3 s for 2 s.
        staged = (api(port, "/api/cameras/rear/scene", {"moving": False})
                  and api(port, "/api/cameras/rear/session/motion", {"enabled": True})
                  and api(port, "/api/cameras/rear/scene", {"walker": {"after": 3, "duration": 2}}))
        check("the walker staged (as the operator, over HTTP)", staged)
        seen, delays = [], []
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and not any(v == "false" and op == "Changed" for _, _, _, v, op, _ in seen):
            got = await pull(60)
            arrived = datetime.datetime.now(datetime.timezone.utc)
            for m in got:
                if m[4] == "Changed":
                    delays.append((arrived - m[5]).total_seconds())
            seen += [m for m in got if m[0] == "tns1:RuleEngine/CellMotionDetector/Motion"]
        changes = [(s, name, v) for _, s, name, v, op, _ in seen if op == "Changed"]
        check("the walker: IsMotion true, then false, for the rear camera (from the event to the client: %s s)"
              % ", ".join("%.3f" % d for d in delays), changes == [("rear", "IsMotion", "true"), ("rear", "IsMotion", "false")], seen)
        # The webhook's Notify messages, parsed as HA's webhook handler does.
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not any(v == "false" and op == "Changed" for _, _, _, v, op, _ in hook.read(notifications)):
            await asyncio.sleep(0.05)
        pushed = hook.read(notifications)
        check("the webhook: each camera's motion as it is first (Initialized), from %d POSTs" % len(hook.posts),
              {(s, v, op) for t, s, _, v, op, _ in pushed[:4]} == {("rear", "false", "Initialized"), ("front", "false", "Initialized")}, pushed[:4])
        pushed_changes = [(s, name, v) for t, s, name, v, op, _ in pushed
                          if op == "Changed" and t == "tns1:RuleEngine/CellMotionDetector/Motion"]
        push_delays = [arrived - m[5].timestamp() for arrived, m in hook.arrivals(notifications) if m[4] == "Changed"]
        check("the webhook: IsMotion true, then false, for the rear camera (from the event to the webhook: %s s)"
              % ", ".join("%.3f" % d for d in push_delays),
              pushed_changes == [("rear", "IsMotion", "true"), ("rear", "IsMotion", "false")], pushed)
        await notifications.shutdown()  # Unsubscribe
        status, text = post(port, (SUBSCRIPTION_CALL % token("ha", PASSWORD)).encode(),
                            urllib.parse.urlparse(cam.xaddrs["http://www.onvif.org/ver10/events/wsdl/NotificationConsumer"]).path)
        check("after Unsubscribe the webhook's subscription is gone", status == 400 and "ResourceUnknown" in text, (status, text[-200:]))
        NOTIFY_BODIES.extend(body for _, body in hook.posts)
        hook.close()
        await manager.shutdown()  # Unsubscribe
        try:
            await service.PullMessages({"MessageLimit": 1, "Timeout": datetime.timedelta(seconds=1)})
            check("after Unsubscribe the pull point is gone", False, "answered")
        except Fault as f:
            check("after Unsubscribe the pull point is gone: %s" % f.message, "ResourceUnknown" in [q.localname for q in f.subcodes or []], f.message)
        check("the subscription was never lost", not lost)
    finally:
        await cam.close()


SUBSCRIPTION_CALL = ('<s:Envelope xmlns:s="http://www.w3.org/2003/05/soap-envelope" xmlns:tev="http://www.onvif.org/ver10/events/wsdl">'
                     '<s:Header>%s</s:Header><s:Body><tev:SetSynchronizationPoint/></s:Body></s:Envelope>')


class Webhook:
    """Home Assistant's webhook: an HTTP server on loopback taking the device's POSTs (each kept
    with when it arrived), answering 200 as HA's does."""

    def __init__(self):
        posts = self.posts = []

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                posts.append((time.time(), body))
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = "http://127.0.0.1:%d/api/webhook/onvif_test" % self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def arrivals(self, manager):
        """(arrival time, message) for every message of every POST, through the manager's parser."""
        out = []
        for arrived, body in list(self.posts):
            result = manager.process(body)
            for msg in (result.NotificationMessage if result is not None else None) or []:
                m = msg.Message._value_1
                out.append((arrived, (msg.Topic._value_1, m.Source.SimpleItem[0].Value, m.Data.SimpleItem[0].Name,
                                      m.Data.SimpleItem[0].Value, m.PropertyOperation, m.UtcTime)))
        return out

    def read(self, manager):
        return [m for _, m in self.arrivals(manager)]

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def bitrate_max(options):
    """The H.264 BitrateRange's Max from the options' Extension: zeep leaves the Extension's
    H264 in the schema's leading xs:any (_value_1) as an lxml element."""
    ext = options.Extension
    if ext is None:
        return -1
    if ext.H264 is not None:
        return ext.H264.BitrateRange.Max
    for e in ext._value_1 or []:
        found = e.find(".//{http://www.onvif.org/ver10/schema}BitrateRange/{http://www.onvif.org/ver10/schema}Max")
        if found is not None:
            return int(found.text)
    return -1


async def encoders_as_an_nvr(port):
    """What an NVR does before it records (Blue Iris, Synology): the encoder configurations
    and their options, then SetVideoEncoderConfiguration of the main stream's size and bitrate
    — read back from the session's state — and a size the camera lacks refused, nothing changed."""
    from onvif import ONVIFCamera
    from zeep.exceptions import Fault
    wsdl = str(Path(__import__("onvif").__file__).parent / "wsdl")
    cam = ONVIFCamera("127.0.0.1", port, "boss", PASSWORD, wsdl)
    session = lambda: api_get(port, "/api/cameras/rear/session") or {}
    live = lambda s, name: next((x for x in s.get("live", []) if x["name"] == name), {})
    try:
        await cam.update_xaddrs()
        media = await cam.create_media_service()
        configs = await media.GetVideoEncoderConfigurations()
        check("GetVideoEncoderConfigurations: one per profile, each with its RateControl",
              [c.token for c in configs] == ["rear_main", "rear_sub", "rear_jpeg", "front_main", "front_sub", "front_jpeg"]
              and all(c.RateControl.BitrateLimit > 0 for c in configs), [c.token for c in configs])
        options = await media.GetVideoEncoderConfigurationOptions({"ConfigurationToken": "rear_main"})
        sizes = [(r.Width, r.Height) for r in options.H264.ResolutionsAvailable]
        check("GetVideoEncoderConfigurationOptions: the camera's sizes %s, its rates %d-%d, bitrates to %d kbit/s"
              % (sizes, options.H264.FrameRateRange.Min, options.H264.FrameRateRange.Max, bitrate_max(options)),
              (640, 480) in sizes and (1280, 720) in sizes and bitrate_max(options) >= 10000, options)
        config = await media.GetVideoEncoderConfiguration({"ConfigurationToken": "rear_main"})
        config.Resolution.Width, config.Resolution.Height = 1280, 720
        config.RateControl.BitrateLimit = 1500
        await media.SetVideoEncoderConfiguration({"Configuration": config, "ForcePersistence": True})
        s = session()
        check("SetVideoEncoderConfiguration 1280x720 at 1500 kbit/s: the camera's format and the main stream's cap (%s, %s)"
              % (s.get("format"), live(s, "main").get("bitrate")),
              (s.get("format") or {}).get("width") == 1280 and live(s, "main").get("bitrate") == 1500, s.get("format"))
        got = await media.GetVideoEncoderConfiguration({"ConfigurationToken": "rear_main"})
        check("GetVideoEncoderConfiguration reads back what the camera took",
              (got.Resolution.Width, got.Resolution.Height, got.RateControl.BitrateLimit) == (1280, 720, 1500), got)
        config.Resolution.Width, config.Resolution.Height = 123, 45
        try:
            await media.SetVideoEncoderConfiguration({"Configuration": config, "ForcePersistence": True})
            check("a size the camera lacks is refused", False, "taken")
        except Fault as f:
            s = session()
            check("a size the camera lacks is refused: %s" % f.message, "123x45" in f.message
                  and "ConfigModify" in [q.localname for q in f.subcodes or []] and (s.get("format") or {}).get("width") == 1280, f.message)
        config.Resolution.Width, config.Resolution.Height = 640, 480  # as the other checks found it
        await media.SetVideoEncoderConfiguration({"Configuration": config, "ForcePersistence": True})
    finally:
        await cam.close()


# Every answer of every operation implemented, as ONVIF's schemas have it.
SCHEMA_CALLS = [
    ("device_service", x) for x in [
        "<tds:GetSystemDateAndTime/>", "<tds:GetCapabilities><tds:Category>All</tds:Category></tds:GetCapabilities>",
        "<tds:GetServices><tds:IncludeCapability>true</tds:IncludeCapability></tds:GetServices>", "<tds:GetDeviceInformation/>",
        "<tds:GetNetworkInterfaces/>", "<tds:GetScopes/>", "<tds:GetHostname/>", "<tds:GetUsers/>", "<tds:GetServiceCapabilities/>"]
] + [("media_service", x) for x in [
    "<trt:GetProfiles/>", "<trt:GetProfile><trt:ProfileToken>rear_main</trt:ProfileToken></trt:GetProfile>",
    "<trt:GetStreamUri><trt:StreamSetup><tt:Stream>RTP-Unicast</tt:Stream><tt:Transport><tt:Protocol>RTSP</tt:Protocol></tt:Transport>"
    "</trt:StreamSetup><trt:ProfileToken>rear_main</trt:ProfileToken></trt:GetStreamUri>",
    "<trt:GetSnapshotUri><trt:ProfileToken>rear_main</trt:ProfileToken></trt:GetSnapshotUri>", "<trt:GetVideoSources/>",
    "<trt:GetServiceCapabilities/>", "<trt:GetVideoSourceConfigurations/>", "<trt:GetVideoEncoderConfigurations/>",
    "<trt:GetVideoSourceConfiguration><trt:ConfigurationToken>rear</trt:ConfigurationToken></trt:GetVideoSourceConfiguration>",
    "<trt:GetVideoEncoderConfiguration><trt:ConfigurationToken>rear_sub</trt:ConfigurationToken></trt:GetVideoEncoderConfiguration>",
    "<trt:GetCompatibleVideoSourceConfigurations><trt:ProfileToken>rear_main</trt:ProfileToken></trt:GetCompatibleVideoSourceConfigurations>",
    "<trt:GetCompatibleVideoEncoderConfigurations><trt:ProfileToken>rear_main</trt:ProfileToken></trt:GetCompatibleVideoEncoderConfigurations>",
    "<trt:GetVideoEncoderConfigurationOptions><trt:ConfigurationToken>rear_main</trt:ConfigurationToken></trt:GetVideoEncoderConfigurationOptions>",
    "<trt:GetVideoEncoderConfigurationOptions><trt:ConfigurationToken>rear_jpeg</trt:ConfigurationToken></trt:GetVideoEncoderConfigurationOptions>",
    "<trt:GetProfile><trt:ProfileToken>rear_jpeg</trt:ProfileToken></trt:GetProfile>",
    "<trt:GetAudioSources/>", "<trt:GetAudioSourceConfigurations/>", "<trt:GetAudioEncoderConfigurations/>",
    "<trt:GetAudioEncoderConfiguration><trt:ConfigurationToken>rear_mic_aac</trt:ConfigurationToken></trt:GetAudioEncoderConfiguration>",
    "<trt:GetCompatibleAudioSourceConfigurations><trt:ProfileToken>rear_sub</trt:ProfileToken></trt:GetCompatibleAudioSourceConfigurations>",
    "<trt:GetGuaranteedNumberOfVideoEncoderInstances><trt:ConfigurationToken>rear</trt:ConfigurationToken></trt:GetGuaranteedNumberOfVideoEncoderInstances>",
    "<trt:SetVideoEncoderConfiguration><trt:Configuration token=\"front_sub\"><tt:Name>front_sub</tt:Name><tt:UseCount>1</tt:UseCount>"
    "<tt:Encoding>H264</tt:Encoding><tt:Resolution><tt:Width>320</tt:Width><tt:Height>240</tt:Height></tt:Resolution>"
    "<tt:Quality>5</tt:Quality><tt:RateControl><tt:FrameRateLimit>15</tt:FrameRateLimit><tt:EncodingInterval>1</tt:EncodingInterval>"
    "<tt:BitrateLimit>400</tt:BitrateLimit></tt:RateControl><tt:SessionTimeout>PT60S</tt:SessionTimeout></trt:Configuration>"
    "<trt:ForcePersistence>true</trt:ForcePersistence></trt:SetVideoEncoderConfiguration>"]
] + [("ptz_service", x) for x in [
    "<tptz:GetNodes/>", "<tptz:GetNode><tptz:NodeToken>rear</tptz:NodeToken></tptz:GetNode>", "<tptz:GetConfigurations/>",
    "<tptz:GetConfiguration><tptz:PTZConfigurationToken>rear_ptz</tptz:PTZConfigurationToken></tptz:GetConfiguration>",
    "<tptz:GetConfigurationOptions><tptz:ConfigurationToken>rear_ptz</tptz:ConfigurationToken></tptz:GetConfigurationOptions>",
    "<tptz:GetStatus><tptz:ProfileToken>rear_main</tptz:ProfileToken></tptz:GetStatus>", "<tptz:GetServiceCapabilities/>",
    "<tptz:AbsoluteMove><tptz:ProfileToken>rear_main</tptz:ProfileToken><tptz:Position><tt:Zoom x=\"0\"/></tptz:Position></tptz:AbsoluteMove>",
    "<tptz:Stop><tptz:ProfileToken>rear_main</tptz:ProfileToken></tptz:Stop>",
    "<tptz:GetPresets><tptz:ProfileToken>rear_main</tptz:ProfileToken></tptz:GetPresets>"]
] + [("imaging_service", x) for x in [
    "<timg:GetImagingSettings><timg:VideoSourceToken>rear</timg:VideoSourceToken></timg:GetImagingSettings>",
    "<timg:GetOptions><timg:VideoSourceToken>rear</timg:VideoSourceToken></timg:GetOptions>",
    "<timg:GetMoveOptions><timg:VideoSourceToken>rear</timg:VideoSourceToken></timg:GetMoveOptions>",
    "<timg:GetStatus><timg:VideoSourceToken>rear</timg:VideoSourceToken></timg:GetStatus>", "<timg:GetServiceCapabilities/>"]
] + [("events_service", x) for x in [
    "<tev:GetEventProperties/>", "<tev:GetServiceCapabilities/>",
    "<tev:CreatePullPointSubscription><tev:InitialTerminationTime>PT60S</tev:InitialTerminationTime></tev:CreatePullPointSubscription>",
    "<wsnt:Subscribe><wsnt:ConsumerReference><wsa:Address>http://127.0.0.1:9/nothing-listens</wsa:Address></wsnt:ConsumerReference>"
    "<wsnt:InitialTerminationTime>PT60S</wsnt:InitialTerminationTime></wsnt:Subscribe>"]
]
# The Notify messages the webhook took (events_as_home_assistant), validated with the answers.
NOTIFY_BODIES = []


def schema_checks(port):
    sys.path.insert(0, str(Path(__file__).parent))
    from schemas import validator
    valid = validator(Path(__import__("onvif").__file__).parent / "wsdl")
    ns = {"tds": "http://www.onvif.org/ver10/device/wsdl", "trt": "http://www.onvif.org/ver10/media/wsdl",
          "tptz": "http://www.onvif.org/ver20/ptz/wsdl", "timg": "http://www.onvif.org/ver20/imaging/wsdl",
          "tev": "http://www.onvif.org/ver10/events/wsdl", "tt": "http://www.onvif.org/ver10/schema",
          "wsnt": "http://docs.oasis-open.org/wsn/b-2", "wsa": "http://www.w3.org/2005/08/addressing"}
    declared = " ".join('xmlns:%s="%s"' % kv for kv in ns.items())
    complaints, checked = [], 0
    for service, body in SCHEMA_CALLS:
        xml = ('<s:Envelope xmlns:s="http://www.w3.org/2003/05/soap-envelope" %s><s:Header>%s</s:Header><s:Body>%s</s:Body></s:Envelope>'
               % (declared, token("boss", PASSWORD), body))
        status, text = post(port, xml.encode(), "/onvif/" + service)
        problem = valid(text.encode()) if status == 200 else ["HTTP %d" % status]
        checked += 1
        if problem:
            complaints.append((body[:60], problem))
    for body in NOTIFY_BODIES:
        problem = valid(body)
        checked += 1
        if problem:
            complaints.append(("Notify", problem))
    check("every answer of %d operations and %d Notify messages valid against ONVIF's own schemas (lxml)"
          % (len(SCHEMA_CALLS), len(NOTIFY_BODIES)), not complaints and NOTIFY_BODIES, complaints)


SOAP_ENVELOPE = ('<s:Envelope xmlns:s="http://www.w3.org/2003/05/soap-envelope" xmlns:tds="http://www.onvif.org/ver10/device/wsdl"'
                 ' xmlns:tptz="http://www.onvif.org/ver20/ptz/wsdl" xmlns:tt="http://www.onvif.org/ver10/schema">'
                 '<s:Body>{body}</s:Body></s:Envelope>')


def digest_soap(port, user, password, service, body):
    """A SOAP request signed with HTTP Digest only (curl answers the 401's challenge), as NVRs
    of the gSOAP family sign in: (status, text)."""
    r = subprocess.run(["curl", "-s", "--digest", "-u", "%s:%s" % (user, password), "--max-time", "30", "-w", "\n%{http_code}",
                        "-H", "Content-Type: application/soap+xml; charset=utf-8", "--data-binary", SOAP_ENVELOPE.format(body=body),
                        "http://127.0.0.1:%d/onvif/%s" % (port, service)], capture_output=True, text=True, timeout=60)
    text, _, code = r.stdout.rpartition("\n")
    return int(code or 0), text


def digest_checks(port):
    """HTTP Digest instead of a UsernameToken: any Viewfinder user (no ONVIF password kept),
    the role deciding as for a token; a wrong password is HTTP's 401."""
    status, text = digest_soap(port, "web", PASSWORD, "device_service", "<tds:GetDeviceInformation/>")
    check("HTTP Digest as a viewer without an ONVIF password: GetDeviceInformation answers", status == 200
          and "Viewfinder" in text, (status, text[-200:]))
    status, text = digest_soap(port, "web", PASSWORD, "ptz_service",
                               '<tptz:AbsoluteMove><tptz:ProfileToken>front_main</tptz:ProfileToken>'
                               '<tptz:Position><tt:Zoom x="1"/></tptz:Position></tptz:AbsoluteMove>')
    check("HTTP Digest as a viewer: a move is a ter:NotAuthorized fault naming the operator", status == 400
          and "NotAuthorized" in text and "operator" in text, (status, text[-200:]))
    status, text = digest_soap(port, "boss", PASSWORD, "ptz_service",
                               '<tptz:AbsoluteMove><tptz:ProfileToken>front_main</tptz:ProfileToken>'
                               '<tptz:Position><tt:Zoom x="1"/></tptz:Position></tptz:AbsoluteMove>')
    z = (api_get(port, "/api/cameras/front/session") or {}).get("zoom", {})
    check("HTTP Digest as an operator: AbsoluteMove zooms the camera to its most (%s)" % z.get("factor"), status == 200
          and z.get("factor") == z.get("max"), (status, z))
    status, _ = digest_soap(port, "boss", "not the password", "device_service", "<tds:GetDeviceInformation/>")
    check("HTTP Digest with a wrong password: 401", status == 401, status)


def raw_checks(port):
    req = urllib.request.Request("http://127.0.0.1:%d/onvif/device_service" % port, method="POST",
                                 data=SOAP_ENVELOPE.format(body="<tds:GetDeviceInformation/>").encode(),
                                 headers={"Content-Type": "application/soap+xml; charset=utf-8"})
    try:
        urllib.request.urlopen(req, timeout=30)
        status, text, challenge = 200, "", ""
    except urllib.error.HTTPError as e:
        status, text, challenge = e.code, e.read().decode(), " ".join(e.headers.get_all("WWW-Authenticate") or [])
    check("no credentials at all: 401 with HTTP Digest's challenge and a ter:NotAuthorized fault (%s)" % challenge,
          status == 401 and "ter:NotAuthorized" in text and "Digest" in challenge, (status, text[-300:]))
    digest_checks(port)
    header = token("ha", PASSWORD)
    first = soap(port, "<tds:GetDeviceInformation/>", header)
    again = soap(port, "<tds:GetDeviceInformation/>", header)
    check("a token is taken once: the replay is refused", first[0] == 200 and again[0] == 400 and "NotAuthorized" in again[1],
          (first[0], again[0]))
    old = (datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(minutes=10)).strftime("%Y-%m-%dT%H:%M:%SZ")
    status, _ = soap(port, "<tds:GetDeviceInformation/>", token("ha", PASSWORD, created=old))
    check("a token made 10 minutes ago is refused", status == 400, status)
    status, text = soap(port, "<tds:GetSystemDateAndTime/>")
    check("GetSystemDateAndTime needs no sign-in", status == 200 and "UTCDateTime" in text, status)
    dtd = '<!ENTITY a0 "ha">' + "".join('<!ENTITY a%d "%s">' % (i, ("&a%d;" % (i - 1)) * 10) for i in range(1, 10))
    laughs = ('<?xml version="1.0"?><!DOCTYPE s:Envelope [%s]><s:Envelope xmlns:s="http://www.w3.org/2003/05/soap-envelope">'
              '<s:Body><x>&a9;</x></s:Body></s:Envelope>') % dtd
    status, text = post(port, laughs.encode())
    check("a DTD (billion laughs) is a Sender fault naming it", status == 400 and "Document Type Declaration" in text, (status, text[-200:]))
    status, text = post(port, b'<e:Envelope xmlns:e="http://schemas.xmlsoap.org/soap/envelope/"><e:Body><x/></e:Body></e:Envelope>')
    check("SOAP 1.1 is a VersionMismatch fault, in SOAP 1.2", status == 400 and "VersionMismatch" in text
          and "http://www.w3.org/2003/05/soap-envelope" in text, (status, text[-200:]))
    status, text = post(port, b"not xml at all")
    check("not XML: a Sender fault", status == 400 and "Sender" in text, status)
    status, _ = soap(port, "<tds:SystemReboot/>", token("boss", PASSWORD))
    check("an action not implemented: a fault, not a 500", status == 400, status)
    create = ('<s:Envelope xmlns:s="http://www.w3.org/2003/05/soap-envelope" xmlns:tev="http://www.onvif.org/ver10/events/wsdl">'
              '<s:Header>%s</s:Header><s:Body><tev:CreatePullPointSubscription/></s:Body></s:Envelope>')
    answers = [post(port, (create % token("ha", PASSWORD)).encode(), "/onvif/events_service") for _ in range(17)]
    made = [a[0] for a in answers].index(500) if 500 in [a[0] for a in answers] else len(answers)
    # The schema checks left a pull point and a push subscription of their own: the limit
    # counts every subscription, pulled or pushed.
    check("16 subscriptions at most: made %d more pull points before a fault naming the limit" % made,
          made == 14 and all(a[0] == 500 and "MaxPullPoints" in a[1] for a in answers[made:]), [a[0] for a in answers])
    pull = (create % token("ha", PASSWORD)).replace("<tev:CreatePullPointSubscription/>",
                                                    "<tev:PullMessages><tev:Timeout>PT1S</tev:Timeout><tev:MessageLimit>1</tev:MessageLimit></tev:PullMessages>")
    status, text = post(port, pull.encode(), "/onvif/subscriptions/999")
    check("an unknown pull point: a fault naming it", status == 400 and "ResourceUnknown" in text, (status, text[-200:]))
    with urllib.request.urlopen("http://127.0.0.1:%d/healthz" % port, timeout=10) as r:
        check("the server still serves", r.status == 200, r.status)


def main():
    make_venv()
    if os.environ.get("ONVIF_CLIENT_VENV") != "1":
        os.environ["ONVIF_CLIENT_VENV"] = "1"
        os.execv(str(VENV / "bin/python3"), [str(VENV / "bin/python3"), __file__] + sys.argv[1:])
    with served("onvif", CONFIG, USERS) as (tmp, _, port, rtsp):
        mode = (tmp / "config.json").stat().st_mode & 0o777
        check("a file holding ONVIF passwords is readable by no one but its owner and group: %o" % mode, mode & 0o007 == 0, oct(mode))
        asyncio.run(asyncio.wait_for(as_home_assistant(port, rtsp), 300))
        asyncio.run(asyncio.wait_for(events_as_home_assistant(port), 300))
        asyncio.run(asyncio.wait_for(ptz_as_home_assistant(port), 300))
        asyncio.run(asyncio.wait_for(encoders_as_an_nvr(port), 300))
        schema_checks(port)
        raw_checks(port)
    return summary()


if __name__ == "__main__":
    sys.exit(main())
