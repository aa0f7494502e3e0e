#!/usr/bin/env python3
"""Where the cycles go on the frame path at 1280x720, 30 fps, with 100 viewers (issue 14): a
`perf` profile of the release server, summarised by bucket, symbol, library and thread.

One run: viewfinder (`--cameras synthetic --preset 1280x720 --fps 30`, a temporary config with
`server.maxConnectionsPerAddress` 1000 so that 100 viewers from 127.0.0.1 are let in,
`stream.quality` 80) is started and waited for until its session runs at 1280x720; then
bench/out/viewers (C, one epoll loop) opens VIEWERS connections to `/stream` (for SECONDS + 3 s,
so that none leaves before perf has stopped); after the client's 1 s warm-up, `perf record -B -e
EVENT -F FREQ -g -p PID -- sleep SECONDS` samples the server (every thread) while they watch
(-B: no build-id scan at the end; the report is made at once, from the same binaries). EVENT is `cycles` where the CPU's counters are
available and `cpu-clock` (a timer, the usual case in a VM) where they are not. Call graphs
are frame pointers (`-g`): Swift code keeps them, so Swift stacks unwind to the thread's
start; libc, libturbojpeg and libmicrohttpd are built without them, so a stack stops at the
first frame in one of those (BENCH_PROFILE_CALL_GRAPH=dwarf records DWARF stacks instead:
deeper, much larger files). Over the same window: each thread's utime+stime
(/proc/PID/task/TID/stat), the frames encoded (`viewfinder_frames_encoded_total`), and the
viewers' own count of parts (fps per viewer, still connected).

The summary reads every sample with `perf script` (its leaf frame and its call chain) and
puts it into one bucket: the first frame, from the leaf up, that belongs to one (see
classify_frame). A leaf in shared code (memcpy/memmove, the Swift standard library's generic code, the
scheduler) is thus charged to the nearest caller that says what the work was: memmove under
the HTTP stream reader is fan-out, under the synthetic camera it is rendering. Swift symbols
are demangled with `swift demangle --simplified`. The per-library split is `perf report
--stdio --no-children --sort dso`, as perf gives it. The client is a separate process and is
not in the profile.

`bench/run` (make bench) calls it last; `python3 bench/profile.py` runs only this and
rewrites its section of bench/RESULTS.md. BENCH_PROFILE_SECONDS (10), BENCH_PROFILE_VIEWERS
(100), BENCH_PROFILE_FREQ (999 Hz), BENCH_PROFILE_EVENT and BENCH_PROFILE_CALL_GRAPH (fp) change
the run; the section's heading names the number of viewers. The perf data is kept in bench/out/profile.data
(`perf report -i bench/out/profile.data`).
"""
import collections
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench  # noqa: E402  (bench/bench.py: build_info)
from server import (ROOT, many_viewers_config, VIEWERS, cpu_seconds, get, publish, require_binaries, running_session,  # noqa: E402
                    start_server, stop_server, timed, written_by, encoded)  # (bench/server.py)

SECONDS = float(os.environ.get("BENCH_PROFILE_SECONDS", "10"))
N_VIEWERS = int(os.environ.get("BENCH_PROFILE_VIEWERS", "100"))
FREQ = int(os.environ.get("BENCH_PROFILE_FREQ", "999"))
CALL_GRAPH = os.environ.get("BENCH_PROFILE_CALL_GRAPH", "fp")
TOP = 20
MARGIN = 3  # s the viewers stay beyond the record: perf's start and stop, so none leaves inside the window
SIZE, FPS, QUALITY = "1280x720", 30, 80
DATA = ROOT / "bench/out/profile.data"
TICK = os.sysconf("SC_CLK_TCK")
HEADING = f"## Profile: where the cycles go at 1280x720, 30 fps, {N_VIEWERS} viewers"

JPEG, GATHER, RENDER, HTTP, RUNTIME, OTHER = (
    "JPEG compression", "de-interleave / gather", "synthetic scene rendering", "HTTP fan-out",
    "Swift runtime, locks, allocation", "other")
