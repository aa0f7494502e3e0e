#!/usr/bin/env python3
"""A raw-HTTP fuzzer for Viewfinder's server (issue 15, item 2). Python 3 standard library only.

It starts its own release server (synthetic cameras, 127.0.0.1, a free port, a small preset, a
temporary working directory holding the config, a copy of Public/, the photos and a canary file
outside the public directory) and throws at it, over plain sockets:

  request-line   malformed request lines: no version, HTTP/0.9, HTTP/2 preface, absurd versions,
                 bad and lower-case methods, TLS bytes, a response as a request, ...
  huge           100 KB and 1 MB URLs and queries, 100 KB header values, thousands of headers
  headers        lines without a colon, obs-fold, space before the colon, bare LF / CR, NUL and
                 invalid UTF-8 in names and values, broken Range, Expect and Authorization
  length         Content-Length negative, non-numeric, overflowing, listed, twice and differing,
                 longer than the body (then half-closed)
  chunked        bad hex, missing CRLF, huge sizes, extensions, trailers, chunked + Content-Length,
                 chunked not last, chunked bodies over the limit, a missing last chunk
  body           bodies at and over the 64 KiB limit (by Content-Length and by chunks), a 5 MB
                 Content-Length, Expect: 100-continue
  json           invalid UTF-8, NUL, lone surrogates, deep nesting, huge numbers in JSON bodies
  path           percent-encoding errors, %00, overlong UTF-8, traversal (%2e%2e, ..%2f, %252e, \\)
                 towards the canary, through the static files and the photo and movie ids
  pipeline       several requests in one write, with a /stream or a malformed one among them
  half-close     shutdown(SHUT_WR) after part of a request, connect-and-close, close mid-body,
                 close (and reset) mid-stream of /stream and /api/events, many viewers at once
  dribble        requests sent a byte at a time (bounded, about 1-2 s each)
  fragment       a valid request split into random writes (must get the same answer)
  mutation       random byte flips, insertions, deletions, truncations and duplications of valid
                 requests (GET /api/session, POST .../zoom and other JSON calls, POST .../capture,
                 GET /snapshot, /stream, /api/events, /index.html, HEAD, OPTIONS, Range)

Each case must get a well-formed HTTP/1.x status line (100-599; 500 is a failure: an internal
error) for each answer, or a close, within --timeout seconds (a streamed answer is read up to its
head and then closed); some cases also state what the answer must be (a malformed request must not
get a 2xx; a valid one must get its usual status; traversal must never reach the canary). Every
--check-every cases and at the end GET /api/session must answer 200, and the server must never die
(its stderr tail is printed if it does). The server's open descriptors and threads are counted
after a warm-up (a few requests, a /stream viewer and an /api/events client, all closed) and again
after the run (polled for up to --settle seconds while connections are torn down): they must be
the same, else both lists are printed.

Cases are numbered; case N is generated from (--seed, N) alone, so `--only N` reruns exactly it.
The fixed catalog comes first (ids 0..catalog-1), then random cases. Exits 1 on any failure.

    python3 Tests/fuzz/raw_http.py                 # about 90 s on 2 cores (1000 cases)
    python3 Tests/fuzz/raw_http.py --only 1234 -v  # one case, showing what it sent and got
"""
import argparse
import collections
import json
import os
import random
import re
import select
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CANARY = b"VIEWFINDER-FUZZ-CANARY-7f3a"
STATUS_LINE = re.compile(rb"HTTP/1\.[01] ([1-5][0-9][0-9])(?: [^\r\n]*)?\r?\n")
BODY_LIMIT = 64 * 1024
HEADER_TIMEOUT = 3


# ---------------------------------------------------------------- the server

