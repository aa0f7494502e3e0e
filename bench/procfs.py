"""What every benchmark reads of a process and of the machine: a process's CPU seconds
(utime + stime from /proc/PID/stat) and threads, and the machine's description for a
"Machine:" line. Its own module so that bench/server.py (the one start of the server) and
bench/bench.py (which uses server.py) do not import each other."""
import os
import platform
import re
import subprocess
from pathlib import Path

TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid):
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK  # utime + stime


def threads(pid):
    return int(re.search(r"Threads:\s+(\d+)", Path(f"/proc/{pid}/status").read_text()).group(1))


def machine():
    sh = lambda *a: subprocess.run(a, check=True, capture_output=True, text=True).stdout
    cpu = re.search(r"Model name:\s+(.*)", sh("lscpu"))
    swift = sh("swift", "--version").splitlines()[0]
    return (f"{cpu.group(1).strip() if cpu else platform.processor()}, {os.cpu_count()} cores; "
            f"Linux {platform.release()}; {swift}")