BUCKETS = (JPEG, GATHER, RENDER, HTTP, RUNTIME, OTHER)
WHAT = {
    JPEG: "libturbojpeg, and the JPEG module's Swift code around it (not the gather)",
    GATHER: "CPixels `vf_split_*` (YUYV → planes) and the JPEG module's gather functions (`PixelGather`, "
            "`*Gather*`)",
    RENDER: "the Capture module's synthetic camera: `YUYVCanvas` (tone, blur, drawing), `SyntheticScene`, "
            "`SyntheticCamera`, sensor model, font (not the capture loop that calls them)",
    HTTP: "libmicrohttpd, the HTTPServer module (stream reader), `MJPEGStream`, and the kernel's network "
          "path (send/recv, TCP/IP, loopback, epoll/poll)",
    RUNTIME: "libswiftCore (retain/release, exclusivity, generic code not inlined), `__tls_get_addr`, libc "
             "malloc/free and locks (mutex, semaphores), libdispatch as a leaf, the kernel's futex",
    OTHER: "anything else: no frame above the leaf belongs to a bucket",
}

# Kernel functions that are the network path (the fan-out's writes, the loopback's receive side
# run in the sender's context, epoll/poll).
KERNEL_NET = re.compile(r"^(__)?(x64_sys_)?(tcp|inet|ip|ipv4|sock|sk|skb|net|netif|napi|dev_queue|dev_hard|"
                        r"loopback|sys_sendto|sys_sendmsg|sys_recvfrom|sys_recvmsg|sys_accept|sys_poll|sys_ppoll|"
                        r"sys_select|sys_pselect|do_sys_poll|do_select|ep_|epoll|do_epoll|lock_sock|release_sock|"
                        r"__skb|kfree_skb|consume_skb|alloc_skb|validate_xmit|rps_|process_backlog|ip_)")
LIBC_ALLOC = re.compile(r"^(__libc_)?(malloc|free|cfree|calloc|realloc|_int_malloc|_int_free|_int_realloc|"
                        r"malloc_consolidate|unlink_chunk|tcache_\w+|__malloc_\w+|__free_\w+|_int_free_\w+|"
                        r"posix_memalign|aligned_alloc|memalign|_mid_memalign|malloc_usable_size)")
LIBC_LOCK = re.compile(r"^(__)?(pthread_mutex|pthread_cond|pthread_rwlock|pthread_spin|pthread_once|lll_|"
                       r"__lll_|sem_|futex|___pthread_mutex|__GI___pthread|__new_sem|do_futex)")


def swift_module(mangled):
    """The module of a mangled Swift symbol ($s7Capture...: "Capture"), None if not one of ours."""
    m = re.match(r"^\$s(\d+)", mangled)
    if not m:
        return None
    n = int(m.group(1))
    return mangled[m.end():m.end() + n]


# ---------------------------------------------------------------- samples

Frame = collections.namedtuple("Frame", "ip sym dso")


def parse_script(text):
    """`perf script -F comm,tid,period,ip,sym,dso`: [(comm, tid, period, [Frame leaf first])]."""
    samples = []
    head = re.compile(r"^(\S.*?)\s+(\d+)\s+(\d+)\s*$")
    frame = re.compile(r"^\s+([0-9a-f]+)\s+(.*)\s+\((.*)\)\s*$")
    cur = None
    for line in text.splitlines():
        if not line.strip():
            continue
        h = head.match(line)
        if h and not line[0].isspace():
            cur = (h.group(1).strip(), int(h.group(2)), int(h.group(3)), [])
            samples.append(cur)
            continue
        f = frame.match(line)
        if f and cur is not None:
            cur[3].append(Frame(int(f.group(1), 16), f.group(2).strip(), f.group(3)))
    return samples


def demangle(names):
    """{mangled Swift name: simplified demangled name} for the Swift names among `names`."""
    swift = sorted(n for n in names if n.startswith(("$s", "_T", "$S")))
    if not swift or not shutil.which("swift"):
        return {}
    try:
        out = subprocess.run(["swift", "demangle", "--simplified", "--compact"], input="\n".join(swift) + "\n",
                             capture_output=True, text=True, timeout=120).stdout.splitlines()
    except (OSError, subprocess.TimeoutExpired):
        return {}
    return dict(zip(swift, out)) if len(out) == len(swift) else {}