class Server:
    """The release server in a temporary working directory."""

    def __init__(self, binary, workdir, log_level):
        self.workdir = Path(workdir)
        www = self.workdir / "www"
        shutil.copytree(ROOT / "Public", www)
        (self.workdir / "canary.txt").write_bytes(CANARY + b"\n")
        (self.workdir / "photos").mkdir()
        (self.workdir / "photos" / "canary.txt").write_bytes(CANARY + b"\n")
        config = {
            "server": {"host": "127.0.0.1", "port": 0, "publicDirectory": str(www),
                       "maxConnections": 256, "maxConnectionsPerAddress": 1000,
                       # libmicrohttpd 0.9.75 in epoll mode misses a FIN that arrives with the
                       # last bytes of an incomplete request (or after an answer on a kept-alive
                       # connection) until the header timeout closes it: keep that short, so
                       # that "answered or closed within --timeout" holds.
                       "headerTimeout": HEADER_TIMEOUT},
            "cameras": "synthetic",
            "session": {"preset": "352x288", "fps": 15, "autostart": True},
            "stream": {"quality": 60, "maxFps": 15},
            "capture": {"quality": 80, "directory": str(self.workdir / "photos")},
            "recording": {"directory": str(self.workdir / "movies")},
        }
        (self.workdir / "config.json").write_text(json.dumps(config, indent=1))
        self.stderr_path = self.workdir / "server.stderr"
        self.stderr = open(self.stderr_path, "wb")
        self.proc = subprocess.Popen([str(binary), "--config", "config.json", "--log-level", log_level],
                                     cwd=self.workdir, stdout=subprocess.PIPE, stderr=self.stderr)
        ready, _, _ = select.select([self.proc.stdout], [], [], 30)
        line = self.proc.stdout.readline().decode(errors="replace") if ready else ""
        m = re.search(r"127\.0\.0\.1:(\d+)", line)
        if not m:
            self.stop()
            raise RuntimeError(f"viewfinder did not start: {line!r}\n{self.stderr_tail()}")
        self.port = int(m.group(1))
        # Keep draining stdout so the server never blocks on a full pipe.
        threading.Thread(target=self._drain, daemon=True).start()

    def _drain(self):
        for _ in self.proc.stdout:
            pass

    @property
    def pid(self):
        return self.proc.pid

    def alive(self):
        return self.proc.poll() is None

    def stderr_tail(self, lines=40):
        if not self.stderr.closed:
            self.stderr.flush()
        try:
            text = self.stderr_path.read_bytes().decode(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def fds(self):
        """The targets of the server's open descriptors, sorted."""
        out = []
        d = f"/proc/{self.pid}/fd"
        for name in os.listdir(d):
            try:
                out.append(os.readlink(f"{d}/{name}"))
            except OSError:
                pass
        # Socket and pipe inode numbers differ run to run; keep the kind only.
        return sorted(re.sub(r"^(socket|pipe|anon_inode):\[\d+\]$", r"\1", t) for t in out)

    def threads(self):
        """The names of the server's threads, sorted."""
        out = []
        d = f"/proc/{self.pid}/task"
        for tid in os.listdir(d):
            try:
                out.append(Path(f"{d}/{tid}/comm").read_text().strip())
            except OSError:
                pass
        return sorted(out)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self.stderr.close()


# ---------------------------------------------------------------- building requests

def req(method, path, headers=(), body=b"", version=b"HTTP/1.1", host=True, length=None):
    """A request's bytes; `length` True adds Content-Length for the body, None when it has one."""
    method = method.encode() if isinstance(method, str) else method
    path = path.encode() if isinstance(path, str) else path
    version = version.encode() if isinstance(version, str) else version
    lines = [method + b" " + path + b" " + version]
    if host:
        lines.append(b"Host: 127.0.0.1")
    for h in headers:
        lines.append(h.encode() if isinstance(h, str) else h)
    if length or (length is None and body):
        lines.append(b"Content-Length: %d" % len(body))
    return b"\r\n".join(lines) + b"\r\n\r\n" + body


def jpost(path, obj_or_bytes, headers=()):
    body = obj_or_bytes if isinstance(obj_or_bytes, bytes) else json.dumps(obj_or_bytes).encode()
    return req("POST", path, [b"Content-Type: application/json", *headers], body, length=True)


def chunked(path, chunks_bytes, headers=()):
    """A chunked POST whose framing is given verbatim."""
    return req("POST", path, [b"Content-Type: application/json", b"Transfer-Encoding: chunked", *headers],
               length=False) + chunks_bytes


def chunk(data):
    return b"%x\r\n" % len(data) + data + b"\r\n"


# The valid requests the mutations and fragments start from: (name, bytes, the statuses they get).
# Static files ignore Range (allowed: RFC 9110 14.2); only movies answer it.
SEEDS = [
    ("session", req("GET", "/api/session"), (200,)),
    ("zoom", jpost("/api/session/zoom", {"factor": 1.5}), (200,)),
    ("zoom-back", jpost("/api/session/zoom", {"factor": 1}), (200,)),
    ("focus", jpost("/api/session/focus", {"mode": "continuous"}), (200,)),
    ("exposure", jpost("/api/session/exposure", {"mode": "continuous", "bias": 0.5}), (200,)),
    ("white-balance", jpost("/api/session/white-balance", {"mode": "continuous"}), (200,)),
    ("orientation", jpost("/api/session/orientation", {"rotation": 0, "mirrored": False}), (200,)),
    ("capture", req("POST", "/api/session/capture", length=True), (200,)),
    ("capture-json", jpost("/api/session/capture", {"quality": 50}), (200,)),
    ("snapshot", req("GET", "/snapshot"), (200,)),
    ("stream", req("GET", "/stream"), (200,)),
    ("events", req("GET", "/api/events"), (200,)),
    ("index", req("GET", "/index.html"), (200,)),
    ("root", req("GET", "/"), (200,)),
    ("cameras", req("GET", "/api/cameras"), (200,)),
    ("photos", req("GET", "/api/photos"), (200,)),
    ("head-session", req("HEAD", "/api/session"), (200,)),
    ("head-index", req("HEAD", "/index.html"), (200,)),
    ("options", req("OPTIONS", "/api/session/zoom"), (204,)),
    ("range", req("GET", "/index.html", ["Range: bytes=0-99"]), (200, 206)),
    ("range-suffix", req("GET", "/style.css", ["Range: bytes=-10"]), (200, 206)),
    ("keepalive-10", req("GET", "/api/session", version=b"HTTP/1.0"), (200,)),
    ("healthz", req("GET", "/healthz"), (200,)),
    ("metrics", req("GET", "/metrics"), (200,)),
]


# ---------------------------------------------------------------- cases

class Case:
    """What to do on one connection and what the answer must be.

    steps: ("send", bytes) | ("sleep", s) | ("dribble", bytes, piece, delay)
           | ("shut",) (shutdown(SHUT_WR) 30 ms after the last write, so the FIN comes apart)
           | ("shut-now",) (at once: the FIN may arrive with the last bytes)
           | ("read-head",) (read one answer's head now, e.g. a stream's) | ("reset",) (close with RST)
    after: "read" (read answers, half-closing when they stop) or "close" (close without reading)
    expect: None or a function (statuses, closed) -> a problem (str) or None
    requests: how many answers the bytes should get, None when unknown
    """

    def __init__(self, category, name, steps, after="read", expect=None, requests=None, heads=None,
                 check=None, connections=1):
        self.category, self.name, self.steps, self.after = category, name, steps, after
        # How many answers to wait for before half-closing: known, or guessed from what looks
        # like request lines (a guess only decides when to stop waiting, never a failure).
        self.guess = requests if requests is not None else len(
            re.findall(rb"[A-Za-z]+ [^ \r\n]* HTTP/1\.[01]\r?\n", self.sent())) or None
        self.expect, self.requests, self.check, self.connections = expect, requests, check, connections
        data = self.sent()
        # Which answers are to HEAD requests (they have no body): known or guessed.
        self.heads = heads if heads is not None else [m == b"HEAD" for m in re.findall(rb"(?:^|\n)([A-Z]+) ", data)]
        self.maybe_head = b"HEAD" in data

    def sent(self):
        return b"".join(s[1] for s in self.steps if s[0] in ("send", "dribble"))


def not_ok(statuses, closed):
    """A malformed request: never a 2xx or 3xx."""
    bad = [s for s in statuses if 200 <= s < 400]
    return f"malformed request answered {bad[0]}" if bad else None


def exactly(*allowed, answered=True):
    """Every answer's status is one of `allowed`; with `answered`, there must be one."""
    def check(statuses, closed):
        if answered and not statuses:
            return f"no answer (expected {'/'.join(map(str, allowed))})"
        bad = [s for s in statuses if s not in allowed]
        return f"answered {bad[0]} (expected {'/'.join(map(str, allowed))})" if bad else None
    return check


def first(*allowed):
    """The first answer's status is one of `allowed` (later ones are free)."""
    def check(statuses, closed):
        if not statuses:
            return f"no answer (expected {'/'.join(map(str, allowed))})"
        return None if statuses[0] in allowed else f"answered {statuses[0]} (expected {'/'.join(map(str, allowed))})"
    return check


def sequence(*expected):
    """Exactly these answers, in order (a pipeline)."""
    def check(statuses, closed):
        return None if list(statuses) == list(expected) else f"answers {statuses}, expected {list(expected)}"
    return check


def at_most(n):
    def check(statuses, closed):
        return f"{len(statuses)} answers to {n} request(s): a body was taken for a request" if len(statuses) > n else None
    return check


# libmicrohttpd 0.9.75 hands names, values and the URL over as C strings, measured with
# strlen: what follows a NUL never reaches Viewfinder, which cannot refuse what it never sees.
CUT = "cuts it at the NUL before Viewfinder sees it"


def lenient(check, why):
    """What the RFCs require but libmicrohttpd 0.9.75 hides from Viewfinder (`why`): reported as
    a note, not a failure. What it lets through whole, Viewfinder refuses itself (HeaderSyntax:
    names that are not tokens, CR or LF in values, Host missing or repeated)."""
    def wrapped(statuses, closed):
        p = check(statuses, closed)
        return p and f"NOTE: {p} (libmicrohttpd {why})"
    return wrapped


def both(*checks):
    def check(statuses, closed):
        for c in checks:
            if c and (p := c(statuses, closed)):
                return p
        return None
    return check


def one(category, name, data, expect=None, shut=False, requests=1, **kw):
    steps = [("send", data)] + ([("shut-now",)] if shut == "now" else [("shut",)] if shut else [])
    return Case(category, name, steps, expect=expect, requests=requests, **kw)


def catalog():
    """The fixed cases, each with what its answer must be where the RFCs or API.md say."""
    C = []
    S = "/api/session"
    zoom = b'{"factor":1}'  # 12 bytes: the Content-Lengths and chunk sizes below count on it
    assert len(zoom) == 12

    # -- request lines
    R = "request-line"
    C += [
        one(R, "no version (HTTP/0.9 simple request)", b"GET /api/session\r\n\r\n", not_ok),
        one(R, "HTTP/0.9", b"GET /api/session HTTP/0.9\r\nHost: x\r\n\r\n", not_ok),
        one(R, "HTTP/2.0 version", b"GET /api/session HTTP/2.0\r\nHost: x\r\n\r\n", not_ok),
        one(R, "HTTP/2 preface", b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", not_ok, shut=True),
        one(R, "HTTP/9.9", b"GET /api/session HTTP/9.9\r\nHost: x\r\n\r\n", not_ok),
        one(R, "HTTP/1.99999999999999999999", b"GET /api/session HTTP/1.99999999999999999999\r\nHost: x\r\n\r\n"),
        one(R, "HTTP/01.1", b"GET /api/session HTTP/01.1\r\nHost: x\r\n\r\n"),
        one(R, "HTTP/-1.1", b"GET /api/session HTTP/-1.1\r\nHost: x\r\n\r\n", not_ok),
        one(R, "HTTP/1.1 trailing junk", b"GET /api/session HTTP/1.1x\r\nHost: x\r\n\r\n", not_ok),
        one(R, "lower-case protocol", b"GET /api/session http/1.1\r\nHost: x\r\n\r\n"),
        one(R, "version only", b"HTTP/1.1\r\n\r\n", not_ok, shut=True),
        one(R, "response as request", b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", not_ok, shut=True),
        one(R, "no URL", b"GET HTTP/1.1\r\nHost: x\r\n\r\n", not_ok, shut=True),
        one(R, "method only", b"GET\r\n\r\n", not_ok, shut=True),
        one(R, "bad method characters", b"G@T /api/session HTTP/1.1\r\nHost: x\r\n\r\n", not_ok),
        one(R, "lower-case method", b"get /api/session HTTP/1.1\r\nHost: x\r\n\r\n", not_ok),
        one(R, "unknown method", b"FOOBAR /api/session HTTP/1.1\r\nHost: x\r\n\r\n", not_ok),
        one(R, "unknown method with body", b"BREW /api/session HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc", not_ok),
        one(R, "very long method", b"G" * 5000 + b" /api/session HTTP/1.1\r\nHost: x\r\n\r\n", not_ok, shut=True),
        one(R, "NUL in method", b"GE\x00T /api/session HTTP/1.1\r\nHost: x\r\n\r\n", not_ok, shut=True),
        one(R, "leading space", b" GET /api/session HTTP/1.1\r\nHost: x\r\n\r\n", shut=True),
        one(R, "leading empty lines", b"\r\n\r\nGET /api/session HTTP/1.1\r\nHost: x\r\n\r\n"),
        one(R, "double spaces", b"GET  /api/session  HTTP/1.1\r\nHost: x\r\n\r\n"),
        one(R, "tabs", b"GET\t/api/session\tHTTP/1.1\r\nHost: x\r\n\r\n", shut=True),
        one(R, "four parts", b"GET /api/session HTTP/1.1 extra\r\nHost: x\r\n\r\n", not_ok, shut=True),
        one(R, "space in URL", b"GET /api/ses sion HTTP/1.1\r\nHost: x\r\n\r\n", not_ok, shut=True),
        one(R, "no leading slash", b"GET api/session HTTP/1.1\r\nHost: x\r\n\r\n", shut=True),
        one(R, "absolute form", b"GET http://127.0.0.1/api/session HTTP/1.1\r\nHost: x\r\n\r\n"),
        one(R, "authority form", b"CONNECT 127.0.0.1:80 HTTP/1.1\r\nHost: x\r\n\r\n", not_ok),
        one(R, "asterisk form", b"OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n"),
        one(R, "asterisk GET", b"GET * HTTP/1.1\r\nHost: x\r\n\r\n", not_ok),
        one(R, "HTTP/1.1 without Host", b"GET /api/session HTTP/1.1\r\n\r\n", exactly(400)),
        one(R, "HTTP/1.0 without Host", b"GET /api/session HTTP/1.0\r\n\r\n", exactly(200)),
        one(R, "two Host headers", b"GET /api/session HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", exactly(400)),
        one(R, "empty lines only", b"\r\n\r\n\r\n", shut=True),
        one(R, "nothing, half-closed", b"", shut=True),
        one(R, "TLS ClientHello", bytes.fromhex("16030100a5010000a10303") + bytes(range(32)) + b"\x00" * 40, not_ok, shut=True),
        one(R, "SSH banner", b"SSH-2.0-OpenSSH_9.2\r\n", not_ok, shut=True),
        one(R, "binary garbage", bytes(range(256)) * 4, not_ok, shut=True),
        one(R, "bare LF everywhere", b"GET /api/session HTTP/1.1\nHost: x\n\n"),
        one(R, "bare CR everywhere", b"GET /api/session HTTP/1.1\rHost: x\r\r", shut=True),
    ]

    # -- huge
    H = "huge"
    C += [
        one(H, "8 KB URL", req("GET", "/" + "a" * 8000)),
        one(H, "30 KB URL", req("GET", "/" + "a" * 30000), not_ok, shut=True),
        one(H, "100 KB URL", req("GET", "/" + "a" * 100_000), not_ok, shut=True),
        one(H, "100 KB query", req("GET", S + "?x=" + "y" * 100_000), not_ok, shut=True),
        one(H, "1 MB URL", req("GET", "/" + "a" * 1_000_000), not_ok, shut=True),
        one(H, "10000 query parameters", req("GET", S + "?" + "&".join(f"k{i}=v" for i in range(10000))), shut=True),
        one(H, "100 KB header value", req("GET", S, ["X-Big: " + "v" * 100_000]), not_ok, shut=True),
        one(H, "100 KB header name", req("GET", S, ["X" * 100_000 + ": v"]), not_ok, shut=True),
        one(H, "100 headers", req("GET", S, [f"X-H{i}: {i}" for i in range(100)]), exactly(200)),
        one(H, "5000 headers", req("GET", S, [f"X-H{i}: {i}" for i in range(5000)]), not_ok, shut=True),
        one(H, "1 MB of headers", req("GET", S, ["X-A: " + "b" * 1000] * 1000), not_ok, shut=True),
        one(H, "5000 empty-value headers", req("GET", S, ["X:"] * 5000), not_ok, shut=True),
        one(H, "1000 cookies", req("GET", S, ["Cookie: " + "; ".join(f"c{i}=v" for i in range(1000))])),
        one(H, "long path segments", req("GET", "/api/cameras/" + "c" * 5000 + "/session"), shut=True),
        one(H, "10000 slashes", req("GET", "/" * 10000 + "index.html"), shut=True),
        one(H, "deep path", req("GET", "/a" * 4000), shut=True),
    ]

    # -- header syntax
    HD = "headers"
    C += [
        one(HD, "line without colon", req("GET", S, ["NoColonHere"]), not_ok),
        one(HD, "line without colon, then body", req("POST", S + "/zoom", ["Bogus", "Content-Type: application/json"], zoom), not_ok),
        one(HD, "obs-fold", req("GET", S, ["X-Folded: a", " b", "\tc"])),
        one(HD, "obs-fold first line", b"GET /api/session HTTP/1.1\r\n folded\r\nHost: x\r\n\r\n"),
        one(HD, "obs-fold in Content-Length",
            b"POST /api/session/zoom HTTP/1.1\r\nHost: x\r\nContent-Length:\r\n 12\r\n\r\n" + zoom, shut=True),
        one(HD, "space before colon", req("GET", S, ["X-Space : v"]), exactly(400)),
        one(HD, "space before colon in Content-Length",
            b"POST /api/session/zoom HTTP/1.1\r\nHost: x\r\nContent-Length : 12\r\n\r\n" + zoom, not_ok, shut=True),
        one(HD, "empty header name", req("GET", S, [": v"]), lenient(not_ok, "drops the line")),
        one(HD, "header name with space", req("GET", S, ["X A: v"]), exactly(400)),
        one(HD, "NUL in header value", req("GET", S, [b"X-Nul: a\x00b"]), lenient(not_ok, CUT)),
        one(HD, "NUL in header name", req("GET", S, [b"X-N\x00ul: v"]), exactly(400)),
        one(HD, "CR in header value", req("GET", S, [b"X-Cr: a\rb"]), exactly(400)),
        one(HD, "invalid UTF-8 value", req("GET", S, [b"X-Utf: \xff\xfe\xc3\x28"])),
        one(HD, "invalid UTF-8 name", req("GET", S, [b"X-\xff: v"]), exactly(400)),
        one(HD, "invalid UTF-8 Origin", req("GET", S, [b"Origin: http://\xff\xfe"])),
        one(HD, "bad Basic", req("GET", S, [b"Authorization: Basic \xff\xff!!"])),
        one(HD, "bad Digest", req("GET", S, [b'Authorization: Digest username="\xff", nonce="' + b"n" * 2000 + b'"'])),
        one(HD, "Bearer NUL", req("GET", S, [b"Authorization: Bearer a\x00b"]), lenient(not_ok, CUT)),
        one(HD, "Range garbage", req("GET", "/index.html", ["Range: bytes=abc"]), exactly(200, 206, 416)),
        one(HD, "Range backwards", req("GET", "/index.html", ["Range: bytes=50-10"]), exactly(200, 206, 416)),
        one(HD, "Range past end", req("GET", "/index.html", ["Range: bytes=99999999-"]), exactly(200, 416)),
        one(HD, "Range overflow", req("GET", "/index.html", ["Range: bytes=99999999999999999999999-1"]), exactly(200, 206, 416)),
        one(HD, "Range -0", req("GET", "/index.html", ["Range: bytes=-0"]), exactly(200, 206, 416)),
        one(HD, "Range negative", req("GET", "/index.html", ["Range: bytes=-5--3"]), exactly(200, 206, 416)),
        one(HD, "Range 1000 parts", req("GET", "/index.html", ["Range: bytes=" + ",".join(f"{i}-{i}" for i in range(1000))]),
            exactly(200, 206, 416)),
        one(HD, "Range wrong unit", req("GET", "/index.html", ["Range: pixels=0-10"]), exactly(200, 206, 416)),
        one(HD, "Range on API", req("GET", S, ["Range: bytes=0-10"]), exactly(200, 206, 416)),
        one(HD, "Range on snapshot", req("GET", "/snapshot", ["Range: bytes=0-10"]), exactly(200, 206, 416)),
        one(HD, "If-None-Match garbage", req("GET", "/index.html", [b'If-None-Match: "\xff', "If-Modified-Since: yesterday"])),
        one(HD, "Expect unknown", req("POST", S + "/zoom", ["Expect: teapot"], zoom), shut=True),
        one(HD, "Connection garbage", req("GET", S, ["Connection: close, \xff, upgrade", "Upgrade: h2c"])),
        one(HD, "Upgrade websocket", req("GET", "/api/events", ["Connection: Upgrade", "Upgrade: websocket",
                                                                "Sec-WebSocket-Key: x", "Sec-WebSocket-Version: 13"])),
        one(HD, "Host garbage", b"GET /api/session HTTP/1.1\r\nHost: \xff\x00:99999\r\n\r\n", lenient(not_ok, CUT)),
        one(HD, "Content-Type garbage", req("POST", S + "/zoom", [b"Content-Type: \xff/\x01; charset=\xfe"], zoom)),
        one(HD, "multipart form", req("POST", S + "/zoom", ["Content-Type: multipart/form-data; boundary=x"],
                                      b"--x\r\nContent-Disposition: form-data; name=\"factor\"\r\n\r\n2\r\n--x--\r\n"),
            exactly(400, 415)),
        one(HD, "urlencoded form", req("POST", S + "/zoom", ["Content-Type: application/x-www-form-urlencoded"],
                                       b"factor=2&" + b"%" * 100), exactly(400, 415)),
    ]

    # -- Content-Length
    L = "length"
    zpre = b"POST /api/session/zoom HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
    C += [
        one(L, "negative", zpre + b"Content-Length: -1\r\n\r\n" + zoom, not_ok, shut=True),
        one(L, "non-numeric", zpre + b"Content-Length: abc\r\n\r\n" + zoom, not_ok, shut=True),
        one(L, "empty", zpre + b"Content-Length: \r\n\r\n" + zoom, not_ok, shut=True),
        one(L, "hex", zpre + b"Content-Length: 0xc\r\n\r\n" + zoom, not_ok, shut=True),
        one(L, "exponent", zpre + b"Content-Length: 1.2e1\r\n\r\n" + zoom, not_ok, shut=True),
        one(L, "plus sign", zpre + b"Content-Length: +12\r\n\r\n" + zoom, not_ok, shut=True),
        one(L, "12 trailing garbage", zpre + b"Content-Length: 12abc\r\n\r\n" + zoom, not_ok, shut=True),
        one(L, "list 12, 12", zpre + b"Content-Length: 12, 12\r\n\r\n" + zoom, shut=True),
        one(L, "list 12, 13", zpre + b"Content-Length: 12, 13\r\n\r\n" + zoom + b"x", not_ok, shut=True),
        one(L, "twice, same", zpre + b"Content-Length: 12\r\nContent-Length: 12\r\n\r\n" + zoom, shut=True),
        one(L, "twice, differing", zpre + b"Content-Length: 12\r\nContent-Length: 3\r\n\r\n" + zoom, not_ok, shut=True),
        one(L, "twice, differing (small first)", zpre + b"Content-Length: 3\r\nContent-Length: 12\r\n\r\n" + zoom, not_ok, shut=True),
        one(L, "overflow 2^64", zpre + b"Content-Length: 18446744073709551616\r\n\r\n" + zoom, not_ok, shut=True),
        one(L, "2^64-1", zpre + b"Content-Length: 18446744073709551615\r\n\r\n" + zoom, not_ok, shut=True),
        one(L, "2^63", zpre + b"Content-Length: 9223372036854775808\r\n\r\n" + zoom, not_ok, shut=True),
        one(L, "huge digits", zpre + b"Content-Length: " + b"9" * 100 + b"\r\n\r\n" + zoom, not_ok, shut=True),
        one(L, "leading zeros", zpre + b"Content-Length: 000012\r\n\r\n" + zoom, exactly(200)),
        # Trailing whitespace is allowed (OWS) but libmicrohttpd 0.9.75 refuses it: either is fine.
        one(L, "trailing space", zpre + b"Content-Length: 12 \r\n\r\n" + zoom, exactly(200, 400)),
        one(L, "longer than body, half-closed", zpre + b"Content-Length: 100\r\n\r\n" + zoom, not_ok, shut=True),
        one(L, "shorter than body", zpre + b"Content-Length: 5\r\n\r\n" + zoom, shut=True),
        one(L, "zero with body", zpre + b"Content-Length: 0\r\n\r\n" + zoom, shut=True),
        one(L, "on GET", req("GET", S, ["Content-Length: 5"], b"hello"), exactly(200)),
        one(L, "on GET, body looks like a request", req("GET", S, ["Content-Length: 40"], req("DELETE", "/api/photos/x")[:40]),
            both(exactly(200), at_most(1)), requests=1),
    ]

    # -- chunked
    K = "chunked"
    Z = S + "/zoom"
    C += [
        one(K, "valid", chunked(Z, chunk(zoom) + b"0\r\n\r\n"), exactly(200)),
        one(K, "valid, one byte chunks", chunked(Z, b"".join(chunk(zoom[i:i + 1]) for i in range(len(zoom))) + b"0\r\n\r\n"), exactly(200)),
        one(K, "extension", chunked(Z, b"c;name=value;x=\"q\"\r\n" + zoom + b"\r\n0;last\r\n\r\n"), exactly(200)),
        one(K, "trailer", chunked(Z, chunk(zoom) + b"0\r\nX-Trailer: 1\r\nX-More: 2\r\n\r\n"), exactly(200)),
        one(K, "upper-case hex", chunked(Z, b"C\r\n" + zoom + b"\r\n0\r\n\r\n"), exactly(200)),
        one(K, "leading zeros", chunked(Z, b"0000000c\r\n" + zoom + b"\r\n0\r\n\r\n"), exactly(200)),
        one(K, "bad hex", chunked(Z, b"zz\r\n" + zoom + b"\r\n0\r\n\r\n"), not_ok, shut=True),
        one(K, "0x prefix", chunked(Z, b"0xc\r\n" + zoom + b"\r\n0\r\n\r\n"), not_ok, shut=True),
        one(K, "negative", chunked(Z, b"-c\r\n" + zoom + b"\r\n0\r\n\r\n"), not_ok, shut=True),
        one(K, "space before size", chunked(Z, b" c\r\n" + zoom + b"\r\n0\r\n\r\n"), shut=True),
        one(K, "missing CRLF after data", chunked(Z, b"c\r\n" + zoom + b"0\r\n\r\n"), not_ok, shut=True),
        one(K, "data longer than size", chunked(Z, b"5\r\n" + zoom + b"\r\n0\r\n\r\n"), not_ok, shut=True),
        one(K, "size longer than data", chunked(Z, b"20\r\n" + zoom + b"\r\n0\r\n\r\n"), not_ok, shut=True),
        one(K, "huge size", chunked(Z, b"ffffffffffffffffffff\r\n" + zoom), not_ok, shut=True),
        one(K, "size 2^64-1", chunked(Z, b"ffffffffffffffff\r\n" + zoom), not_ok, shut=True),
        one(K, "size 2^63", chunked(Z, b"8000000000000000\r\n" + zoom), not_ok, shut=True),
        one(K, "size 10 MB", chunked(Z, b"a00000\r\n" + zoom), not_ok, shut=True),
        one(K, "no last chunk, half-closed", chunked(Z, chunk(zoom)), not_ok, shut=True),
        one(K, "no final CRLF, half-closed", chunked(Z, chunk(zoom) + b"0\r\n"), shut=True),
        one(K, "bare LF framing", chunked(Z, b"c\n" + zoom + b"\n0\n\n"), shut=True),
        one(K, "with Content-Length (smuggling)",
            req("POST", Z, ["Content-Type: application/json", "Content-Length: 4", "Transfer-Encoding: chunked"], length=False)
            + chunk(zoom) + b"0\r\n\r\n", at_most(1), shut=True),
        one(K, "with Content-Length first, GET smuggled",
            req("POST", Z, ["Content-Length: 6", "Transfer-Encoding: chunked"], length=False)
            + b"0\r\n\r\nGET /api/session HTTP/1.1\r\nHost: x\r\n\r\n", None, shut=True, requests=None),
        one(K, "chunked, gzip", req("POST", Z, ["Transfer-Encoding: chunked, gzip"], length=False) + chunk(zoom) + b"0\r\n\r\n",
            not_ok, shut=True),
        one(K, "gzip, chunked", req("POST", Z, ["Transfer-Encoding: gzip, chunked"], length=False) + chunk(zoom) + b"0\r\n\r\n",
            not_ok, shut=True),
        one(K, "xchunked", req("POST", Z, ["Transfer-Encoding: xchunked"], length=False) + chunk(zoom) + b"0\r\n\r\n",
            not_ok, shut=True),
        one(K, "Chunked (case)", req("POST", Z, ["Transfer-Encoding: Chunked"], length=False) + chunk(zoom) + b"0\r\n\r\n", shut=True),
        one(K, "twice", req("POST", Z, ["Transfer-Encoding: chunked", "Transfer-Encoding: chunked"], length=False)
            + chunk(zoom) + b"0\r\n\r\n", shut=True),
        one(K, "identity", req("POST", Z, ["Transfer-Encoding: identity"], length=False) + zoom, not_ok, shut=True),
        one(K, "on HTTP/1.0", req("POST", Z, ["Transfer-Encoding: chunked"], length=False, version=b"HTTP/1.0")
            + chunk(zoom) + b"0\r\n\r\n", shut=True),
        one(K, "on GET", req("GET", S, ["Transfer-Encoding: chunked"], length=False) + chunk(b"hello") + b"0\r\n\r\n", exactly(200)),
        one(K, "200 KB in 4 KB chunks", chunked(Z, chunk(b" " * 4096) * 50 + b"0\r\n\r\n"), exactly(413), shut=True),
        # The server stops reading after 1 MiB and answers 413; the rest of the 2 MB in its socket
        # makes the kernel reset the connection, which may discard the answer before it is read.
        one(K, "2 MB in 64 KB chunks", chunked(Z, chunk(b" " * 65536) * 32 + b"0\r\n\r\n"), exactly(413, answered=False),
            shut=True),
        one(K, "exactly the limit", chunked(Z, chunk(zoom + b" " * (BODY_LIMIT - len(zoom))) + b"0\r\n\r\n"), exactly(200)),
        one(K, "one over the limit", chunked(Z, chunk(zoom + b" " * (BODY_LIMIT + 1 - len(zoom))) + b"0\r\n\r\n"), exactly(413)),
    ]

    # -- bodies and the limit
    B = "body"
    C += [
        one(B, "exactly the limit", jpost(Z, zoom + b" " * (BODY_LIMIT - len(zoom))), exactly(200)),
        one(B, "one over the limit", jpost(Z, zoom + b" " * (BODY_LIMIT + 1 - len(zoom))), exactly(413)),
        one(B, "200 KB", jpost(Z, b" " * 200_000), exactly(413)),
        one(B, "5 MB Content-Length, 100 KB sent", zpre + b"Content-Length: 5000000\r\n\r\n" + b" " * 100_000,
            exactly(413), shut=True),
        one(B, "limit on capture", jpost(S + "/capture", b"{}" + b" " * BODY_LIMIT), exactly(413)),
        one(B, "over the limit with bad JSON", jpost(Z, b"\xff" * 70_000), exactly(413)),
        one(B, "on GET over the limit", req("GET", S, [], b"x" * 70_000), exactly(413, 200)),
        Case(B, "Expect: 100-continue", [("send", req("POST", Z, ["Expect: 100-continue", "Content-Length: 12"], length=False)),
                                         ("sleep", 0.2), ("send", zoom)], expect=exactly(200), requests=1),
        Case(B, "Expect: 100-continue over the limit",
             [("send", req("POST", Z, ["Expect: 100-continue", "Content-Length: 70000"], length=False)), ("sleep", 0.3),
              ("send", b" " * 70000)], expect=exactly(413), requests=1),
        Case(B, "Expect: 100-continue, body never sent", [("send", req("POST", Z, ["Expect: 100-continue",
                                                                                   "Content-Length: 70000"], length=False)),
                                                          ("sleep", 0.3), ("shut",)]),
        one(B, "empty body on zoom", jpost(Z, b""), exactly(400)),
        one(B, "empty body, no length", req("POST", Z, length=False), exactly(400)),
        one(B, "body on start", jpost(S + "/start", b'{"x": 1}'), exactly(400)),
    ]

    # -- JSON bodies
    J = "json"
    C += [
        one(J, "invalid UTF-8 string", jpost(Z, b'{"factor": "\xff"}'), exactly(400)),
        one(J, "invalid UTF-8 key", jpost(Z, b'{"\xff\xfe": 1}'), exactly(400)),
        one(J, "overlong UTF-8", jpost(Z, b'{"factor": "\xc0\xaf"}'), exactly(400)),
        one(J, "NUL after object", jpost(Z, b'{"factor": 1}\x00'), exactly(400)),
        one(J, "NUL in key", jpost(Z, b'{"fac\x00tor": 1}'), exactly(400)),
        one(J, "NUL in string", jpost(S + "/focus", b'{"mode": "auto\x00"}'), exactly(400)),
        one(J, "escaped NUL", jpost(S + "/focus", b'{"mode": "auto\\u0000"}'), exactly(400, 422)),
        one(J, "lone surrogate", jpost(S + "/focus", b'{"mode": "\\ud800"}'), exactly(400)),
        one(J, "truncated", jpost(Z, b'{"factor": 1'), exactly(400)),
        one(J, "only NUL", jpost(Z, b"\x00"), exactly(400)),
        one(J, "array", jpost(Z, b"[1]"), exactly(400)),
        one(J, "string", jpost(Z, b'"x"'), exactly(400)),
        one(J, "null", jpost(Z, b"null"), exactly(400)),
        one(J, "deep arrays", jpost(Z, b'{"factor": ' + b"[" * 60_000 + b"}"), exactly(400)),
        one(J, "deep arrays closed", jpost(Z, b'{"factor": ' + b"[" * 30_000 + b"]" * 30_000 + b"}"), exactly(400)),
        one(J, "deep objects", jpost(Z, b'{"a":' * 10_000 + b"1" + b"}" * 10_000), exactly(400)),
        one(J, "deep in known key", jpost(S + "/focus", b'{"point": ' + b'{"x":' * 12_000 + b"}"), exactly(400)),
        one(J, "1e999", jpost(Z, b'{"factor": 1e999}'), exactly(400)),
        one(J, "-1e999", jpost(Z, b'{"factor": -1e999}'), exactly(400)),
        one(J, "NaN", jpost(Z, b'{"factor": NaN}'), exactly(400)),
        one(J, "1e-999", jpost(Z, b'{"factor": 1e-999}'), exactly(200, 400)),
        one(J, "huge integer", jpost(Z, b'{"factor": ' + b"9" * 5000 + b"}"), exactly(200, 400)),
        one(J, "huge rate", jpost(Z, b'{"factor": 2, "rate": 1e308}'), exactly(200, 400)),
        one(J, "zero rate", jpost(Z, b'{"factor": 1, "rate": 0}'), exactly(200, 400)),
        one(J, "negative factor", jpost(Z, b'{"factor": -5}'), exactly(200, 400)),
        one(J, "duplicate keys", jpost(Z, b'{"factor": 1, "factor": "x"}'), exactly(200, 400)),
        one(J, "unknown key", jpost(Z, b'{"factor": 1, "facto": 1}'), exactly(400)),
        one(J, "wrong types", jpost(S + "/orientation", b'{"rotation": "90", "mirrored": 1}'), exactly(400)),
        one(J, "rotation 45", jpost(S + "/orientation", b'{"rotation": 45}'), exactly(400, 422)),
        one(J, "rotation 2^64", jpost(S + "/orientation", b'{"rotation": 18446744073709551616}'), exactly(400, 422)),
        one(J, "exposure duration 1e308", jpost(S + "/exposure", b'{"mode": "custom", "duration": 1e308, "iso": 1e308}'),
            exactly(200, 400)),
        one(J, "exposure -0", jpost(S + "/exposure", b'{"mode": "continuous", "bias": -0.0}'), exactly(200)),
        one(J, "point far away", jpost(S + "/focus", b'{"mode": "continuous", "point": {"x": 1e300, "y": -1e300}}'),
            exactly(200, 400)),
        one(J, "point NaN string", jpost(S + "/focus", b'{"mode": "continuous", "point": {"x": "NaN", "y": 0}}'), exactly(400)),
        one(J, "prepare absurd size", jpost(S + "/prepare", b'{"width": 99999999999, "height": -1}'), exactly(400, 422)),
        one(J, "prepare unknown preset", jpost(S + "/prepare", b'{"preset": "\\u0000\\uffff"}'), exactly(400, 422)),
        one(J, "metadata bad types", jpost(S + "/metadata", b'{"types": ["qr", 1, null, "\\ud83d"]}'), exactly(400, 422)),
        one(J, "BOM", jpost(Z, b'\xef\xbb\xbf{"factor": 1}'), exactly(200, 400)),
        one(J, "whitespace only", jpost(Z, b" \r\n\t "), exactly(400)),
        one(J, "capture quality absurd", jpost(S + "/capture", b'{"quality": 1e9}'), exactly(200, 400)),
        one(J, "capture query absurd", req("POST", S + "/capture?quality=%ff%00&store=\xff", length=True), exactly(200, 400)),
        one(J, "scene huge", jpost("/api/cameras/rear/scene", {"codes": [{"type": "qr", "value": "x" * 3000,
                                                                           "x": 0.5, "y": 0.5, "size": 1e9}]}),
            exactly(200, 400, 404, 409, 422)),
        one(J, "scene clear", jpost("/api/cameras/rear/scene", {"codes": []}), exactly(200, 404, 409)),
    ]

    # -- paths: percent-encoding and traversal (checked against the canary too)
    P = "path"
    C += [one(P, f"traversal {p}", req("GET", p), not_ok) for p in [
        "/../canary.txt", "/%2e%2e/canary.txt", "/%2E%2E/canary.txt", "/..%2fcanary.txt", "/..%2Fcanary.txt",
        "/%2e%2e%2fcanary.txt", "/.%2e/canary.txt", "/%2e./canary.txt", "/%252e%252e/canary.txt", "/..\\canary.txt",
        "/..%5ccanary.txt", "/%5c..%5ccanary.txt", "//../canary.txt", "/./../canary.txt", "/index.html/../../canary.txt",
        "/%c0%ae%c0%ae/canary.txt", "/%e0%80%ae%e0%80%ae/canary.txt", "/..%c0%afcanary.txt", "/..;/canary.txt",
        "/%2e%2e/%2e%2e/%2e%2e/%2e%2e/%2e%2e/etc/passwd", "/../../../../../../etc/passwd", "/..%00/canary.txt",
        "/photos/canary.txt", "/www/../canary.txt", "/canary.txt", "/%2fcanary.txt", "/%2f%2e%2e%2fcanary.txt",
        "/api/photos/..%2fcanary.txt", "/api/photos/%2e%2e%2fcanary.txt", "/api/photos/canary.txt",
        "/api/photos/..%2f..%2fcanary.txt", "/api/movies/..%2fphotos%2fcanary.txt", "/api/movies/%2e%2e%2fcanary.txt",
        "/cameras/..%2f..%2fcanary.txt/snapshot",
    ]]
    C += [one(P, f"DELETE {p}", req("DELETE", p), not_ok) for p in [
        "/api/photos/..%2fcanary.txt", "/api/photos/canary.txt", "/api/photos/%2e%2e%2fphotos%2fcanary.txt",
        "/api/photos/..%2f..%2fcanary.txt", "/api/movies/..%2fphotos%2fcanary.txt", "/api/movies/%2e%2e%2fcanary.txt",
        "/api/photos/%00", "/api/photos/.", "/api/photos/..", "/api/photos/%2e", "/api/photos/%2e%2e",
    ]]
    # libmicrohttpd hands the URL over as a C string: a raw NUL cuts it short (its leniency).
    C += [one(P, f"raw NUL {p!r}", req("GET", p), lenient(not_ok, CUT)) for p in [b"/index.html\x00", b"/api/session\x00x"]]
    C += [one(P, f"percent {p!r}", req("GET", p), not_ok) for p in [
        b"/%", b"/%2", b"/%zz", b"/%%", b"/api/session%", b"/api/session%2", b"/%u0041pi/session", b"/index.html%00",
        b"/index.html%00.png", b"/index%2ehtml%00", b"/api/session%00", b"/api%2fsession", b"/api/sess%69on%00x",
        b"/%ff%fe", b"/\xff\xfe", b"/api/\xc3\x28", b"/%ed%a0%80",
        b"/api/cameras/%00/session", b"/api/cameras/%ff/session", b"/cameras/%00/stream", b"/cameras/\xff/snapshot",
        b"/api/photos/%ff", b"/api/movies/%00",
    ]]
    C += [one(P, f"query {p!r}", req("GET", p)) for p in [
        b"/api/session?%", b"/api/session?%zz=1", b"/api/session?=", b"/api/session?&&&&", b"/api/session?a=%00",
        b"/api/session?\xff=\xfe", b"/snapshot?fps=%00&camera=\xff", b"/api/session?a=1&a=2&a=%", b"/api/session?#frag",
        b"/api/session#frag", b"/?action=%00", b"/?action=snapshot_%ff", b"/?action=snapshot_99999999999999999999",
        b"/?action=snapshot_-1", b"/?action=stream_0&fps=-1", b"/api/events?camera=%00",
        b"/api/events?camera=" + b"\xff" * 300, b"/api/photos?limit=-1&offset=%ff",
    ]]
    C += [one(P, "query /stream fps=1e999", req("GET", "/stream?fps=1e999")),
          one(P, "query /stream fps=NaN", req("GET", "/stream?fps=nan")),
          one(P, "query /stream fps=0.0000001", req("GET", "/stream?fps=0.0000001"))]

    # -- pipelines
    PL = "pipeline"
    hs = req("GET", S)
    C += [
        one(PL, "3 GETs", hs * 3, sequence(200, 200, 200), requests=3),
        one(PL, "50 healthz", req("GET", "/healthz") * 50, sequence(*[200] * 50), requests=50),
        one(PL, "GET, stream, GET", hs + req("GET", "/stream") + hs, sequence(200, 200), requests=2),
        one(PL, "GET, events, GET", hs + req("GET", "/api/events") + hs, sequence(200, 200), requests=2),
        one(PL, "POST, GET", jpost(Z, zoom) + hs, sequence(200, 200), requests=2),
        one(PL, "chunked POST, GET", chunked(Z, chunk(zoom) + b"0\r\n\r\n") + hs, sequence(200, 200), requests=2),
        one(PL, "HEAD, GET, OPTIONS", req("HEAD", S) + hs + req("OPTIONS", S), sequence(200, 200, 204),
            heads=[True, False, False], requests=3),
        one(PL, "HEAD stream, GET", req("HEAD", "/stream") + hs, sequence(200, 200), heads=[True, False], requests=2),
        one(PL, "3 snapshots", req("GET", "/snapshot") * 3, sequence(200, 200, 200), requests=3),
        one(PL, "capture, GET, capture", req("POST", S + "/capture", length=True) + hs + req("POST", S + "/capture", length=True),
            sequence(200, 200, 200), requests=3),
        one(PL, "GET, malformed, GET", hs + b"GET /x HTTP/9.9\r\n\r\n" + hs, first(200), requests=None, shut=True),
        one(PL, "GET, Connection: close, GET", hs + req("GET", S, ["Connection: close"]) + hs, sequence(200, 200), requests=3),
        one(PL, "HTTP/1.0 GET, GET", req("GET", S, version=b"HTTP/1.0") + hs, sequence(200), requests=2),
        one(PL, "413 then GET", jpost(Z, b" " * 70_000) + hs, first(413), requests=None, shut=True),
        one(PL, "404, 405, 400, 200", req("GET", "/nope") + req("DELETE", S) + jpost(Z, b"{") + hs,
            sequence(404, 405, 400, 200), requests=4),
        one(PL, "static, range, GET", req("GET", "/index.html") + req("GET", "/style.css", ["Range: bytes=0-9"]) + hs,
            sequence(200, 200, 200), requests=3),
        one(PL, "stream first", req("GET", "/stream") + hs * 3, sequence(200), requests=1),
        one(PL, "100 GETs, half-closed", hs * 100, sequence(*[200] * 100), requests=100, shut=True),
    ]

    # -- half-closed and aborted connections
    HC = "half-close"
    partial = req("POST", Z, ["Content-Type: application/json", "Content-Length: 100"], length=False) + zoom
    C += [
        one(HC, "request line, half-closed", b"GET /api/sess", None, shut="now"),
        one(HC, "headers unfinished, half-closed", b"GET /api/session HTTP/1.1\r\nHost: x\r\n", None, shut="now"),
        # libmicrohttpd may take a FIN that comes with the request as the end of the connection.
        one(HC, "complete GET, half-closed", hs, exactly(200, answered=False), shut="now"),
        one(HC, "complete POST, half-closed", jpost(Z, zoom), exactly(200, answered=False), shut="now"),
        one(HC, "capture, half-closed", req("POST", S + "/capture", length=True), exactly(200, answered=False), shut="now"),
        one(HC, "complete GET, half-closed later", hs, exactly(200, answered=False), shut=True),
        one(HC, "partial body, half-closed", partial, not_ok, shut="now"),
        Case(HC, "connect and close", [], after="close"),
        Case(HC, "connect and reset", [("reset",)], after="close"),
        Case(HC, "close mid request line", [("send", b"GET /api/sess")], after="close"),
        Case(HC, "close mid headers", [("send", b"GET /api/session HTTP/1.1\r\nHost: x\r\nX-")], after="close"),
        Case(HC, "close mid body", [("send", partial)], after="close"),
        Case(HC, "reset mid body", [("send", partial), ("reset",)], after="close"),
        Case(HC, "close mid chunked body", [("send", chunked(Z, b"c\r\n{\"fac"))], after="close"),
        Case(HC, "close before the answer: capture", [("send", req("POST", S + "/capture", length=True))], after="close"),
        Case(HC, "reset before the answer: capture", [("send", req("POST", S + "/capture", length=True)), ("reset",)],
             after="close"),
        Case(HC, "close before the answer: snapshot", [("send", req("GET", "/snapshot"))], after="close"),
        Case(HC, "close before the answer: 200 KB body", [("send", jpost(Z, b" " * 200_000))], after="close"),
        Case(HC, "close before the answer: stream", [("send", req("GET", "/stream"))], after="close"),
        Case(HC, "close before the answer: events", [("send", req("GET", "/api/events"))], after="close"),
        Case(HC, "close mid stream", [("send", req("GET", "/stream")), ("read-head",), ("sleep", 0.3)], after="close"),
        Case(HC, "reset mid stream", [("send", req("GET", "/stream")), ("read-head",), ("sleep", 0.3), ("reset",)],
             after="close"),
        Case(HC, "half-close mid stream", [("send", req("GET", "/stream")), ("read-head",), ("shut",), ("sleep", 0.3)],
             after="close"),
        Case(HC, "close mid events", [("send", req("GET", "/api/events")), ("read-head",), ("sleep", 0.2)], after="close"),
        Case(HC, "reset mid events", [("send", req("GET", "/api/events")), ("read-head",), ("reset",)], after="close"),
        Case(HC, "half-close mid events", [("send", req("GET", "/api/events")), ("read-head",), ("shut",), ("sleep", 0.2)],
             after="close"),
        Case(HC, "close mid stream (camera)", [("send", req("GET", "/cameras/front/stream?fps=5")), ("read-head",)],
             after="close"),
        Case(HC, "close mid events (camera)", [("send", req("GET", "/api/events?camera=front")), ("read-head",)],
             after="close"),
        Case(HC, "20 streams and 20 event clients at once, closed", [], after="close", connections=40),
    ]

    # -- slow dribbles (bounded)
    D = "dribble"
    C += [
        Case(D, "GET a byte per 25 ms", [("dribble", hs, 1, 0.025)], expect=exactly(200), requests=1),
        Case(D, "POST a byte per 20 ms", [("dribble", jpost(Z, zoom), 1, 0.02)], expect=exactly(200), requests=1),
        Case(D, "chunked POST a byte per 15 ms", [("dribble", chunked(Z, chunk(zoom) + b"0\r\n\r\n"), 1, 0.015)],
             expect=exactly(200), requests=1),
        Case(D, "headers forever, then close (bounded)", [("send", b"GET /api/session HTTP/1.1\r\nHost: x\r\n"),
                                                           ("dribble", b"X-A: b\r\n" * 40, 3, 0.02)], after="close"),
        Case(D, "body trickle then half-close", [("send", partial[:-len(zoom)]), ("dribble", zoom, 1, 0.05), ("shut",)],
             expect=not_ok, requests=1),
    ]
    return C


# ---------------------------------------------------------------- random cases

TOKENS = [b"\r\n", b"\n", b"\r", b"\x00", b"%", b"%00", b"%zz", b"%2e%2e/", b"../", b":", b" ", b"\t", b"\xff", b"\xc3",
          b"\r\n\r\n", b"chunked", b"Transfer-Encoding: chunked\r\n", b"Content-Length: ", b"-1", b"9" * 20, b"0",
          b"HTTP/1.1", b"HTTP/1.0", b"?", b"&", b"=", b"#", b"{", b"}", b'"', b"\\", b"[", b",", b"1e999", b"\x7f",
          b"Expect: 100-continue\r\n", b"Connection: close\r\n", b"Range: bytes=", b"GET / HTTP/1.1\r\n\r\n"]


def mutate(rng, data):
    data = bytearray(data)
    for _ in range(rng.choice([1, 1, 1, 2, 2, 3, 4, 6])):
        op = rng.randrange(9)
        n = len(data)
        if n == 0:
            data += rng.choice(TOKENS)
            continue
        i = rng.randrange(n)
        if op == 0:  # bit flip
            data[i] ^= 1 << rng.randrange(8)
        elif op == 1:  # random byte
            data[i] = rng.randrange(256)
        elif op == 2:  # insert random bytes
            data[i:i] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 8)))
        elif op == 3:  # insert a token
            data[i:i] = rng.choice(TOKENS)
        elif op == 4:  # delete a range
            del data[i:i + rng.randint(1, 16)]
        elif op == 5:  # truncate
            del data[i:]
        elif op == 6:  # duplicate a range
            j = min(n, i + rng.randint(1, 64))
            data[j:j] = data[i:j]
        elif op == 7:  # repeat a byte many times
            data[i:i] = bytes([data[i]]) * rng.choice([10, 100, 1000, 10000])
        else:  # swap case of a run
            j = min(n, i + rng.randint(1, 16))
            data[i:j] = bytes(data[i:j]).swapcase()
    return bytes(data)


