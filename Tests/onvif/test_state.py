#!/usr/bin/python3
"""`make test` (issue 57): what an NVR or Home Assistant sets through ONVIF lasts a SIGKILL, as
ONVIF's ForcePersistence ("should always be assumed to be true") promises. Through
onvif-zeep-async (Home Assistant's pinned client, the venv of test_onvif.py), CYCLES times
(default 8): random SetVideoEncoderConfiguration (size, frame rate and BitrateLimit of a main or
sub stream), SetImagingSettings (manual exposure time and gain, or automatic; white balance),
an imaging focus Move, an AbsoluteMove zoom and SetPreset — then GetVideoEncoderConfiguration of
every profile, GetImagingSettings of each source and GetPresets of each camera read; the
server SIGKILLed once /api/state says it is all on disk, started again on the same directory,
and every Get… answers exactly as before. Prints PASS/FAIL per cycle and `N passed, N failed`.
"""
import asyncio
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from harness import PASSWORD, ROOT, VENV, check, launch, make_venv, start, summary

CYCLES = int(os.environ.get("CYCLES", "8"))
SEED = int(os.environ.get("SEED", str(int(time.time()))))
CONFIG = {
    "server": {"host": "127.0.0.1", "port": 0, "publicDirectory": str(ROOT / "Public")},
    "cameras": [{"id": "rear", "source": "synthetic", "position": "rear"},
                {"id": "front", "source": "synthetic", "position": "front"}],
    "session": {"preset": "640x480", "fps": 15}, "synthetic": {"noise": False, "microphone": False},
    "rtsp": {"enabled": False}, "state": {"directory": "state"}}
WSDL = None


def api_get(port, path):
    r = subprocess.run(["curl", "-sf", "--digest", "-u", "boss:" + PASSWORD, "--max-time", "30", "http://127.0.0.1:%d%s" % (port, path)],
                       capture_output=True, timeout=60)
    return json.loads(r.stdout or "null")


def camera(port):
    from onvif import ONVIFCamera
    return ONVIFCamera("127.0.0.1", port, "boss", PASSWORD, WSDL)


async def change(port, rnd):
    """A few random changes an NVR or HA makes; answers what was done, for the report."""
    cam = camera(port)
    done = []
    try:
        await cam.update_xaddrs()
        media, imaging, ptz = await cam.create_media_service(), await cam.create_imaging_service(), await cam.create_ptz_service()
        for _ in range(rnd.randint(1, 4)):
            what = rnd.choice(["encoder", "encoder", "imaging", "focus", "preset"])
            token = rnd.choice(["rear", "front"])
            if what == "encoder":
                stream = rnd.choice(["main", "sub"])
                config = await media.GetVideoEncoderConfiguration({"ConfigurationToken": "%s_%s" % (token, stream)})
                if stream == "main":
                    options = await media.GetVideoEncoderConfigurationOptions({"ConfigurationToken": config.token})
                    size = rnd.choice([(r.Width, r.Height) for r in options.H264.ResolutionsAvailable if r.Width <= 1280])
                    config.Resolution.Width, config.Resolution.Height = size
                    config.RateControl.FrameRateLimit = rnd.choice([10, 15, 30])
                config.RateControl.BitrateLimit = rnd.choice([300, 800, 1500, 3000] if stream == "main" else [150, 300, 500])
                await media.SetVideoEncoderConfiguration({"Configuration": config, "ForcePersistence": True})
                done.append("%s %sx%s@%s %s kbit/s" % (config.token, config.Resolution.Width, config.Resolution.Height,
                                                        config.RateControl.FrameRateLimit, config.RateControl.BitrateLimit))
            elif what == "imaging":
                settings = rnd.choice([{"Exposure": {"Mode": "MANUAL", "ExposureTime": rnd.choice([2000, 5000, 10000, 20000]),
                                                     "Gain": rnd.choice([100, 200, 400, 800])}},
                                       {"Exposure": {"Mode": "AUTO"}, "WhiteBalance": {"Mode": rnd.choice(["AUTO", "MANUAL"])}}])
                await imaging.SetImagingSettings({"VideoSourceToken": token, "ImagingSettings": settings})
                done.append("imaging %s %s" % (token, settings))
            elif what == "focus":
                position = round(rnd.uniform(0, 1), 2)
                await imaging.Move({"VideoSourceToken": token, "Focus": {"Absolute": {"Position": position}}})
                done.append("focus %s %s" % (token, position))
            else:
                zoom = round(rnd.uniform(0, 1), 2)
                await ptz.AbsoluteMove({"ProfileToken": token + "_main", "Position": {"Zoom": {"x": zoom}}})
                name = "p%d" % rnd.randrange(1000)
                await ptz.SetPreset({"ProfileToken": token + "_main", "PresetName": name})
                done.append("preset %s %s at zoom %s" % (token, name, zoom))
    finally:
        await cam.close()
    return done


