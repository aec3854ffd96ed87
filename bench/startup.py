"""Binary size, idle RSS and start-to-ready time of the reference job against a local broker."""
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

from common import RELEASE_BIN, ROOT, Broker, Receiver, anon_kb, free_port, rss_kb, shared_libs, stripped_binary

RUNS = 15
# Starts of a copy written just before (the state after an install or an upgrade), besides the
# RUNS starts of the binary read back from disk.
RUNS_JUST_WRITTEN = 5
# The runtime's log line when it drops start-up's pages from its mappings (docs/governor.md).
RELEASED = re.compile(r"start-up pages released: resident (\d+) -> (\d+) KiB")


def arm64_binary():
    """Size and needed libraries of the stripped arm64 release binary (the same sources,
    cross-built: scripts/build --target arm64), or why there is none."""
    import shutil
    if shutil.which("aarch64-linux-gnu-g++") is None:
        return {"arm64_binary_bytes": None,
                "arm64_note": "no arm64 cross toolchain here (scripts/setup --arm64)"}
    env = dict(os.environ, BUILD_DIR_ARM64="build-arm64-release", BUILD_TYPE="Release",
               TARGETS="seedance")
    subprocess.run([os.path.join(ROOT, "scripts", "build"), "--target", "arm64",
                    "-DSEEDANCE_TESTS=OFF"], cwd=ROOT, env=env, check=True,
                   stdout=subprocess.DEVNULL)
    out = os.path.join(ROOT, "build-arm64-release", "seedance.stripped")
    subprocess.run(["aarch64-linux-gnu-strip", "-o", out,
                    os.path.join(ROOT, "build-arm64-release", "seedance")], check=True)
    dynamic = subprocess.run(["aarch64-linux-gnu-readelf", "-d", out], capture_output=True,
                             text=True, check=True).stdout
    needed = sorted(l.split("[")[1].rstrip("]") for l in dynamic.splitlines() if "(NEEDED)" in l)
    return {"arm64_binary_bytes": os.path.getsize(out), "arm64_needed_libraries": needed}


OPTIONAL_SINKS = {
    "influxdb": ("influxdb_sink", "line_protocol", "write_error"),
    "nats": ("nats_sink", "nats_library", "nats_subject"),
    "kafka": ("kafka_sink", "kafka_library"),
}


def optional_sink_bytes():
    """What each optional sink's own object files put in the release binary (code and data
    sections kept by the link, from its map; templates and library code they share with the
    rest are counted where the linker placed them first, so this is a lower bound). None with
    link-time optimization: its map names the compiler's partitions, not our object files
    (binary_bytes - binary_bytes_without_optional_sinks is then the figure)."""
    sizes = {name: 0 for name in OPTIONAL_SINKS}
    line_rx = re.compile(r"^\s*(?:\.\S+)?\s+0x[0-9a-f]+\s+0x([0-9a-f]+)\s+\S*\((\w+)\.cc\.o\)")
    with open(os.path.join(ROOT, "build-release", "seedance.map")) as f:
        discarded = True
        for line in f:
            if line.startswith("Discarded input sections"):
                discarded = True
            elif line.startswith("Memory map") or line.startswith("Linker script and memory map"):
                discarded = False
            if discarded:
                continue
            m = line_rx.match(line)
            if not m:
                continue
            for name, objects in OPTIONAL_SINKS.items():
                if m.group(2) in objects:
                    sizes[name] += int(m.group(1), 16)
    return sizes if any(sizes.values()) else None


def without_optional_sinks():
    """Stripped size of a release build with every optional sink left out."""
    build = os.path.join(ROOT, "build-release-core")
    env = dict(os.environ, BUILD_DIR=build, BUILD_TYPE="Release", TARGETS="seedance")
    subprocess.run([os.path.join(ROOT, "scripts", "build"), "-DSEEDANCE_TESTS=OFF",
                    *[f"-DSEEDANCE_SINK_{n.upper()}=OFF" for n in OPTIONAL_SINKS]],
                   cwd=ROOT, env=env, check=True, stdout=subprocess.DEVNULL)
    out = os.path.join(build, "seedance.stripped")
    subprocess.run(["strip", "-o", out, os.path.join(build, "seedance")], check=True)
    return os.path.getsize(out)