def lib(dso):
    """A library's short name: libturbojpeg.so.0.2.0 → libturbojpeg, [kernel.kallsyms] → kernel."""
    if dso.startswith("[kernel") or dso.endswith(".ko"):
        return "kernel"
    base = os.path.basename(dso)
    return re.sub(r"\.so(\.[\d.]+)?$", "", base) or dso


def is_kernel(f):
    """A kernel frame, symbolised or not (by its address: the kernel's half of the address space)."""
    return lib(f.dso) == "kernel" or f.ip >= 0xffff800000000000


def classify_frame(f, names, leaf):
    """The bucket one frame belongs to, or None when it says nothing (shared code: walk up)."""
    sym, name, l = f.sym, names.get(f.sym, f.sym), lib(f.dso)
    if l.startswith(("libturbojpeg", "libjpeg")):
        return JPEG
    if sym.startswith("vf_split"):
        return GATHER
    if l.startswith(("libmicrohttpd", "libgnutls")):
        return HTTP
    if l == "kernel":
        if "futex" in sym:
            return RUNTIME
        if KERNEL_NET.match(sym):
            return HTTP
        return None  # scheduler, page faults, timers, syscall entry: charged to what called it
    module = swift_module(sym)
    if module == "JPEG":
        return GATHER if "gather" in name.lower() else JPEG
    if module == "Capture":
        if "SteppingThread" in name or "PacedCaptureThread" in name:
            return None  # the capture thread's loop: calls render, encode and publish alike
        return RENDER
    if module == "HTTPServer" or (module == "ViewfinderApp" and "MJPEGStream" in name):
        return HTTP
    if l.startswith(("libswiftCore", "libswift_", "libswiftSynchronization", "ld-linux")):
        return RUNTIME
    if l.startswith("libc"):
        if LIBC_ALLOC.match(sym) or LIBC_LOCK.match(sym):
            return RUNTIME
        return None  # memcpy, memmove, send, …: charged to the caller
    if l.startswith("libdispatch"):
        return RUNTIME if leaf else None
    return None


def classify(frames, names):
    for i, f in enumerate(frames):
        b = classify_frame(f, names, i == 0)
        if b:
            return b
    return OTHER


def summarise(samples, names):
    """Buckets, leaf symbols and threads, weighted by period."""
    total = sum(s[2] for s in samples) or 1
    buckets = collections.Counter()
    symbols = collections.defaultdict(collections.Counter)  # (lib, symbol) → bucket → period
    threads = collections.defaultdict(collections.Counter)  # tid → bucket → period
    comms, roles = {}, collections.defaultdict(collections.Counter)
    other_leaves = collections.Counter()
    kernel = kernel_named = 0
    for comm, tid, period, frames in samples:
        b = classify(frames, names)
        buckets[b] += period
        threads[tid][b] += period
        comms[tid] = comm
        leaf = frames[0] if frames else Frame(0, "[no frames]", "[unknown]")
        key = (lib(leaf.dso), names.get(leaf.sym, leaf.sym))
        symbols[key][b] += period
        if b == OTHER:
            other_leaves[key] += period
        if frames and is_kernel(leaf):
            kernel += period
            kernel_named += period if leaf.sym != "[unknown]" else 0
        demangled = [names.get(f.sym, f.sym) for f in frames]
        if any("SteppingThread" in n or "PacedCaptureThread" in n for n in demangled):
            roles[tid]["capture"] += period
        if any(lib(f.dso).startswith("libmicrohttpd") for f in frames) or comm.startswith("MHD"):
            roles[tid]["http"] += period
        if any(lib(f.dso).startswith("libdispatch") for f in frames):
            roles[tid]["dispatch"] += period
    return dict(total=total, buckets=buckets, symbols=symbols, threads=threads, comms=comms, roles=roles,
                other=other_leaves, kernel=kernel, kernelNamed=kernel_named)