def seed_request(rng):
    return rng.choice(SEEDS)


def random_case(rng, kind):
    name, data, status = seed_request(rng)
    if kind == "mutation":
        n = rng.choice([1, 1, 1, 1, 2, 3])
        datas = [mutate(rng, data)] + [mutate(rng, seed_request(rng)[1]) for _ in range(n - 1)]
        sent = b"".join(datas)
        return Case(kind, f"mutated {name}" + (f" + {n - 1} more" if n > 1 else ""),
                    [("send", sent)] + ([("shut",)] if rng.random() < 0.5 else []))
    if kind == "fragment":
        cuts = sorted(rng.sample(range(1, len(data)), min(len(data) - 1, rng.randint(1, 6))))
        steps = []
        prev = 0
        for c in cuts + [len(data)]:
            steps.append(("send", data[prev:c]))
            steps.append(("sleep", rng.choice([0, 0.001, 0.005, 0.02])))
            prev = c
        return Case(kind, f"{name} in {len(cuts) + 1} writes", steps, expect=exactly(*status), requests=1)
    if kind == "abort":
        cut = rng.randrange(len(data) + 1)
        how = rng.choice(["close", "reset", "shut", "shut", "shut-now"])
        if how.startswith("shut"):
            return Case(kind, f"{name} cut at {cut}, half-closed" + (" with the last bytes" if how == "shut-now" else ""),
                        [("send", data[:cut]), (how,)])
        return Case(kind, f"{name} cut at {cut}, {how}", [("send", data[:cut])] + ([("reset",)] if how == "reset" else []),
                    after="close")
    if kind == "headers":
        n = rng.choice([1, 10, 100, 500, 2000])
        size = rng.choice([1, 10, 100, 1000, 8000])
        alphabet = [b"a", b"\xff", b"\x00", b" ", b":", b"\t", b"\x01", b"%"]
        hdrs = [b"X-F%d: " % i + b"".join(rng.choice(alphabet) for _ in range(rng.randint(0, size))) for i in range(n)]
        return Case(kind, f"{n} headers up to {size} bytes on {name}",
                    [("send", data.replace(b"\r\n", b"\r\n" + b"\r\n".join(hdrs) + b"\r\n", 1)), ("shut",)])
    if kind == "chunked":
        body = json.dumps({"factor": round(rng.uniform(1, 3), 2)}).encode()
        out = b""
        i = 0
        while i < len(body):
            n = rng.randint(1, 8)
            piece = body[i:i + n]
            size = b"%x" % len(piece)
            r = rng.random()
            if r < 0.1:
                size = rng.choice([b"zz", b"-1", b"", b"ffffffffffffffffff", b"0x1", b" 1", b"1 ", b"%x" % (len(piece) + 1)])
            elif r < 0.2:
                size += b";" + rng.choice([b"a=b", b"\xff", b"a=\"b;c\"", b"=" * 100])
            out += size + b"\r\n" + piece + (b"\r\n" if rng.random() > 0.05 else b"")
            i += n
        out += rng.choice([b"0\r\n\r\n", b"0\r\n", b"0\r\nX: y\r\n\r\n", b"", b"00\r\n\r\n"])
        return Case(kind, "random chunked framing", [("send", chunked("/api/session/zoom", out)), ("shut",)])
    if kind == "path":
        alphabet = ["a", "/", ".", "..", "%", "%2e", "%2f", "%00", "%ff", "%c0%ae", "\\", "?", "&", "=", "#", ";",
                    "api", "session", "photos", "canary.txt", "index.html", "stream", "cameras", "rear"]
        path = "/" + "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 20)))
        method = rng.choice(["GET", "GET", "HEAD", "DELETE", "OPTIONS", "POST"])
        return Case(kind, f"{method} {path}", [("send", req(method, path, length=method == "POST")), ("shut",)], requests=1)
    if kind == "json":
        parts = [b"{", b"}", b"[", b"]", b'"factor"', b'"mode"', b'"point"', b":", b",", b"1", b"-0", b"1e999", b"null",
                 b"true", b'"\\ud800"', b'"\xff"', b"\x00", b" ", b'"continuous"', b'"x"', b"0.5", b"NaN", b'"\\u0000"']
        body = b"".join(rng.choice(parts) for _ in range(rng.randint(0, 30)))
        path = rng.choice(["zoom", "focus", "exposure", "white-balance", "orientation", "torch", "capture", "metadata"])
        if path == "torch":
            path = "orientation"  # no torch calls: keep the synthetic camera's light as it is
        return Case(kind, f"JSON on {path}", [("send", jpost("/api/session/" + path, body))],
                    expect=exactly(200, 400, 409, 422), requests=1)
    raise ValueError(kind)


