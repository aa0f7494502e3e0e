#!/usr/bin/env python3
"""ONVIF's Media2 and HTTP Digest sign-in as a second real client drives them: onvif-python
(PyPI, in .build/onvif2-venv: its package is also named `onvif`), which finds the Media2
service in GetServices, signs in with HTTP Digest (requests' HTTPDigestAuth) or a
UsernameToken, and reads Media2's answers with ONVIF's own ver20 WSDL — each answer also
validated against that schema. Run by `make test`."""
import json
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from harness import PASSWORD, ROOT, VENV2, PACKAGES2, check, reexec_in, summary  # noqa: E402
from harness import served  # noqa: E402


def api_get(port, path):
    r = subprocess.run(["curl", "-sf", "--digest", "-u", "boss:" + PASSWORD, "--max-time", "30", "http://127.0.0.1:%d%s" % (port, path)],
                       capture_output=True, timeout=60)
    return json.loads(r.stdout or "null")


def client(port, user, digest):
    from onvif import ONVIFClient
    from onvif.operator import CacheMode
    return ONVIFClient("127.0.0.1", port, user, PASSWORD, http_digest=digest, cache=CacheMode.NONE, timeout=30)


def fault_text(call):
    from zeep.exceptions import Fault
    try:
        call()
    except Fault as f:
        return f.message or ""
    except Exception as e:  # onvif-python wraps some faults in its own error
        return str(e)
    return None