def top_symbols(symbols, total, n=TOP):
    """The `n` leaf symbols with the most samples; a library's frames without a symbol are one row."""
    merged = collections.defaultdict(collections.Counter)
    for (l, sym), by in symbols.items():
        if sym == "[unknown]" or re.fullmatch(r"0x[0-9a-f]+", sym):
            sym = "(addresses without symbols)"
        merged[(l, sym)].update(by)
    rows = sorted(merged.items(), key=lambda kv: -sum(kv[1].values()))[:n]
    return [dict(lib=l, sym=sym, share=sum(by.values()) / total * 100,
                 buckets=[(b, p / sum(by.values()) * 100) for b, p in by.most_common()]) for (l, sym), by in rows]


# ---------------------------------------------------------------- perf

def event():
    """`cycles` when the CPU's counters work here, else `cpu-clock` (and why)."""
    forced = os.environ.get("BENCH_PROFILE_EVENT")
    if forced:
        return forced, "set by BENCH_PROFILE_EVENT"
    r = subprocess.run(["perf", "stat", "-x,", "-e", "cycles", "--", "true"], capture_output=True, text=True)
    if r.returncode == 0 and "<not supported>" not in r.stderr and "<not counted>" not in r.stderr:
        return "cycles", "hardware counters available"
    return "cpu-clock", "hardware `cycles` not supported here (a VM), so timer sampling"


def perf_record(pid, ev, seconds):
    """perf record on every thread of `pid` for `seconds`: (command, its stderr)."""
    DATA.unlink(missing_ok=True)
    cg = ["-g"] if CALL_GRAPH == "fp" else ["--call-graph", CALL_GRAPH]
    cmd = ["perf", "record", "-B", "-e", ev, "-F", str(FREQ), *cg, "-o", str(DATA), "-p", str(pid), "--", "sleep",
           f"{seconds:g}"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=seconds + 120)
    if r.returncode != 0 or not DATA.exists():
        raise RuntimeError(f"perf record failed ({r.returncode}): {r.stderr.strip()[-500:]}")
    return cmd, r.stderr


def perf_report_dso():
    """[(library, share %)] from `perf report --sort dso`."""
    out = subprocess.run(["perf", "report", "-i", str(DATA), "--stdio", "--no-children", "--sort", "dso", "-g", "none",
                          "--percent-limit", "0"], capture_output=True, text=True, timeout=600).stdout
    rows = collections.Counter()
    for m in re.finditer(r"^\s+([\d.]+)%\s+(\S+)\s*$", out, re.M):
        rows[lib(m.group(2))] += float(m.group(1))
    return rows.most_common()


def perf_header():
    """(samples, lost samples) from perf report's header."""
    out = subprocess.run(["perf", "report", "-i", str(DATA), "--stdio", "--no-children", "--sort", "comm", "-g", "none"],
                         capture_output=True, text=True, timeout=600).stdout
    n = re.search(r"^# Samples: (\S+)", out, re.M)
    lost = re.search(r"^# Total Lost Samples: (\d+)", out, re.M)
    count = n.group(1) if n else "?"
    if count[-1:] in "KM" and count[:-1].replace(".", "").isdigit():
        count = str(round(float(count[:-1]) * (1000 if count[-1] == "K" else 1000000)))
    return count, int(lost.group(1)) if lost else 0


def perf_script():
    return subprocess.run(["perf", "script", "-i", str(DATA), "-F", "comm,tid,period,ip,sym,dso"],
                          capture_output=True, text=True, timeout=600).stdout


# ---------------------------------------------------------------- the server's threads

def task_cpu(pid):
    """{tid: (comm, CPU seconds utime+stime)} for every thread of `pid`."""
    out = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            comm = (task / "comm").read_text().strip()
            fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
            out[int(task.name)] = (comm, (int(fields[11]) + int(fields[12])) / TICK)
        except (OSError, ValueError, IndexError):
            pass
    return out


def config(work):
    return many_viewers_config(work, "profile.json", QUALITY)


# ---------------------------------------------------------------- the run