def as_read_from_disk(path):
    """Writes the file out and drops it from the page cache, so the next start reads it from
    disk as after a boot. What a process maps per page fault depends on the page-cache folios
    the file sits in: one just written (`strip`, an install) sits in large folios and a fault
    maps a whole one (380-570 KiB of text here), one read back from disk sits in the small
    folios readahead made (64 KiB per fault). Idle RSS is measured in both states."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def just_written_copy(work):
    """The stripped binary written afresh by `strip`, still in the page cache its write left."""
    out = os.path.join(work, "seedance.just-written")
    subprocess.run(["strip", "-o", out, RELEASE_BIN], check=True)
    return out


def start_once(args, env):
    """One start: (ready ms, connected ms, idle RSS KiB, idle anonymous KiB, RSS before the
    start-up pages were released)."""
    t0 = time.perf_counter()
    p = subprocess.Popen(args, env=env, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL)
    ready = connected = released = None
    try:
        for raw in p.stderr:
            line = raw.decode()
            if ready is None and " ready in " in line:
                ready = (time.perf_counter() - t0) * 1000
            if " connected to " in line:
                connected = (time.perf_counter() - t0) * 1000
            m = RELEASED.search(line)
            if m:
                released = int(m.group(1))
            if connected is not None and released is not None:
                break
        time.sleep(1.0)  # settle, then read the idle footprint
        return ready, connected, rss_kb(p.pid), anon_kb(p.pid), released
    finally:
        p.terminate()
        p.wait(10)


def main():
    binary = stripped_binary()
    broker = Broker().start()
    receiver = Receiver().start()
    work = tempfile.mkdtemp(prefix="seedance-bench-")
    env = dict(os.environ, BROKER_URI=broker.uri, SINK_URL=receiver.url + "/v1/metrics",
               METRICS_LISTEN=f"127.0.0.1:{free_port()}",
               SIDE_OUTPUT_FILE=os.path.join(work, "side.ndjson"),
               SEEDANCE_DATA_DIR=os.path.join(work, "data"))
    config = ["--config", os.path.join(ROOT, "examples/reference/config.yaml"),
              "--filter", os.path.join(ROOT, "examples/seed/filter.lua")]
    try:
        as_read_from_disk(binary)
        runs = [start_once([binary, *config], env) for _ in range(RUNS)]
        written = [start_once([just_written_copy(work), *config], env)
                   for _ in range(RUNS_JUST_WRITTEN)]
    finally:
        broker.stop()
        receiver.stop()
    ready_ms, connected_ms, idle_rss, idle_anon, startup_rss = (list(c) for c in zip(*runs))
    result = {
        "benchmark": "startup",
        "binary_bytes": os.path.getsize(binary),
        "binary_bytes_without_optional_sinks": without_optional_sinks(),
        "optional_sink_bytes": optional_sink_bytes(),
        "shared_libraries": shared_libs(binary),
        **arm64_binary(),
        "idle_rss_kb": int(statistics.median(idle_rss)),
        "idle_anon_kb": int(statistics.median(idle_anon)),
        "idle_rss_kb_just_written": int(statistics.median(r[2] for r in written)),
        "rss_before_release_kb": int(statistics.median(startup_rss)),
        "ready_ms": round(statistics.median(ready_ms), 2),
        "connected_ms": round(statistics.median(connected_ms), 2),
        "runs": RUNS,
        "ready_definition": "spawn to the 'ready' log line: config loaded, components built, "
                            "listeners bound, sources started",
    }
    print(json.dumps(result))


if __name__ == "__main__":
    sys.exit(main())
