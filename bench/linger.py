"""batch_linger of the HTTP sink (and read_linger of the MQTT source): events per request, CPU and latency at steady 1k and 5k msg/s."""
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

from common import RELEASE_BIN, ROOT, Broker, Receiver, cpu_seconds, free_port

LOAD = os.path.join(ROOT, "build-release", "mqtt_load")
# batch_linger values with the source's default read_linger, then both off ("0s/0s":
# read_linger/batch_linger).
LINGERS = ["0s/0s", "0s", "2ms", "3ms", "5ms", "10ms"]
RATES = [1000, 5000]
SECONDS = 8


def expected_delivered(n):
    # The seed filter keeps readings from -40 to 125 degrees (mqtt_load's formula).
    return sum(1 for i in range(n) if -40 <= -60 + (i * 7919 % 2100) / 10.0 <= 125)


def run(broker, receiver, rate, linger):
    work = tempfile.mkdtemp(prefix="seedance-bench-linger-")
    config = os.path.join(work, "config.yaml")
    with open(os.path.join(ROOT, "examples/reference/config.yaml")) as f:
        text = f.read()
    with open(config, "w") as f:
        read, _, batch = linger.rpartition("/")
        text = text.replace("    method: POST\n", f"    method: POST\n    batch_linger: {batch}\n")
        if read:
            text = text.replace('    topic: "sensor/+/temperature"\n',
                                f'    topic: "sensor/+/temperature"\n    read_linger: {read}\n')
        f.write(text)
    env = dict(os.environ, BROKER_URI=broker.uri, SINK_URL=receiver.url + "/v1/metrics",
               METRICS_LISTEN=f"127.0.0.1:{free_port()}", SEEDANCE_DATA_DIR=os.path.join(work, "data"),
               SIDE_OUTPUT_FILE=os.path.join(work, "side.ndjson"))
    p = subprocess.Popen([RELEASE_BIN, "--config", config,
                          "--filter", os.path.join(ROOT, "examples/seed/filter.lua"), "--log-level", "warn"],
                         env=env, cwd=work, stderr=subprocess.DEVNULL)
    time.sleep(1.0)
    try:
        n = rate * SECONDS
        with receiver.lock:
            receiver.counted = receiver.posts = 0
            receiver.e2e_ns.clear()
        cpu0 = cpu_seconds(p.pid)
        subprocess.run([LOAD, "127.0.0.1", str(broker.port), str(n), str(rate), "2000"],
                       capture_output=True, text=True, check=True)
        expected = expected_delivered(n)
        deadline = time.time() + 20
        while receiver.counted < expected and time.time() < deadline:
            time.sleep(0.05)
        cpu = cpu_seconds(p.pid) - cpu0
        with receiver.lock:
            delivered, posts, lat = receiver.counted, receiver.posts, sorted(receiver.e2e_ns)
    finally:
        p.terminate()
        p.wait(30)
    return {"rate_msgs": rate, "linger": linger, "delivered": delivered, "expected": expected,
            "events_per_request": round(delivered / max(posts, 1), 2),
            "cpu_s_per_100k": round(cpu / max(delivered, 1) * 100_000, 3),
            "p50_ms": round(statistics.median(lat) / 1e6, 2) if lat else None,
            "p99_ms": round(lat[int(0.99 * (len(lat) - 1))] / 1e6, 2) if lat else None}


def main():
    lingers = sys.argv[1].split(",") if len(sys.argv) > 1 else LINGERS
    broker = Broker(extra="max_inflight_messages 0\n").start()
    receiver = Receiver().start()
    receiver.count_only = True
    receiver.collect_latency = True
    rows = []
    try:
        for rate in RATES:
            for linger in lingers:
                row = run(broker, receiver, rate, linger)
                rows.append(row)
                print(f"{rate:>5} msg/s  linger {linger:>5}: {row['events_per_request']:>6} events/request, "
                      f"{row['cpu_s_per_100k']:>6} CPU s/100k, P50 {row['p50_ms']} ms, P99 {row['p99_ms']} ms",
                      file=sys.stderr)
    finally:
        receiver.stop()
        broker.stop()
    print(json.dumps({"benchmark": "linger", "job": "reference job, HTTP sink batch_linger",
                      "seconds_per_run": SECONDS, "runs": rows}))


if __name__ == "__main__":
    main()
