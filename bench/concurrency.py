"""Adaptive vs fixed HTTP sink concurrency against a receiver with 8 slots x 10 ms, overloaded."""
import json
import os
import statistics
import subprocess
import tempfile
import time

from common import RELEASE_BIN, Receiver

SLOTS, SERVICE_S, TARGET_MS = 8, 0.010, 20
OFFERED_EPS = 1200  # above the receiver's capacity of 800 requests/s
RUN_S, WARMUP_S = 12, 3


def run(concurrency_yaml, label):
    receiver = Receiver(slots=SLOTS, service_s=SERVICE_S).start()
    work = tempfile.mkdtemp(prefix="seedance-bench-conc-")
    config = os.path.join(work, "config.yaml")
    with open(config, "w") as f:
        f.write(f"""
sources:
  - type: generate
    rate: {OFFERED_EPS}
    count: {OFFERED_EPS * RUN_S}
    payload: '{{"n":{{n}}}}'
sinks:
  - type: http
    endpoint: "{receiver.url}/in"
    format: single
    timeout: 5s
{concurrency_yaml}
queue:
  buffer: memory
pipeline:
  queue_capacity: 100000
""")
    p = subprocess.Popen([RELEASE_BIN, "--config", config, "--log-level", "warn"], cwd=work,
                         stderr=subprocess.DEVNULL)
    t0 = time.perf_counter()
    time.sleep(RUN_S)
    p.terminate()
    p.wait(30)
    receiver.stop()
    start, end = t0 + WARMUP_S, t0 + RUN_S
    window = [lat for (at, lat) in receiver.latencies if start <= at < end]
    window.sort()
    result = dict(label)
    result.update({
        "p50_ms": round(1000 * statistics.median(window), 2),
        "p99_ms": round(1000 * window[int(0.99 * (len(window) - 1))], 2),
        "throughput_eps": round(len(window) / (end - start), 1),
    })
    return result


def main():
    runs = []
    for limit in (8, 16, 32):
        runs.append(run(f"    concurrency: {limit}", {"mode": "fixed", "limit": limit}))
    for algorithm in ("headroom", "article"):
        runs.append(run(f"    concurrency: {{adaptive: true, target_p99: {TARGET_MS}ms, "
                        f"algorithm: {algorithm}}}",
                        {"mode": "adaptive", "algorithm": algorithm}))
    best_fixed = max(r["throughput_eps"] for r in runs if r["mode"] == "fixed")
    print(json.dumps({"benchmark": "concurrency", "target_p99_ms": TARGET_MS,
                      "receiver": f"{SLOTS} slots x {SERVICE_S * 1000:.0f} ms",
                      "offered_eps": OFFERED_EPS, "best_fixed_throughput_eps": best_fixed,
                      "runs": runs}))


if __name__ == "__main__":
    main()
