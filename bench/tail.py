"""The tail source: events/s and CPU s per 100k lines, reading a 100,000-line NDJSON file."""
import json
import os
import shutil
import statistics
import subprocess
import tempfile
import time

from common import RELEASE_BIN, count_lines, cpu_seconds

N = 100_000
ROUNDS = 3


def run_once(text):
    work = tempfile.mkdtemp(prefix="seedance-bench-tail-")
    log = os.path.join(work, "app.log")
    out = os.path.join(work, "out.ndjson")
    with open(log, "w") as f:
        f.write(text)
    config = os.path.join(work, "config.yaml")
    with open(config, "w") as f:
        f.write(f"""
sources:
  - type: tail
    path: {log}
    read_from: beginning
sinks:
  - type: file
    path: {out}
queue:
  data_dir: {os.path.join(work, "data")}
""")
    t0 = time.perf_counter()
    p = subprocess.Popen([RELEASE_BIN, "--config", config, "--log-level", "warn"],
                         stderr=subprocess.DEVNULL)
    try:
        while count_lines(out) < N and time.perf_counter() - t0 < 120:
            time.sleep(0.005)
        elapsed = time.perf_counter() - t0
        cpu = cpu_seconds(p.pid)
        assert count_lines(out) >= N
    finally:
        p.terminate()
        p.wait(30)
        shutil.rmtree(work, ignore_errors=True)
    return N / elapsed, cpu / N * 100_000


def main():
    text = "".join(json.dumps({"n": i, "level": "info", "msg": "request served", "ms": i % 97})
                   + "\n" for i in range(N))
    runs = [run_once(text) for _ in range(ROUNDS)]
    med = statistics.median
    print(json.dumps({
        "benchmark": "tail",
        "job": "tail source (read_from beginning) -> file sink, durable queue (fsync 100ms); "
               "one 100,000-line NDJSON file, from process start to the last line written",
        "lines": N,
        "bytes_per_line": round(len(text) / N),
        "rounds": ROUNDS,
        "events_per_s": round(med(r[0] for r in runs)),
        "cpu_s_per_100k": round(med(r[1] for r in runs), 3),
        "peer": "Fluent Bit is not packaged for Debian 12: no side-by-side run here",
    }))


if __name__ == "__main__":
    main()