def media2_checks(port, rtsp):
    # HTTP Digest, as a viewer with no ONVIF password kept (Digest is checked like HTTP's).
    viewer = client(port, "web", digest=True)
    info = viewer.devicemgmt().GetDeviceInformation()
    check("HTTP Digest (requests' HTTPDigestAuth), a viewer with no ONVIF password: GetDeviceInformation",
          info.Manufacturer == "Viewfinder", info)
    media2 = viewer.media2()
    profiles = media2.GetProfiles(Type=["All"])
    tokens = [p.token for p in profiles]
    check("Media2 GetProfiles(All): a main and a sub profile per camera, each with its encoder",
          tokens == ["rear_main", "rear_sub", "rear_jpeg", "front_main", "front_sub", "front_jpeg"]
          and [p.Configurations.VideoEncoder.Encoding for p in profiles] == ["H264", "H264", "JPEG"] * 2, tokens)
    sub = profiles[1].Configurations.VideoEncoder
    uri = media2.GetStreamUri(Protocol="RtspUnicast", ProfileToken="rear_sub")
    signed = uri.replace("rtsp://", "rtsp://web:%s@" % PASSWORD.replace(" ", "%20"))
    probe = subprocess.run(["ffprobe", "-v", "error", "-rtsp_transport", "tcp", "-select_streams", "v:0", "-show_entries",
                            "stream=codec_name,width,height", "-of", "json", signed], capture_output=True, text=True, timeout=60)
    streams = json.loads(probe.stdout or "{}").get("streams", [])
    check("Media2 GetStreamUri RtspUnicast: %s plays H.264 at the encoder's %dx%d" % (uri, sub.Resolution.Width, sub.Resolution.Height),
          uri == "rtsp://127.0.0.1:%d/rear/sub" % rtsp and streams and streams[0]["codec_name"] == "h264"
          and (streams[0]["width"], streams[0]["height"]) == (sub.Resolution.Width, sub.Resolution.Height), (uri, streams))
    audio = profiles[1].Configurations.AudioEncoder
    probe = subprocess.run(["ffprobe", "-v", "error", "-rtsp_transport", "tcp", "-select_streams", "a:0", "-show_entries",
                            "stream=codec_name,sample_rate", "-of", "json", signed], capture_output=True, text=True, timeout=60)
    sound = json.loads(probe.stdout or "{}").get("streams", [])
    check("Media2's AudioEncoder (%s at %s kHz) is the sound the stream carries: %s" % (audio and audio.Encoding, audio and audio.SampleRate, sound),
          audio is not None and audio.Encoding == "MPEG4-GENERIC" and sound and sound[0]["codec_name"] == "aac"
          and int(sound[0]["sample_rate"]) == audio.SampleRate * 1000, (audio, sound))
    tunnelled = media2.GetStreamUri(Protocol="RtspOverHttp", ProfileToken="rear_main")
    probe = subprocess.run(["ffprobe", "-v", "error", "-rtsp_transport", "http", "-select_streams", "v:0", "-show_entries",
                            "stream=codec_name", "-of", "json", tunnelled.replace("rtsp://", "rtsp://web:%s@" % PASSWORD.replace(" ", "%20"))],
                           capture_output=True, text=True, timeout=60)
    tunnel = json.loads(probe.stdout or "{}").get("streams", [])
    check("Media2 GetStreamUri RtspOverHttp: %s plays tunnelled in HTTP (ffprobe -rtsp_transport http)" % tunnelled,
          tunnel and tunnel[0]["codec_name"] == "h264", (tunnel, probe.stderr[-300:]))
    snap = media2.GetSnapshotUri(ProfileToken="front_main")
    check("Media2 GetSnapshotUri: the camera's snapshot", snap.endswith("/cameras/front/snapshot"), snap)
    options = media2.GetVideoEncoderConfigurationOptions(ConfigurationToken="rear_main")
    sizes = [(r.Width, r.Height) for r in options[0].ResolutionsAvailable]
    check("Media2 GetVideoEncoderConfigurationOptions: H264, the camera's sizes, GovLengthRange %s" % options[0].GovLengthRange,
          options[0].Encoding == "H264" and (1280, 720) in sizes and options[0].BitrateRange.Max >= 10000, options[0])
    config = media2.GetVideoEncoderConfigurations(ConfigurationToken="rear_main")[0]
    refused = fault_text(lambda: media2.SetVideoEncoderConfiguration(Configuration=config))
    check("a viewer's SetVideoEncoderConfiguration is refused: %s" % refused, refused is not None and "operator" in refused, refused)

    # A UsernameToken, as the operator.
    boss = client(port, "boss", digest=False).media2()
    config.Resolution.Width, config.Resolution.Height = 1280, 720
    config.RateControl.BitrateLimit = 1200
    boss.SetVideoEncoderConfiguration(Configuration=config)
    s = api_get(port, "/api/cameras/rear/session") or {}
    main = next((x for x in s.get("live", []) if x["name"] == "main"), {})
    check("Media2 SetVideoEncoderConfiguration 1280x720 at 1200 kbit/s: the camera's format and the main stream's cap (%s, %s)"
          % (s.get("format"), main.get("bitrate")), (s.get("format") or {}).get("width") == 1280 and main.get("bitrate") == 1200, s)
    config.GovLength = 7
    refused = fault_text(lambda: boss.SetVideoEncoderConfiguration(Configuration=config))
    s = api_get(port, "/api/cameras/rear/session") or {}
    check("a GovLength the device does not set is refused, nothing changed: %s" % refused,
          refused is not None and "GovLength 7" in refused and (s.get("format") or {}).get("width") == 1280, refused)

    # 4K: more than RTP/JPEG's 2040 px a side: no JPEG profile, and its path says why.
    config.GovLength = 30
    config.Resolution.Width, config.Resolution.Height = 3840, 2160
    boss.SetVideoEncoderConfiguration(Configuration=config)
    tokens = [p.token for p in media2.GetProfiles()]
    jpeg = "rtsp://web:%s@127.0.0.1:%d/rear/jpeg" % (PASSWORD.replace(" ", "%20"), rtsp)
    probe = subprocess.run(["ffprobe", "-v", "error", "-rtsp_transport", "tcp", jpeg], capture_output=True, text=True, timeout=60)
    check("at 3840x2160 the camera has no JPEG profile (%s) and its RTSP path answers 415" % tokens,
          "rear_jpeg" not in tokens and "rear_main" in tokens and "415" in probe.stderr, probe.stderr[-300:])
    config.Resolution.Width, config.Resolution.Height = 640, 480
    boss.SetVideoEncoderConfiguration(Configuration=config)
    check("back at 640x480: the JPEG profile again", "rear_jpeg" in [p.token for p in media2.GetProfiles()])


