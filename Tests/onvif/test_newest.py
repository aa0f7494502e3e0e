#!/usr/bin/python3
"""`make test` (issue 55): the newest onvif-zeep-async (4.3.0, what current Home Assistant's
ONVIF integration moves to) and the HTTP client it is built on, aiohttp, whose
`DigestAuthMiddleware` reads only the first `WWW-Authenticate` header of a 401. The server
offers Digest first, so:

- `ONVIFCamera.get_snapshot()` (Digest through that middleware, HA's default) answers the
  camera's JPEG — before the fix it raised "Failed to authenticate";
- the middleware signs in to the API as a viewer without an ONVIF password, and to an ONVIF
  service with HTTP Digest alone (no UsernameToken), as an NVR of that family would;
- a wrong password is still 401, and the 401 lists Digest before Basic.

test_onvif.py keeps Home Assistant's pinned 4.0.4 for everything else; this venv is its own.
Prints PASS/FAIL per check and `N passed, N failed`; exits 1 when anything failed.
"""
import asyncio
import sys
from pathlib import Path

from harness import PASSWORD, ROOT, check, reexec_in, served, summary

VENV = ROOT / ".build/onvif-newest-venv"
PACKAGES = ["onvif-zeep-async==4.3.0", "aiohttp==3.14.5"]
CONFIG = {
    "server": {"host": "127.0.0.1", "port": 0, "publicDirectory": str(ROOT / "Public")},
    "cameras": [{"id": "rear", "source": "synthetic", "position": "rear"}],
    "session": {"preset": "640x480", "fps": 15}, "synthetic": {"noise": False}, "rtsp": {"port": 0}}
USERS = [("ha", "viewer", True), ("web", "viewer", False)]
DEVICE_INFORMATION = ('<s:Envelope xmlns:s="http://www.w3.org/2003/05/soap-envelope" '
                      'xmlns:tds="http://www.onvif.org/ver10/device/wsdl"><s:Body><tds:GetDeviceInformation/>'
                      '</s:Body></s:Envelope>')


async def snapshot_as_home_assistant(port):
    from onvif import ONVIFCamera
    cam = ONVIFCamera("127.0.0.1", port, "ha", PASSWORD, str(Path(__import__("onvif").__file__).parent / "wsdl"))
    try:
        await cam.update_xaddrs()
        media = await cam.create_media_service()
        profiles = await media.GetProfiles()
        tokens = [p.token for p in profiles]
        check("onvif-zeep-async 4.3.0 signs in and lists the profiles: %s" % tokens, "rear_main" in tokens, tokens)
        jpeg = await cam.get_snapshot("rear_main")
        check("get_snapshot (aiohttp's DigestAuthMiddleware) answers a JPEG: %d bytes" % len(jpeg or b""),
              bool(jpeg) and jpeg[:2] == b"\xff\xd8", (jpeg or b"")[:40])
    finally:
        await cam.close()


async def digest_middleware(port):
    import aiohttp
    base = "http://127.0.0.1:%d" % port
    async with aiohttp.ClientSession() as plain:
        async with plain.get(base + "/api/session") as r:
            challenges = r.headers.getall("WWW-Authenticate", [])
            check("a 401 offers Digest first, then Basic: %s" % [c.split(" ")[0] for c in challenges],
                  r.status == 401 and len(challenges) == 2 and challenges[0].startswith("Digest ")
                  and challenges[1].startswith("Basic "), (r.status, challenges))
    async with aiohttp.ClientSession(middlewares=(aiohttp.DigestAuthMiddleware("web", PASSWORD),)) as s:
        async with s.get(base + "/api/session") as r:
            body = await r.json(content_type=None) if r.status == 200 else await r.text()
            check("DigestAuthMiddleware signs in to the API as a viewer: %d" % r.status,
                  r.status == 200 and isinstance(body, dict) and "state" in body, (r.status, str(body)[:200]))
        async with s.post(base + "/onvif/device_service", data=DEVICE_INFORMATION,
                          headers={"Content-Type": "application/soap+xml; charset=utf-8"}) as r:
            text = await r.text()
            check("DigestAuthMiddleware signs in to ONVIF with HTTP Digest alone: GetDeviceInformation %d" % r.status,
                  r.status == 200 and "Viewfinder" in text, (r.status, text[-200:]))
    async with aiohttp.ClientSession(middlewares=(aiohttp.DigestAuthMiddleware("web", "not the password"),)) as s:
        async with s.get(base + "/api/session") as r:
            check("DigestAuthMiddleware with a wrong password: 401", r.status == 401, r.status)


def main():
    reexec_in(VENV, PACKAGES, __file__)
    with served("onvif-newest", CONFIG, USERS) as (_, _, port, _):
        asyncio.run(asyncio.wait_for(snapshot_as_home_assistant(port), 120))
        asyncio.run(asyncio.wait_for(digest_middleware(port), 120))
    return summary()


if __name__ == "__main__":
    sys.exit(main())