RANDOM_KINDS = ["mutation"] * 10 + ["fragment"] * 2 + ["abort"] * 2 + ["headers", "chunked", "path", "json", "json"]


def make_case(cases, seed, cid):
    if cid < len(cases):
        return cases[cid]
    rng = random.Random(f"{seed}:{cid}")
    kind = RANDOM_KINDS[rng.randrange(len(RANDOM_KINDS))]
    return random_case(rng, kind)


# ---------------------------------------------------------------- running a case

class Failure(Exception):
    pass


class Conn:
    """A client socket with a receive buffer."""

    def __init__(self, port, timeout):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""
        self.closed = False  # the server closed (EOF or reset)
        self.write_failed = False

    def send(self, data):
        if self.write_failed:
            return
        try:
            self.sock.sendall(data)
        except (BrokenPipeError, ConnectionResetError, socket.timeout):
            # The server answered early and closed (a 413, a 414) or is not reading: fine.
            self.write_failed = True

    def shut(self):
        try:
            self.sock.shutdown(socket.SHUT_WR)
        except OSError:
            pass

    def fill(self, deadline):
        """Reads what is there until `deadline`; False on timeout."""
        if self.closed:
            return False
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        r, _, _ = select.select([self.sock], [], [], left)
        if not r:
            return False
        try:
            data = self.sock.recv(65536)
        except (ConnectionResetError, socket.timeout, OSError):
            data = b""
        if not data:
            self.closed = True
            return False
        self.buf += data
        return True

    def close(self, reset=False):
        if reset:
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.sock.close()