SCHEMA_CALLS = [
    "<tr2:GetServiceCapabilities/>", "<tr2:GetProfiles><tr2:Type>All</tr2:Type></tr2:GetProfiles>", "<tr2:GetProfiles/>",
    "<tr2:GetStreamUri><tr2:Protocol>RtspUnicast</tr2:Protocol><tr2:ProfileToken>rear_main</tr2:ProfileToken></tr2:GetStreamUri>",
    "<tr2:GetSnapshotUri><tr2:ProfileToken>rear_main</tr2:ProfileToken></tr2:GetSnapshotUri>",
    "<tr2:GetVideoSourceConfigurations/>", "<tr2:GetVideoEncoderConfigurations/>", "<tr2:GetAudioSourceConfigurations/>",
    "<tr2:GetAudioEncoderConfigurations/>",
    "<tr2:GetVideoEncoderConfigurationOptions><tr2:ProfileToken>rear_main</tr2:ProfileToken></tr2:GetVideoEncoderConfigurationOptions>",
    "<tr2:GetVideoEncoderConfigurationOptions><tr2:ProfileToken>rear_jpeg</tr2:ProfileToken></tr2:GetVideoEncoderConfigurationOptions>",
    "<tr2:GetStreamUri><tr2:Protocol>RtspUnicast</tr2:Protocol><tr2:ProfileToken>front_jpeg</tr2:ProfileToken></tr2:GetStreamUri>",
]


def schema_checks(port):
    from schemas import validator
    import onvif
    valid = validator(Path(onvif.__file__).parent / "wsdl", ["ver20/media/wsdl/media"], narrow_any=True)
    complaints = []
    for body in SCHEMA_CALLS:
        xml = ('<s:Envelope xmlns:s="http://www.w3.org/2003/05/soap-envelope" xmlns:tr2="http://www.onvif.org/ver20/media/wsdl">'
               '<s:Body>%s</s:Body></s:Envelope>' % body)
        r = subprocess.run(["curl", "-s", "--digest", "-u", "boss:" + PASSWORD, "--max-time", "30", "-w", "\n%{http_code}",
                            "-H", "Content-Type: application/soap+xml; charset=utf-8", "--data-binary", xml,
                            "http://127.0.0.1:%d/onvif/media2_service" % port], capture_output=True, timeout=60)
        text, _, code = r.stdout.rpartition(b"\n")
        problem = valid(text) if code == b"200" else ["HTTP %s" % code.decode()]
        if problem:
            complaints.append((body[:50], problem))
    check("every Media2 answer of %d calls valid against ONVIF's ver20 media schema (lxml)" % len(SCHEMA_CALLS), not complaints, complaints)


def main():
    reexec_in(VENV2, PACKAGES2, __file__)
    config = {
        "server": {"host": "127.0.0.1", "port": 0, "publicDirectory": str(ROOT / "Public")},
        "cameras": [{"id": "rear", "source": "synthetic", "position": "rear"},
                    {"id": "front", "source": "synthetic", "position": "front"}],
        "session": {"preset": "640x480", "fps": 15}, "synthetic": {"noise": False, "microphone": True}, "rtsp": {"port": 0}}
    with served("media2", config, [("boss", "operator", True), ("web", "viewer", False)]) as (_, _, port, rtsp):
        media2_checks(port, rtsp)
        schema_checks(port)
    return summary()


if __name__ == "__main__":
    sys.exit(main())