def bench_profile():
    ev, why = event()
    work = Path(tempfile.mkdtemp(prefix="vf-bench-profile-"))
    try:
        p, port, _ = start_server(["--config", str(config(work)), "--cameras", "synthetic", "--preset", SIZE,
                                   "--fps", str(FPS)], work, lambda port: running_session(port, SIZE))
        try:
            time.sleep(1.0)  # the synthetic camera's exposure settles
            client = subprocess.Popen([str(VIEWERS), str(port), str(N_VIEWERS), f"{SECONDS + MARGIN:g}"],
                                      stdout=subprocess.PIPE, text=True)
            try:
                time.sleep(1.2)  # the client's warm-up second: every viewer connected and streaming
                e0, k0, c0, t0 = encoded(port), task_cpu(p.pid), cpu_seconds(p.pid), time.monotonic()
                cmd, _ = perf_record(p.pid, ev, SECONDS)
                e1, k1, c1, t1 = encoded(port), task_cpu(p.pid), cpu_seconds(p.pid), time.monotonic()
                viewers = json.loads(client.communicate(timeout=SECONDS + 60)[0])
            finally:
                if client.poll() is None:
                    client.kill()
                    client.wait(10)
        finally:
            stop_server(p)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    wall = t1 - t0
    samples = parse_script(perf_script())
    names = demangle({f.sym for s in samples for f in s[3]})
    summary = summarise(samples, names)
    count, lost = perf_header()
    task = {tid: (k1[tid][0], (k1[tid][1] - k0.get(tid, (None, 0.0))[1]) / wall * 100) for tid in k1}
    return dict(event=ev, why=why, cmd=cmd, pid=p.pid, wall=wall, samples=count, lost=lost, parsed=len(samples),
                cpu=(c1 - c0) / wall * 100, encodedFps=(e1 - e0) / wall, viewers=viewers, summary=summary,
                dso=perf_report_dso(), task=task, swiftDemangled=bool(names))