def read_head(conn, deadline):
    """(status, headers, head bytes) of the next answer, or None if the connection ends first
    (with nothing pending). Failure on garbage or a timeout."""
    while True:
        end = conn.buf.find(b"\r\n\r\n")
        if end >= 0:
            break
        if conn.buf and not conn.buf.startswith(b"HTTP/1."[:len(conn.buf)]):
            raise Failure(f"not an HTTP status line: {conn.buf[:200]!r}")
        if not conn.fill(deadline):
            if conn.closed:
                if conn.buf:
                    raise Failure(f"connection closed in the middle of an answer's head: {conn.buf[:300]!r}")
                return None
            raise TimeoutError
    head, conn.buf = conn.buf[:end + 4], conn.buf[end + 4:]
    m = STATUS_LINE.match(head)
    if not m:
        raise Failure(f"malformed status line: {head[:200]!r}")
    headers = {}
    for line in head[m.end():-4].split(b"\r\n"):
        if not line:
            continue
        if b":" not in line:
            raise Failure(f"malformed answer header line {line!r} in {head[:300]!r}")
        k, v = line.split(b":", 1)
        headers.setdefault(k.strip().lower().decode(errors="replace"), []).append(v.strip())
    return int(m.group(1)), headers, head


def read_body(conn, status, headers, is_head, maybe_head, timeout):
    """The body of a non-streamed answer (b"" for HEAD, 1xx, 204, 304)."""
    if is_head or status < 200 or status in (204, 304):
        return b""
    te = b",".join(headers.get("transfer-encoding", [])).lower()
    if b"chunked" in te:
        body = b""
        while True:
            deadline = time.monotonic() + timeout
            while b"\r\n" not in conn.buf:
                if not conn.fill(deadline):
                    raise Failure(f"chunked answer cut short (closed={conn.closed})")
            line, conn.buf = conn.buf.split(b"\r\n", 1)
            size = int(line.split(b";")[0], 16)
            while len(conn.buf) < size + 2:
                if not conn.fill(deadline):
                    raise Failure(f"chunked answer cut short (closed={conn.closed})")
            body += conn.buf[:size]
            conn.buf = conn.buf[size + 2:]
            if size == 0:
                # trailers: until an empty line (the 2 bytes taken were its CRLF when none)
                return body
    if "content-length" in headers:
        values = set(headers["content-length"])
        if len(values) != 1:
            raise Failure(f"answer with differing Content-Length headers {headers['content-length']}")
        n = int(values.pop())
        deadline = time.monotonic() + (min(timeout, 1.0) if maybe_head else timeout)
        while len(conn.buf) < n:
            if not conn.fill(deadline):
                if maybe_head and not conn.buf:
                    return b""  # most likely a HEAD answer (a mutated request's method is a guess)
                raise Failure(f"answer body cut short: {len(conn.buf)} of {n} bytes (closed={conn.closed})")
        body, conn.buf = conn.buf[:n], conn.buf[n:]
        return body
    # Neither: the body runs to the close.
    deadline = time.monotonic() + timeout
    while conn.fill(deadline):
        pass
    if not conn.closed:
        raise Failure("answer without Content-Length or chunking did not end with a close")
    body, conn.buf = conn.buf, b""
    return body


