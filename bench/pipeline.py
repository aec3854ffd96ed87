"""The reference job through a real broker: throughput, CPU per 100k events, P99 at 5k msg/s."""
import json
import os
import statistics
import subprocess
import tempfile
import time

from common import RELEASE_BIN, ROOT, Broker, Receiver, cpu_seconds, free_port

LOAD = os.path.join(ROOT, "build-release", "mqtt_load")
N = 200_000


def main():
    broker = Broker(extra="max_inflight_messages 0\n").start()
    receiver = Receiver().start()
    receiver.count_only = True
    work = tempfile.mkdtemp(prefix="seedance-bench-pipeline-")
    env = dict(os.environ, BROKER_URI=broker.uri, SINK_URL=receiver.url + "/v1/metrics",
               METRICS_LISTEN=f"127.0.0.1:{free_port()}", SEEDANCE_DATA_DIR=os.path.join(work, "data"),
               SIDE_OUTPUT_FILE=os.path.join(work, "side.ndjson"))
    p = subprocess.Popen([RELEASE_BIN, "--config", os.path.join(ROOT, "examples/reference/config.yaml"),
                          "--filter", os.path.join(ROOT, "examples/seed/filter.lua"), "--log-level", "warn"],
                         env=env, cwd=work, stderr=subprocess.DEVNULL)
    time.sleep(1.0)
    try:
        # Throughput: as fast as the broker takes QoS 1 messages.
        cpu0 = cpu_seconds(p.pid)
        t0 = time.perf_counter()
        pub = subprocess.run([LOAD, "127.0.0.1", str(broker.port), str(N), "0", "2000"],
                             capture_output=True, text=True, check=True)
        expected = sum(1 for i in range(N) if -40 <= -60 + (i * 7919 % 2100) / 10.0 <= 125)
        deadline = time.time() + 120
        while receiver.counted < expected and time.time() < deadline:
            time.sleep(0.05)
        elapsed = receiver.last_at - t0
        cpu = cpu_seconds(p.pid) - cpu0
        delivered = receiver.counted
        # Latency at 5k msg/s for 10 s.
        receiver.collect_latency = True
        receiver.e2e_ns.clear()
        subprocess.run([LOAD, "127.0.0.1", str(broker.port), "50000", "5000", "2000"],
                       capture_output=True, text=True, check=True)
        time.sleep(1.0)
        lat = sorted(receiver.e2e_ns)
    finally:
        p.terminate()
        p.wait(30)
        receiver.stop()
        broker.stop()
    print(json.dumps({
        "benchmark": "pipeline",
        "job": "reference (MQTT QoS 1 -> filter.lua -> HTTP), durable queue, fsync 100ms",
        "published": N,
        "delivered": delivered,
        "expected": expected,
        "publisher": json.loads(pub.stdout),
        "throughput_eps": round(N / elapsed),
        "cpu_s_per_100k": round(cpu / N * 100_000, 3),
        "latency_5k_msgs_ms": {"p50": round(statistics.median(lat) / 1e6, 2),
                               "p99": round(lat[int(0.99 * (len(lat) - 1))] / 1e6, 2),
                               "samples": len(lat)},
    }))


if __name__ == "__main__":
    main()
