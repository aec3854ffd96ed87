"""The reference job at 5k msg/s with three taps open, one of them a stopped client: delivered counts, CPU and RSS against no taps."""
# Issue 46's acceptance for `seedance tap`: a tap never slows or changes the pipeline. The
# reference job (MQTT QoS 1 -> filter.lua -> HTTP, durable queue) runs phases of 5k msg/s for
# 8 s (bench/pipeline.py's phase: CPU per 100k events, latency, delivered) in three shapes,
# interleaved round by round on one process:
#   none        no tap open
#   one_point   three `seedance tap --component filter` (the filter's output), one SIGSTOPped
#   all_points  three `seedance tap` of every point (each event shows at four), one SIGSTOPped
# Per shape: the median of the rounds; the stopped client's drops (seedance_tap_dropped_total);
# the growth of the peak RSS (VmHWM) over the no-tap phases against the rings' bound (3 MiB).
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

import pipeline
from common import RELEASE_BIN, ROOT, Broker, Receiver, free_port
from testing.proc_stats import status_kb

RATE = 5000
SECONDS = 8
ROUNDS = 3
RING_BOUND_KIB = 3 * 1024


def metric_sum(url, name):
    with urllib.request.urlopen(url, timeout=2) as r:
        text = r.read().decode()
    total = 0.0
    for line in text.splitlines():
        if line.startswith(name + "{") or line.startswith(name + " "):
            total += float(line.rsplit(" ", 1)[1])
    return total


def open_taps(base_url, args):
    taps = [subprocess.Popen([RELEASE_BIN, "tap", "--url", base_url, *args],
                             stdout=subprocess.DEVNULL) for _ in range(3)]
    deadline = time.time() + 10
    while metric_sum(base_url + "/metrics", "seedance_taps_open") < 3 and time.time() < deadline:
        time.sleep(0.05)
    taps[2].send_signal(signal.SIGSTOP)
    return taps


def close_taps(base_url, taps):
    for p in taps:
        p.send_signal(signal.SIGCONT)
        p.terminate()
        p.wait(10)
    deadline = time.time() + 10
    while metric_sum(base_url + "/metrics", "seedance_taps_open") > 0 and time.time() < deadline:
        time.sleep(0.05)


def main():
    broker = Broker(extra="max_inflight_messages 0\nmax_queued_messages 0\n").start()
    receiver = Receiver().start()
    receiver.count_only = True
    receiver.collect_latency = True
    work = tempfile.mkdtemp(prefix="seedance-bench-tap-")
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    env = dict(os.environ, BROKER_URI=broker.uri, SINK_URL=receiver.url + "/v1/metrics",
               METRICS_LISTEN=f"127.0.0.1:{port}", SEEDANCE_DATA_DIR=os.path.join(work, "data"),
               SIDE_OUTPUT_FILE=os.path.join(work, "side.ndjson"))
    p = subprocess.Popen([RELEASE_BIN, "--config",
                          os.path.join(ROOT, "examples/reference/config.yaml"), "--filter",
                          os.path.join(ROOT, "examples/seed/filter.lua"), "--log-level", "warn"],
                         env=env, cwd=work, stderr=subprocess.DEVNULL)
    time.sleep(1.0)
    shapes = {"none": None, "one_point": ["--component", "filter"], "all_points": []}
    results = {name: [] for name in shapes}
    rss_before_taps = peak = None
    try:
        pipeline.phase(p, broker, receiver, base + "/metrics", 2000, 1000)  # warm-up
        for _ in range(ROUNDS):
            for name, args in shapes.items():
                taps = open_taps(base, args) if args is not None else []
                dropped0 = metric_sum(base + "/metrics", "seedance_tap_dropped_total")
                r = pipeline.phase(p, broker, receiver, base + "/metrics", RATE * SECONDS, RATE)
                r["tap_dropped"] = metric_sum(base + "/metrics",
                                              "seedance_tap_dropped_total") - dropped0
                if args is None and rss_before_taps is None:
                    rss_before_taps = status_kb(p.pid, "VmHWM")
                close_taps(base, taps)
                results[name].append(r)
        peak = status_kb(p.pid, "VmHWM")
    finally:
        p.terminate()
        p.wait(30)
        receiver.stop()
        broker.stop()

    def summary(runs):
        return {
            "delivered_all": all(r["delivered"] == r["expected"] for r in runs),
            "delivered": [r["delivered"] for r in runs],
            "expected": runs[0]["expected"],
            "cpu_s_per_100k": statistics.median(r["cpu_s_per_100k"] for r in runs),
            "cpu_s_per_100k_runs": [r["cpu_s_per_100k"] for r in runs],
            "p50_ms": statistics.median(r["p50_ms"] for r in runs),
            "p99_ms": statistics.median(r["p99_ms"] for r in runs),
            "stopped_client_dropped": [r["tap_dropped"] for r in runs],
        }
    out = {name: summary(runs) for name, runs in results.items()}
    base_cpu = out["none"]["cpu_s_per_100k"]
    for name in ("one_point", "all_points"):
        out[name]["cpu_vs_none_pct"] = round(100 * (out[name]["cpu_s_per_100k"] / base_cpu - 1), 1)
        print(f"{name}: cpu {out[name]['cpu_s_per_100k']} s/100k vs {base_cpu} "
              f"({out[name]['cpu_vs_none_pct']:+}%), delivered all: {out[name]['delivered_all']}, "
              f"stopped client dropped {out[name]['stopped_client_dropped']}", file=sys.stderr)
    print(json.dumps({
        "benchmark": "tap",
        "job": "reference (MQTT QoS 1 -> filter.lua -> HTTP), 5k msg/s, 8 s phases",
        "machine": f"{os.cpu_count()} cores",
        "rounds": ROUNDS,
        "shapes": out,
        "peak_rss_kib_before_taps": rss_before_taps,
        "ring_bound_kib": RING_BOUND_KIB,
        "peak_rss_kib_end": peak,
    }))


if __name__ == "__main__":
    main()