def is_stream(headers):
    ct = b",".join(headers.get("content-type", [])).lower()
    return b"multipart/x-mixed-replace" in ct or b"text/event-stream" in ct


def run_case(case, port, args, log, notes):
    """Runs one case; returns the statuses seen. Raises Failure."""
    if case.connections > 1:
        return run_many(case, port, args)
    statuses = []
    conn = Conn(port, args.timeout)
    answers_read = 0
    try:
        for step in case.steps:
            kind = step[0]
            if kind == "send":
                conn.send(step[1])
            elif kind == "sleep":
                time.sleep(step[1])
            elif kind == "shut":
                time.sleep(0.03)
                conn.shut()
            elif kind == "shut-now":
                conn.shut()
            elif kind == "dribble":
                data, piece, delay = step[1], step[2], step[3]
                for i in range(0, len(data), piece):
                    conn.send(data[i:i + piece])
                    time.sleep(delay)
            elif kind == "read-head":
                h = read_head(conn, time.monotonic() + args.timeout)
                if h is None:
                    raise Failure("closed instead of answering a stream request")
                statuses.append(h[0])
                answers_read += 1
                if h[0] == 500:
                    raise Failure(f"500: {h[2][:300]!r}")
                if not is_stream(h[1]):
                    raise Failure(f"expected a stream, got {h[2][:300]!r}")
            elif kind == "reset":
                conn.close(reset=True)
                return statuses
        if case.after == "close":
            conn.close()
            return statuses
        # Read the answers. When they stop coming (a request that is not complete, or a
        # mutation that broke one), half-close and demand a close or answers within the timeout.
        shut = any(s[0] in ("shut", "shut-now") for s in case.steps)
        idle = args.timeout if shut else args.idle
        while True:
            if case.guess is not None and answers_read >= case.guess and not shut:
                conn.shut()
                shut = True
                idle = args.timeout
            try:
                h = read_head(conn, time.monotonic() + idle)
            except TimeoutError:
                if shut:
                    raise Failure(f"no answer and no close within {args.timeout} s after half-closing "
                                  f"(answers so far {statuses})")
                conn.shut()
                shut = True
                idle = args.timeout
                continue
            if h is None:
                break
            status, headers, head = h
            if status == 500:
                raise Failure(f"500 Internal Server Error: {head[:400]!r}")
            if 100 <= status < 200:
                if status == 101:
                    raise Failure(f"101 Switching Protocols: {head[:300]!r}")
                continue
            statuses.append(status)
            is_head = case.heads[answers_read] if answers_read < len(case.heads) else False
            answers_read += 1
            if is_stream(headers) and not is_head:
                break
            # A mutated request's method is only guessed: be lenient with bodies that may be HEAD's.
            body = read_body(conn, status, headers, is_head, case.maybe_head and case.requests is None, args.timeout)
            if CANARY in body or b"root:x:0:0" in body:
                raise Failure(f"answer {status} revealed a file outside the public directory: {body[:200]!r}")
            if log:
                log(f"    answer {head.splitlines()[0]!r} {len(body)} bytes")
            if b"close" in b",".join(headers.get("connection", [])).lower():
                # The server closes after this answer: what else comes is no answer.
                deadline = time.monotonic() + args.timeout
                while conn.fill(deadline):
                    pass
                if not conn.closed:
                    raise Failure(f"no close within {args.timeout} s after an answer with Connection: close")
                if conn.buf:
                    notes.append(f"bytes after an answer that closes the connection (libmicrohttpd 0.9.75 writes "
                                 f"the head of its own error answers twice) | {status}: {conn.buf[:60]!r}")
                break
        return statuses
    finally:
        try:
            conn.close()
        except OSError:
            pass