async def answers(port):
    """What ONVIF's Get… say: every encoder configuration, each source's imaging, each camera's presets."""
    cam = camera(port)
    try:
        await cam.update_xaddrs()
        media, imaging, ptz = await cam.create_media_service(), await cam.create_imaging_service(), await cam.create_ptz_service()
        out = {}
        for c in await media.GetVideoEncoderConfigurations():
            # A JPEG profile's BitrateLimit is what its pictures come to now (a reading, not a setting).
            out["encoder " + c.token] = (c.Encoding, c.Resolution.Width, c.Resolution.Height, c.RateControl.FrameRateLimit,
                                         c.RateControl.BitrateLimit if c.Encoding != "JPEG" else None, c.Quality)
        for token in ("rear", "front"):
            s = await imaging.GetImagingSettings({"VideoSourceToken": token})
            e, w, f = s.Exposure, s.WhiteBalance, s.Focus
            out["imaging " + token] = (e.Mode, e.ExposureTime if e.Mode == "MANUAL" else None, e.Gain if e.Mode == "MANUAL" else None,
                                       w.Mode if w is not None else None, f.AutoFocusMode if f is not None else None)
            presets = await ptz.GetPresets({"ProfileToken": token + "_main"})
            out["presets " + token] = sorted((p.token, p.Name, round(p.PTZPosition.Zoom.x, 4)) for p in presets)
        return out
    finally:
        await cam.close()


def main():
    global WSDL
    make_venv()
    if os.environ.get("ONVIF_CLIENT_VENV") != "1":
        os.environ["ONVIF_CLIENT_VENV"] = "1"
        os.execv(str(VENV / "bin/python3"), [str(VENV / "bin/python3"), __file__] + sys.argv[1:])
    WSDL = str(Path(__import__("onvif").__file__).parent / "wsdl")
    rnd = random.Random(SEED)
    print("%d cycles, seed %d" % (CYCLES, SEED))
    tmp = Path(tempfile.mkdtemp(prefix="vf-onvif-state-"))
    p, port, _ = start(tmp, CONFIG, [("boss", "operator", True)])
    try:
        for cycle in range(CYCLES):
            done = asyncio.run(asyncio.wait_for(change(port, rnd), 120))
            before = asyncio.run(asyncio.wait_for(answers(port), 120))
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline and not (api_get(port, "/api/state") or {}).get("saved"):
                time.sleep(0.05)
            p.send_signal(signal.SIGKILL)
            p.wait(10)
            p, port, _ = launch(tmp, rtsp_wanted=False)
            after = asyncio.run(asyncio.wait_for(answers(port), 120))
            report = api_get(port, "/api/state") or {}
            differs = {k: (before.get(k), after.get(k)) for k in before if before.get(k) != after.get(k)}
            check("cycle %d: %s; after a SIGKILL every Get… answers as before, the state read whole" % (cycle, "; ".join(done)),
                  not differs and report.get("loadedFrom") == "current" and report.get("dropped") == [],
                  "differs (before, after): %s; loadedFrom %s dropped %s" % (differs, report.get("loadedFrom"), report.get("dropped")))
    finally:
        p.kill()
        p.wait(10)
        subprocess.run(["rm", "-rf", str(tmp)])
    return summary()


if __name__ == "__main__":
    sys.exit(main())
