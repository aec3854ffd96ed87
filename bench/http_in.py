"""The http source: events/s and CPU s per 100k events, NDJSON requests of 1,000 events over keep-alive."""
import http.client
import json
import os
import shutil
import statistics
import subprocess
import tempfile
import threading
import time

from common import RELEASE_BIN, count_lines, cpu_seconds, free_port

N = 100_000
PER_REQUEST = 1000
CLIENTS = 2
ROUNDS = 3


def run_once(bodies, extra_config="", headers=None):
    """One run; `extra_config` is appended to the config and `headers` sent on every request
    (bench/tracing.py)."""
    work = tempfile.mkdtemp(prefix="seedance-bench-http-in-")
    port = free_port()
    out = os.path.join(work, "out.ndjson")
    config = os.path.join(work, "config.yaml")
    with open(config, "w") as f:
        f.write(f"""
sources:
  - type: http
    listen: 127.0.0.1:{port}
sinks:
  - type: file
    path: {out}
queue:
  data_dir: {os.path.join(work, "data")}
{extra_config}""")
    p = subprocess.Popen([RELEASE_BIN, "--config", config, "--log-level", "warn"],
                         stderr=subprocess.DEVNULL)
    latencies = []
    try:
        deadline = time.time() + 10
        while time.time() < deadline:
            try:
                http.client.HTTPConnection("127.0.0.1", port, timeout=1).connect()
                break
            except OSError:
                time.sleep(0.02)
        cpu0 = cpu_seconds(p.pid)
        t0 = time.perf_counter()

        def client(part):
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            for body in part:
                s = time.perf_counter()
                conn.request("POST", "/bench", body,
                             {"Content-Type": "application/x-ndjson", **(headers or {})})
                r = conn.getresponse()
                r.read()
                assert r.status == 200, r.status
                latencies.append(time.perf_counter() - s)

        threads = [threading.Thread(target=client, args=(bodies[i::CLIENTS],))
                   for i in range(CLIENTS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        answered = time.perf_counter() - t0
        while count_lines(out) < N and time.perf_counter() - t0 < 120:
            time.sleep(0.01)
        elapsed = time.perf_counter() - t0
        cpu = cpu_seconds(p.pid) - cpu0
        assert count_lines(out) >= N
    finally:
        p.terminate()
        p.wait(30)
        shutil.rmtree(work, ignore_errors=True)
    return N / elapsed, N / answered, cpu / N * 100_000, statistics.median(latencies) * 1000


def make_bodies():
    return ["".join(json.dumps({"req": r, "k": k, "temperature": 21.5}) + "\n"
                    for k in range(PER_REQUEST)).encode() for r in range(N // PER_REQUEST)]


def main():
    bodies = make_bodies()
    runs = [run_once(bodies) for _ in range(ROUNDS)]
    med = statistics.median
    print(json.dumps({
        "benchmark": "http_in",
        "job": f"http source -> file sink, durable queue (fsync 100ms); {CLIENTS} keep-alive "
               f"clients posting NDJSON requests of {PER_REQUEST} events",
        "events": N,
        "rounds": ROUNDS,
        "delivered_eps": round(med(r[0] for r in runs)),
        "answered_eps": round(med(r[1] for r in runs)),
        "cpu_s_per_100k": round(med(r[2] for r in runs), 3),
        "request_p50_ms": round(med(r[3] for r in runs), 2),
        "peer": "Fluent Bit is not packaged for Debian 12: no side-by-side run here",
    }))


if __name__ == "__main__":
    main()
