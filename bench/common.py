"""Shared helpers for the benchmarks: paths, a loopback broker and receiver, RSS."""
import os
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(ROOT, "tests"))

from testing.broker import Broker  # noqa: E402,F401
from testing.ports import free_port  # noqa: E402,F401
from testing.http_receiver import Receiver  # noqa: E402,F401
from testing.proc_stats import status_kb  # noqa: E402

# SEEDANCE_BENCH_BIN: another build's binary, for a quick look by hand (bench/run always
# builds and uses the release build; numbers for docs/bench.md come from there).
RELEASE_BIN = os.environ.get("SEEDANCE_BENCH_BIN") or os.path.join(ROOT, "build-release",
                                                                     "seedance")


def stripped_binary():
    """A stripped copy of the release binary (what ships)."""
    out = os.path.join(ROOT, "build-release", "seedance.stripped")
    subprocess.run(["strip", "-o", out, RELEASE_BIN], check=True)
    return out


def rss_kb(pid):
    return status_kb(pid, "VmRSS")


def anon_kb(pid):
    """Anonymous (heap, stacks) resident memory: what the process allocated itself."""
    with open(f"/proc/{pid}/smaps_rollup") as f:
        for line in f:
            if line.startswith("Anonymous:"):
                return int(line.split()[1])
    return 0


def shared_libs(path):
    out = subprocess.run(["ldd", path], capture_output=True, text=True).stdout
    return sorted(l.split()[0] for l in out.splitlines() if "=>" in l or l.strip().startswith("/"))


def cpu_seconds(pid):
    """User + system CPU seconds a process has used so far."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def count_lines(path):
    """Newlines in a file (0 when it does not exist yet)."""
    try:
        with open(path, "rb") as f:
            return sum(chunk.count(b"\n") for chunk in iter(lambda: f.read(1 << 20), b""))
    except FileNotFoundError:
        return 0