def markdown(r, started, load, took):
    s = r["summary"]
    total = s["total"]
    core = lambda period: period / 1e9 / SECONDS * 100 if r["event"] == "cpu-clock" else None  # noqa: E731
    sampled_cpu = core(total)
    pct = lambda period: period / total * 100  # noqa: E731
    v = r["viewers"]
    cmd = " ".join("bench/out/profile.data" if a == str(DATA) else "PID" if a == str(r["pid"]) else a for a in r["cmd"])
    kernel_share = pct(s["kernel"])
    kernel_note = ("none of its samples had their leaf in the kernel" if not s["kernel"] else
                   f"{kernel_share:.1f} % of the samples have their leaf in the kernel; "
                   + ("their symbols are visible (root, `kptr_restrict` "
                      f"{Path('/proc/sys/kernel/kptr_restrict').read_text().strip()})"
                      if s["kernelNamed"] >= 0.9 * s["kernel"] else
                      f"only {pct(s['kernelNamed']) / kernel_share * 100:.0f} % of those have a symbol "
                      "(kernel addresses hidden: `kptr_restrict` or not root), the rest are charged by their "
                      "user-space caller or fall under other"))
    lines = [
        HEADING,
        "",
        written_by("profile.py", started, load, took),
        "",
        f"Release build of `viewfinder` ({bench.build_info()}). Command: `viewfinder --config FILE --cameras "
        f"synthetic --preset {SIZE} --fps {FPS}` (FILE: `\"server\": {{\"maxConnectionsPerAddress\": 1000}}`, "
        f"`\"stream\": {{\"quality\": {QUALITY}}}`) with `bench/out/viewers PORT {N_VIEWERS} {SECONDS + MARGIN:g}` "
        f"({N_VIEWERS} MJPEG viewers on one epoll loop, a separate process, not profiled); after the viewers' "
        f"1 s warm-up: `{cmd}` (event `{r['event']}`: {r['why']}; call graphs by "
        f"{'frame pointers' if CALL_GRAPH == 'fp' else CALL_GRAPH}).",
        "",
        f"Duration {SECONDS:g} s; {r['samples']} samples ({r['lost']} lost)"
        + (f", {sampled_cpu:.1f} % of one core sampled" if sampled_cpu is not None else "")
        + f"; the server's utime+stime over the window around it ({r['wall']:.1f} s, perf's start and stop "
        f"included): {r['cpu']:.1f} % of one core. Frames encoded: "
        f"{r['encodedFps']:.1f} per second. Viewers: {v['open']}/{v['viewers']} still connected, "
        f"{v['fpsMin']:.2f} / {v['fpsMedian']:.2f} fps per viewer (min / median). Kernel: {kernel_note}. Swift "
        "symbols " + ("demangled with `swift demangle --simplified`" if r["swiftDemangled"] else "left mangled "
                      "(`swift demangle` unavailable)") + "." + stripped_note(s),
        "",
        "**Where the cycles go.** Each sample is charged to the first frame, from the leaf up, that belongs to a "
        "bucket: a leaf in shared code (libc `memmove`/`memcpy`, the Swift standard library's generic code, the "
        "scheduler, page faults) goes to the nearest caller that does. Stacks stop at the first frame in libc, "
        "libturbojpeg or libmicrohttpd (no frame pointers there), so such a leaf with no attributable caller "
        "falls under other. "
        + ("% of one core: the bucket's samples × the sampling period over the duration."
           if sampled_cpu is not None else "% of one core: the bucket's share of the server's utime+stime."),
        "",
        "| bucket | share of samples % | % of one core | CPU ms per encoded frame | what is in it |",
        "|---|---|---|---|---|",
    ]
    cpu_of = (lambda period: core(period)) if sampled_cpu is not None else (lambda period: pct(period) * r["cpu"] / 100)
    for b in BUCKETS:
        period = s["buckets"].get(b, 0)
        per_frame = cpu_of(period) / 100 / r["encodedFps"] * 1000 if r["encodedFps"] else float("nan")
        lines.append(f"| {b} | {pct(period):.1f} | {cpu_of(period):.1f} | {per_frame:.2f} | {WHAT[b]} |")
    other = s["other"].most_common(3)
    if other:
        lines += ["", "Largest leaves under other: " + "; ".join(
            f"`{sym}` ({l}, {pct(p):.1f} %)" for (l, sym), p in other) + "."]
    lines += [
        "",
        f"**Top {TOP} leaf symbols** (`--no-children`: self time), with the buckets their samples went to "
        "(a shared leaf splits by caller):",
        "",
        "| # | share % | library | symbol | bucket(s) |",
        "|---|---|---|---|---|",
    ]
    for i, t in enumerate(top_symbols(s["symbols"], total), 1):
        sym = t["sym"].replace("|", "\\|")
        if len(sym) > 110:
            sym = sym[:107] + "…"
        split = ", ".join(f"{b} {p:.0f} %" if len(t["buckets"]) > 1 else b for b, p in t["buckets"])
        lines.append(f"| {i} | {t['share']:.1f} | {t['lib']} | `{sym}` | {split} |")
    lines += [
        "",
        "**By library** (`perf report --stdio --no-children --sort dso`):",
        "",
        "| library | share % |",
        "|---|---|",
    ]
    lines += [f"| {name} | {share:.1f} |" for name, share in r["dso"] if share >= 0.1]
    lines += [
        "",
        "**By thread**: CPU from `/proc/PID/task/TID/stat` (utime+stime over the window, % of one core); samples "
        "and buckets from the profile. Role: capture is the thread with the most samples under `SteppingThread` "
        "(render, encode, publish: its libturbojpeg samples have no caller, the stacks stop there), HTTP the "
        "one with the most under libmicrohttpd; dispatch worker, a thread whose samples are mostly in libdispatch.",
        "",
        "| thread (comm) | role | CPU % of one core | share of samples % | its buckets |",
        "|---|---|---|---|---|",
    ]
    rows = []
    roles = {}
    for key, label in (("capture", "capture"), ("http", "HTTP (MHD)")):
        tid = max(s["roles"], key=lambda t: s["roles"][t][key], default=None)
        if tid is not None and s["roles"][tid][key] and tid not in roles:
            roles[tid] = label
    for tid, by in s["threads"].items():
        t_total = sum(by.values())
        role = roles.get(tid) or ("dispatch worker" if s["roles"][tid]["dispatch"] >= t_total / 2 else "—")
        comm = r["task"].get(tid, (s["comms"][tid], None))[0]
        cpu = r["task"].get(tid, (None, None))[1]
        rows.append((t_total, tid, comm, role, cpu, by))
    seen = {tid for _, tid, *_ in rows}
    for _, tid, comm, role, cpu, by in sorted(rows, reverse=True):
        top = ", ".join(f"{b} {p / sum(by.values()) * 100:.0f} %" for b, p in by.most_common(3))
        lines.append(f"| {tid} ({comm}) | {role} | {'—' if cpu is None else f'{cpu:.1f}'} | "
                     f"{pct(sum(by.values())):.1f} | {top} |")
    quiet = [(tid, c) for tid, c in r["task"].items() if tid not in seen]
    if quiet:
        lines.append(f"| {len(quiet)} other threads ({', '.join(sorted({c for _, (c, _) in quiet}))}) | — | "
                     f"{sum(c for _, (_, c) in quiet):.1f} | 0 | no samples |")
    lines += ["", reading(r, s, pct, cpu_of), ""]
    return lines