def run_many(case, port, args):
    """Many stream viewers and event clients at once, each read to its head, then all closed."""
    conns = []
    statuses = []
    try:
        for i in range(case.connections):
            c = Conn(port, args.timeout)
            c.send(req("GET", "/stream" if i % 2 == 0 else "/api/events"))
            conns.append(c)
        for c in conns:
            h = read_head(c, time.monotonic() + args.timeout)
            if h is None:
                raise Failure("closed instead of streaming")
            statuses.append(h[0])
            if h[0] != 200 or not is_stream(h[1]):
                raise Failure(f"stream answered {h[2][:300]!r}")
        time.sleep(0.3)
        return statuses
    finally:
        for i, c in enumerate(conns):
            c.close(reset=i % 4 == 0)


# ---------------------------------------------------------------- checks

def get(port, path, timeout=5):
    """(status, body) of a GET on a fresh connection."""
    conn = Conn(port, timeout)
    try:
        conn.send(req("GET", path, ["Connection: close"]))
        h = read_head(conn, time.monotonic() + timeout)
        if h is None:
            return None, b""
        return h[0], read_body(conn, h[0], h[1], False, False, timeout)
    finally:
        conn.close()


def healthy(server, timeout=5):
    """None when the server is alive and GET /api/session answers 200, else the problem."""
    if not server.alive():
        return f"the server died (returncode {server.proc.returncode})"
    try:
        status, body = get(server.port, "/api/session", timeout)
    except (Failure, TimeoutError, OSError) as e:
        return f"GET /api/session failed: {type(e).__name__}: {e}"
    if status != 200:
        return f"GET /api/session answered {status}: {body[:200]!r}"
    return None


def warm_up(server):
    """A few normal requests, a /stream viewer and an SSE client, all closed."""
    port = server.port
    for path in ["/api/session", "/api/cameras", "/snapshot", "/index.html", "/healthz", "/metrics", "/api/photos"]:
        status, _ = get(port, path, 10)
        if status != 200:
            raise RuntimeError(f"warm-up GET {path} answered {status}")
    viewers = []
    for path in ["/stream", "/api/events", "/cameras/front/stream"]:
        c = Conn(port, 10)
        c.send(req("GET", path))
        h = read_head(c, time.monotonic() + 10)
        if not h or h[0] != 200:
            raise RuntimeError(f"warm-up GET {path} answered {h}")
        viewers.append(c)
    deadline = time.monotonic() + 1.5
    for c in viewers:
        while c.fill(deadline):
            if len(c.buf) > 10000:
                c.buf = b""
    for c in viewers:
        c.close()
    # a POST, a capture and a 413 so every code path has run once
    for data in [jpost("/api/session/zoom", {"factor": 1}), req("POST", "/api/session/capture", length=True),
                 jpost("/api/session/zoom", b" " * 70000)]:
        c = Conn(port, 10)
        c.send(data)
        h = read_head(c, time.monotonic() + 10)
        read_body(c, h[0], h[1], False, False, 10)
        c.close()


