#!/usr/bin/env python3
"""Runs the installed viewfinder as close to its unit's sandbox as a machine without systemd
as PID 1 allows, and drives it: /healthz, /snapshot, a stored capture, the stream, SIGTERM.

- MemoryDenyWriteExecute=yes: the kernel's PR_SET_MDWE (Linux 6.3+) refuses the same
  thing (writable+executable or made-executable-later memory) and is inherited by the child.
- SystemCallFilter=@system-service ~@privileged: strace lists every system call
  the run makes; each must be one the filter allows (systemd-analyze syscall-filter).

Usage: restricted_run.py BINARY WORKDIR
"""
import ctypes, os, re, signal, subprocess, sys, time, urllib.request

binary, work = sys.argv[1], sys.argv[2]
root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def syscall_set(group, seen=None):
    seen = seen if seen is not None else set()
    out = subprocess.run(["systemd-analyze", "syscall-filter", group], capture_output=True, text=True, check=True).stdout
    names = set()
    for line in out.splitlines()[1:]:
        word = line.strip()
        if not word or word.startswith("#"):
            continue
        if word.startswith("@"):
            if word not in seen:
                seen.add(word)
                names |= syscall_set(word, seen)
        else:
            names.add(word)
    return names


allowed = syscall_set("@system-service") - syscall_set("@privileged")

PR_SET_MDWE, PR_MDWE_REFUSE_EXEC_GAIN = 65, 1
libc = ctypes.CDLL(None, use_errno=True)
mdwe = libc.prctl(PR_SET_MDWE, PR_MDWE_REFUSE_EXEC_GAIN, 0, 0, 0) == 0
print("PR_SET_MDWE:", "on" if mdwe else "unavailable (kernel < 6.3): not checked")

summary = os.path.join(work, "strace.txt")
os.makedirs(os.path.join(work, "run"), exist_ok=True)
p = subprocess.Popen(["strace", "-f", "-qq", "-c", "-o", summary, "--", binary, "--port", "0",
                      "--cameras", "synthetic", "--preset", "352x288", "--log-level", "warning",
                      "--public-directory", os.path.join(root, "Public")],
                     cwd=os.path.join(work, "run"), stdout=subprocess.PIPE)
try:
    line = p.stdout.readline().decode()
    port = int(re.search(r":(\d+)/", line).group(1))
    base = f"http://127.0.0.1:{port}"
    assert urllib.request.urlopen(base + "/healthz", timeout=10).status == 200
    jpeg = urllib.request.urlopen(base + "/snapshot", timeout=10).read()
    assert jpeg[:2] == b"\xff\xd8", "snapshot is not a JPEG"
    req = urllib.request.Request(base + "/api/session/capture?store=true", method="POST", data=b"")
    assert urllib.request.urlopen(req, timeout=20).status == 201
    with urllib.request.urlopen(base + "/stream", timeout=10) as s:
        assert b"\xff\xd8" in s.read(65536)
    print(f"served on port {port}: healthz, snapshot ({len(jpeg)} bytes), stored capture, stream")
finally:
    # SIGTERM to viewfinder itself (strace's child), as systemd would send it.
    children = open(f"/proc/{p.pid}/task/{p.pid}/children").read().split()
    os.kill(int(children[0]) if children else p.pid, signal.SIGTERM)
    status = p.wait(timeout=30)
assert status == 0, f"exit status {status}"

used = set()
for row in open(summary):
    cols = row.split()
    if len(cols) >= 5 and re.fullmatch(r"[\d.]+", cols[0]) and cols[-1] != "total":
        used.add(cols[-1])
outside = sorted(used - allowed)
print(f"{len(used)} distinct system calls, all within the unit's SystemCallFilter" if not outside
      else f"outside SystemCallFilter: {outside}")
sys.exit(1 if outside or not used else 0)