def reading(r, s, pct, cpu_of):
    """2–4 sentences from the figures."""
    b = s["buckets"]
    fps, open_ = r["viewers"]["fpsMedian"], r["viewers"]["open"]
    per_frame = lambda period: cpu_of(period) / 100 / r["encodedFps"] * 1000 if r["encodedFps"] else float("nan")  # noqa: E731
    ranked = [x for x in sorted(BUCKETS, key=lambda x: -b.get(x, 0)) if b.get(x, 0)]
    first, second = ranked[0], ranked[1] if len(ranked) > 1 else None
    encode = b.get(JPEG, 0) + b.get(GATHER, 0)
    out = [f"The largest bucket is {first} ({pct(b[first]):.0f} % of the samples)"
           + (f", then {second} ({pct(b[second]):.0f} %)" if second else "")
           + f"; the encode as a whole (compression + gather) is {pct(encode):.0f} %, {per_frame(encode):.2f} ms "
             f"of CPU per encoded frame"
           + (f", and {r['encodedFps']:.1f} frames were encoded per second for {open_} viewers at {fps:.1f} fps "
              "each: one encode per frame, not per viewer." if open_ > 1 and r["encodedFps"] <= fps * 1.1 else ".")]
    parts = fps * open_
    if parts and b.get(HTTP):
        out.append(f"Fan-out to {open_} viewers is {pct(b[HTTP]):.0f} % ({cpu_of(b[HTTP]):.1f} % of one core), "
                   f"about {cpu_of(b[HTTP]) / 100 / parts * 1e6:.0f} µs of CPU per part sent.")
    if b.get(RENDER):
        out.append(f"Rendering the synthetic scene is {pct(b[RENDER]):.0f} % ({per_frame(b[RENDER]):.2f} ms per "
                   "frame), a cost of the synthetic camera that a V4L2 camera's frames do not carry.")
    out.append(f"Swift runtime, locks and allocation are {pct(b.get(RUNTIME, 0)):.0f} %, other "
               f"{pct(b.get(OTHER, 0)):.0f} %.")
    return " ".join(out)


def stripped_note(s):
    """A sentence on the libraries whose samples have no symbols, or "" when all have."""
    by_lib, bare = collections.Counter(), collections.Counter()
    for (l, sym), by in s["symbols"].items():
        p = sum(by.values())
        by_lib[l] += p
        if sym == "[unknown]" or re.fullmatch(r"0x[0-9a-f]+", sym):
            bare[l] += p
    libs = [(l, bare[l] / by_lib[l] * 100) for l, _ in by_lib.most_common()
            if l not in ("kernel", "[unknown]") and bare[l] / by_lib[l] > 0.5 and by_lib[l] / s["total"] > 0.005]
    if not libs:
        return ""
    return (" " + ", ".join(f"{l} ({p:.0f} % of its samples)" for l, p in libs)
            + (" has" if len(libs) == 1 else " have") + " no symbols (stripped; Debian ships debug symbols "
            "separately): internal functions show as addresses, so such a library counts as one row, not by "
            "function.")


def main():
    require_binaries()
    if not shutil.which("perf"):
        sys.exit("perf missing: scripts/install-deps --bench (Debian package linux-perf)")
    r, started, load, took = timed(bench_profile)
    publish("profile", markdown(r, started, load, took), took)


if __name__ == "__main__":
    sys.exit(main())