def resources(server):
    return server.fds(), server.threads()


def settle(server, baseline, seconds, quiet=1.0):
    """Polls until the descriptors and threads equal `baseline` (then returns them), at most
    `seconds`; returns the last sample otherwise."""
    deadline = time.monotonic() + seconds
    while True:
        now = resources(server)
        if now == baseline:
            return now
        if time.monotonic() > deadline:
            return now
        time.sleep(0.2)


def connections(server):
    """The server's TCP connections on its port (the listening socket aside), from /proc."""
    n = 0
    for line in Path(f"/proc/{server.pid}/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        if int(fields[1].split(":")[1], 16) == server.port and fields[3] != "0A":
            n += 1
    return n


def stable(server, seconds=10, quiet=1.5):
    """The descriptors and threads once the warm-up's connections are gone (a closed event
    client is noticed at its next heartbeat) and nothing changes for `quiet` seconds (at most
    `seconds` for each)."""
    deadline = time.monotonic() + seconds
    while connections(server) and time.monotonic() < deadline:
        time.sleep(0.2)
    deadline = time.monotonic() + seconds
    last, since = resources(server), time.monotonic()
    while time.monotonic() < deadline:
        time.sleep(0.2)
        now = resources(server)
        if now != last:
            last, since = now, time.monotonic()
        elif time.monotonic() - since >= quiet:
            break
    return last


def diff(before, after):
    b, a = collections.Counter(before), collections.Counter(after)
    gone = sorted((b - a).elements())
    new = sorted((a - b).elements())
    return f"only before: {gone}; only after: {new}"


# ---------------------------------------------------------------- main

def show(data, limit):
    if len(data) <= limit:
        return repr(data)
    return f"{data[:limit]!r}... ({len(data)} bytes in all; rerun with --only to reproduce exactly)"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--binary", default=str(ROOT / ".build/release/viewfinder"), help="the server (default: %(default)s)")
    ap.add_argument("--seed", type=int, default=15002, help="seed of the random cases (default %(default)s)")
    ap.add_argument("--cases", type=int, default=1000, help="cases in all, the catalog first (default %(default)s)")
    ap.add_argument("--seconds", type=float, default=150,
                    help="stop starting new cases after this long (default %(default)s; the default case count takes "
                         "about 80 s on a 2-core machine)")
    ap.add_argument("--only", type=int, action="append", help="run only this case id (repeatable)")
    ap.add_argument("--timeout", type=float, default=5.0, help="seconds an answer or a close may take (default %(default)s)")
    ap.add_argument("--idle", type=float, default=0.6,
                    help="seconds without an answer after which the fuzzer half-closes (default %(default)s)")
    ap.add_argument("--check-every", type=int, default=5, help="GET /api/session every N cases (default %(default)s)")
    ap.add_argument("--settle", type=float, default=10, help="seconds for descriptors and threads to settle (default %(default)s)")
    ap.add_argument("--log-level", default="warning", help="the server's --log-level (default %(default)s)")
    ap.add_argument("--keep", action="store_true", help="keep the temporary working directory")
    ap.add_argument("--list", action="store_true", help="list the catalog's cases and exit")
    ap.add_argument("-v", "--verbose", action="store_true", help="print every case")
    args = ap.parse_args()

    fixed = catalog()
    if args.list:
        for i, c in enumerate(fixed):
            print(f"{i:4} {c.category:12} {c.name}")
        return 0
    binary = Path(args.binary)
    if not binary.exists():
        sys.exit(f"{binary} missing: make release (or swift build -c release), or pass --binary")

    workdir = tempfile.mkdtemp(prefix="viewfinder-fuzz-")
    server = Server(binary, workdir, args.log_level)
    failures = []
    notes = collections.defaultdict(list)
    durations = collections.Counter()
    slowest = []
    per_category = collections.Counter()
    statuses_seen = collections.Counter()
    started = time.monotonic()
    ran = 0
    stopped_early = False

    def fail(cid, case, problem):
        failures.append((cid, case, problem))
        print(f"FAIL case {cid} [{case.category}] {case.name}: {problem}\n     sent {show(case.sent(), 600)}", flush=True)

    try:
        print(f"viewfinder {binary} on 127.0.0.1:{server.port} (pid {server.pid}), working directory {workdir}", flush=True)
        warm_up(server)
        baseline = stable(server, args.settle)
        print(f"after warm-up: {len(baseline[0])} descriptors, {len(baseline[1])} threads", flush=True)

        ids = args.only if args.only else range(args.cases)
        log = print if args.verbose else None
        for cid in ids:
            if time.monotonic() - started > args.seconds:
                stopped_early = True
                break
            case = make_case(fixed, args.seed, cid)
            ran += 1
            per_category[case.category] += 1
            if args.verbose:
                print(f"case {cid} [{case.category}] {case.name}: sent {show(case.sent(), 300)}", flush=True)
            t0 = time.monotonic()
            try:
                case_notes = []
                statuses = run_case(case, server.port, args, log, case_notes)
                for n in case_notes:
                    notes[(case.category, n.split(" | ")[0])].append(cid)
                for s in statuses:
                    statuses_seen[s] += 1
                problem = case.expect(statuses, True) if case.expect else None
                if problem and problem.startswith("NOTE: "):
                    notes[(case.category, f"{case.name}: {problem[6:]}")].append(cid)
                elif problem:
                    fail(cid, case, problem)
                elif args.verbose:
                    print(f"    ok {statuses} in {time.monotonic() - t0:.2f} s", flush=True)
            except Failure as e:
                fail(cid, case, str(e))
            except (ConnectionRefusedError, socket.timeout, OSError) as e:
                fail(cid, case, f"{type(e).__name__}: {e}")
            durations[case.category] += time.monotonic() - t0
            slowest.append((time.monotonic() - t0, cid, case.category, case.name))
            if not (workdir and (Path(workdir) / "canary.txt").exists() and (Path(workdir) / "photos/canary.txt").exists()):
                fail(cid, case, "a canary file was deleted")
                (Path(workdir) / "canary.txt").write_bytes(CANARY + b"\n")
                (Path(workdir) / "photos/canary.txt").write_bytes(CANARY + b"\n")
            if not server.alive():
                fail(cid, case, f"the server died (returncode {server.proc.returncode}); its stderr:\n{server.stderr_tail()}")
                break
            if (ran % args.check_every == 0) or args.only:
                problem = healthy(server)
                if problem:
                    fail(cid, case, f"after this case (or the {args.check_every - 1} before it): {problem}")
                    if not server.alive():
                        print(server.stderr_tail())
                        break
        fuzz_seconds = time.monotonic() - started

        if server.alive():
            problem = healthy(server)
            if problem:
                failures.append((None, None, f"at the end: {problem}"))
            end = settle(server, baseline, args.settle)
            if end[0] != baseline[0]:
                failures.append((None, None, f"open descriptors {len(baseline[0])} after warm-up, {len(end[0])} at the end "
                                             f"(after {args.settle} s): {diff(baseline[0], end[0])}"))
            # libdispatch's worker threads (com.apple.root.*-qos*) come and go with the load on
            # their own idle timeout: a difference there is a note unless it looks like a runaway.
            own = lambda names: [n for n in names if "qos" not in n]
            pool = lambda names: [n for n in names if "qos" in n]
            if own(end[1]) != own(baseline[1]):
                failures.append((None, None, f"threads {len(baseline[1])} after warm-up, {len(end[1])} at the end: "
                                             f"{diff(baseline[1], end[1])}"))
            elif len(pool(end[1])) > len(pool(baseline[1])) + 4:
                failures.append((None, None, f"libdispatch worker threads {len(pool(baseline[1]))} after warm-up, "
                                             f"{len(pool(end[1]))} at the end: {diff(baseline[1], end[1])}"))
            elif pool(end[1]) != pool(baseline[1]):
                notes[("end", f"libdispatch worker threads {len(pool(baseline[1]))} after warm-up, {len(pool(end[1]))} "
                              f"at the end (its pool's own idle timeout): {diff(baseline[1], end[1])}")].append("-")
            print(f"at the end: {len(end[0])} descriptors, {len(end[1])} threads", flush=True)
        else:
            failures.append((None, None, f"the server is dead (returncode {server.proc.returncode})"))
    finally:
        server.stop()
        log_tail = server.stderr_tail(15)
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)

    print()
    print(f"{ran} cases in {fuzz_seconds:.1f} s (seed {args.seed}; catalog {len(fixed)} cases, ids 0-{len(fixed) - 1})"
          + (" — stopped at --seconds" if stopped_early else ""))
    print("cases per category (seconds): " + ", ".join(f"{k} {v} ({durations[k]:.0f} s)" for k, v in sorted(per_category.items())))
    print("slowest: " + "; ".join(f"{cid} [{cat}] {name[:40]} {t:.1f} s" for t, cid, cat, name in sorted(slowest, reverse=True)[:5]))
    print("statuses seen: " + ", ".join(f"{k}×{v}" for k, v in sorted(statuses_seen.items())))
    if notes:
        print(f"\nnotes (not failures: libmicrohttpd's own behaviour):")
        for (category, note), cids in sorted(notes.items()):
            more = f" and {len(cids) - 5} more" if len(cids) > 5 else ""
            print(f"  - [{category}] {note} — case {', '.join(map(str, cids[:5]))}{more}")
    if failures:
        print(f"\n{len(failures)} FAILURE(S):")
        for cid, case, problem in failures:
            if case is None:
                print(f"  - {problem}")
            else:
                print(f"  - case {cid} [{case.category}] {case.name}: {problem}\n    sent {show(case.sent(), 2000)}\n"
                      f"    rerun: python3 Tests/fuzz/raw_http.py --seed {args.seed} --only {cid} -v")
        if log_tail:
            print("\nthe server's stderr (tail):\n" + log_tail)
        return 1
    print("no failures")
    return 0


if __name__ == "__main__":
    sys.exit(main())
