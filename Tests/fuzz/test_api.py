#!/usr/bin/env python3
"""`make test-fuzz`: schemathesis (from PyPI, in a venv of its own under .build/) runs every
phase (examples, coverage, fuzzing, stateful) and every check of Public/openapi.yaml against
the release server with its two synthetic cameras, on 127.0.0.1 and a port of the kernel's
choosing. Zero failures pass. The MJPEG and live MP4 streams and the SSE events are left out (their bodies
never end; their own tests cover them), and so is `GET /`, whose `?action=stream` is a stream.

Options: --max-examples N per operation and phase (default 25), --seed S (default fixed, so a
failure reruns the same; `--seed random` for a new one), --binary PATH.
"""
import argparse
import os
import re
import select
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
VENV = ROOT / ".build/schemathesis-venv"
SCHEMATHESIS = "schemathesis==4.32.5"
# WHEP's and WHIP's offers are SDP (application/sdp), which schemathesis has no serializer
# for: the WHEP and talk routes are exercised by WHEPTests and TalkTests (each refusal) and
# the browser test (Chromium's own offers).
# ONVIF's SOAP bodies, likewise: a schema can only say "a string", and any string but a
# well-formed envelope is rightly a 400 fault; Tests/onvif (Home Assistant's own client, and
# each refusal) and ONVIFTests exercise them, the raw-HTTP fuzzer their framing.
# The endless streams (events, MJPEG, live.mp4, audio.wav without `seconds`) would hold every
# generated request for the whole request timeout: their refusals are AudioAPITests',
# StreamTests' and LiveMP4Tests'.
EXCLUDED = (r"^/(api/events|stream|cameras/\{id\}/stream|live\.mp4|cameras/\{id\}/live\.mp4|audio\.wav|cameras/\{id\}/audio\.wav"
            r"|api/whep|api/cameras/\{id\}/whep|api/talk|api/cameras/\{id\}/talk|onvif/\{service\}|onvif/subscriptions/\{id\})?$")
# The only operations where a schema-valid request may be refused (422: the camera lacks the
# format or control asked for); schemathesis.toml says why. Checked before every run, so a
# filter there that selects more (as `include-path-regex` beside `include-method` did: every
# POST) fails the run instead of hiding refusals.
REFUSABLE = {f"POST /api/{prefix}/{call}" for prefix in ("session", "cameras/{id}/session") for call in ("controls", "prepare")}


def venv():
    """The venv's `st` (scripts/py-venv: made once, again when the pin changes)."""
    subprocess.run([str(ROOT / "scripts/py-venv"), str(VENV), "--", SCHEMATHESIS], check=True)
    return VENV / "bin/st"


def refusable(st):
    """The operations whose positive_data_acceptance, as schemathesis.toml configures it,
    lets a schema-valid request be answered with a status the default does not allow."""
    probe = """
import sys, schemathesis
from schemathesis.config import SchemathesisConfig
from schemathesis.config._checks import POSITIVE_DATA_ACCEPTANCE_EXPECTED_STATUSES as DEFAULT
config = SchemathesisConfig.from_path(sys.argv[1])
schema = schemathesis.openapi.from_path(sys.argv[2], config=config)
for result in schema.get_all_operations():
    operation = result.ok()
    for phase in ("examples", "coverage", "fuzzing", "stateful"):
        statuses = schema.config.checks_config_for(operation=operation, phase=phase).positive_data_acceptance.expected_statuses
        if set(statuses) - set(DEFAULT):
            print(operation.label)
            break
"""
    out = subprocess.run([str(st.parent / "python"), "-c", probe, str(HERE / "schemathesis.toml"), str(ROOT / "Public/openapi.yaml")],
                         env=dict(os.environ, PYTHONPATH=str(HERE)), cwd=HERE, capture_output=True, text=True, check=True).stdout
    return set(out.split("\n")) - {""}


def start(binary, workdir):
    """The server on a port of the kernel's choosing: (process, port)."""
    p = subprocess.Popen([str(binary), "--cameras", "synthetic", "--port", "0", "--preset", "352x288",
                          "--public-directory", str(ROOT / "Public"), "--log-level", "warning"],
                         stdout=subprocess.PIPE, stderr=open(workdir / "server.log", "wb"), cwd=workdir)
    ready, _, _ = select.select([p.stdout], [], [], 30)
    line = p.stdout.readline().decode() if ready else ""
    m = re.search(r"127\.0\.0\.1:(\d+)", line)
    if not m:
        p.kill()
        sys.exit(f"test-fuzz: the server did not start: {line!r}")
    port = int(m.group(1))
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/session", timeout=5) as r:
                if b'"running"' in r.read():
                    return p, port
        except OSError:
            pass
        time.sleep(0.1)
    p.kill()
    sys.exit("test-fuzz: the session did not start running within 30 s")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--max-examples", type=int, default=25)
    ap.add_argument("--seed", default="20261124")
    ap.add_argument("--binary", default=str(ROOT / ".build/release/viewfinder"))
    args = ap.parse_args()
    st = venv()
    allowed = refusable(st)
    if allowed != REFUSABLE:
        sys.exit(f"test-fuzz: schemathesis.toml lets schema-valid requests be refused on {sorted(allowed)}, "
                 f"expected exactly {sorted(REFUSABLE)}")
    with tempfile.TemporaryDirectory(prefix="viewfinder-fuzz-") as tmp:
        workdir = Path(tmp)
        server, port = start(args.binary, workdir)
        started = time.monotonic()
        try:
            command = [str(st), "--config-file", str(HERE / "schemathesis.toml"), "run", str(ROOT / "Public/openapi.yaml"),
                       "--url", f"http://127.0.0.1:{port}", "--phases", "examples,coverage,fuzzing,stateful",
                       "--checks", "all", "--exclude-path-regex", EXCLUDED, "--max-examples", str(args.max_examples),
                       "--request-timeout", "15", "--no-color"]
            if args.seed != "random":
                command += ["--seed", args.seed]
            env = dict(os.environ, PYTHONPATH=str(HERE), SCHEMATHESIS_HOOKS="hooks")
            result = subprocess.run(command, env=env, cwd=workdir)
            alive = server.poll() is None
        finally:
            server.terminate()
            try:
                server.wait(timeout=10)
            except subprocess.TimeoutExpired:
                server.kill()
        print(f"test-fuzz: schemathesis exited {result.returncode} after {time.monotonic() - started:.0f} s; "
              f"the server {'was still serving' if alive else 'had died (exit %s)' % server.returncode}")
        if not alive:
            print((workdir / "server.log").read_text()[-4000:])
        sys.exit(0 if result.returncode == 0 and alive else 1)


if __name__ == "__main__":
    main()
