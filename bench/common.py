"""Shared helpers for the benchmarks: paths, a loopback broker and receiver, RSS."""
import os
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(ROOT, "tests"))

from testing.broker import Broker, free_port  # noqa: E402,F401
from testing.http_receiver import Receiver  # noqa: E402,F401

RELEASE_BIN = os.path.join(ROOT, "build-release", "seedance")


def stripped_binary():
    """A stripped copy of the release binary (what ships)."""
    out = os.path.join(ROOT, "build-release", "seedance.stripped")
    subprocess.run(["strip", "-o", out, RELEASE_BIN], check=True)
    return out


def rss_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


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
