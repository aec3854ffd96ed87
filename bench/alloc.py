"""Heap allocations per event of the reference job in steady state (allocs_per_event; target 0)."""
import json
import os
import subprocess
import tempfile
import time

from common import RELEASE_BIN, ROOT, Broker, Receiver, free_port

LOAD = os.path.join(ROOT, "build-release", "mqtt_load")
COUNTER = os.path.join(ROOT, "build-release", "liballoc_counter.so")
RATE = 5000


def read_count(path):
    for _ in range(100):
        try:
            with open(path) as f:
                return int(f.read().strip())
        except (FileNotFoundError, ValueError):
            time.sleep(0.02)
    raise RuntimeError("no allocation count from " + path)


def settle(path, seconds=0.6):
    """The count once it has stopped moving with the load (the writer updates every 50 ms)."""
    time.sleep(seconds)
    return read_count(path)


def main():
    broker = Broker(extra="max_inflight_messages 0\n").start()
    receiver = Receiver().start()
    receiver.count_only = True
    work = tempfile.mkdtemp(prefix="seedance-bench-alloc-")
    count_file = os.path.join(work, "allocs")
    env = dict(os.environ, BROKER_URI=broker.uri, SINK_URL=receiver.url + "/v1/metrics",
               METRICS_LISTEN=f"127.0.0.1:{free_port()}", SEEDANCE_DATA_DIR=os.path.join(work, "data"),
               SIDE_OUTPUT_FILE=os.path.join(work, "side.ndjson"),
               LD_PRELOAD=COUNTER, ALLOC_COUNTER_FILE=count_file)
    p = subprocess.Popen([RELEASE_BIN, "--config", os.path.join(ROOT, "examples/reference/config.yaml"),
                          "--filter", os.path.join(ROOT, "examples/seed/filter.lua"), "--log-level", "warn"],
                         env=env, cwd=work, stderr=subprocess.DEVNULL)
    try:
        time.sleep(1.0)
        # Warm-up: pools, queues, connections and segment files reach their steady size.
        subprocess.run([LOAD, "127.0.0.1", str(broker.port), "40000", str(RATE), "2000"],
                       capture_output=True, check=True)
        idle0 = settle(count_file)
        idle1 = settle(count_file, 2.0)
        idle_per_s = (idle1 - idle0) / 2.0
        n = 50_000
        c0 = read_count(count_file)
        t0 = time.time()
        subprocess.run([LOAD, "127.0.0.1", str(broker.port), str(n), str(RATE), "2000"],
                       capture_output=True, check=True)
        c1 = settle(count_file)
        elapsed = time.time() - t0
    finally:
        p.terminate()
        p.wait(30)
        receiver.stop()
        broker.stop()
    allocs = (c1 - c0) - idle_per_s * elapsed
    print(json.dumps({
        "benchmark": "alloc",
        "job": "reference (MQTT QoS 1 -> filter.lua -> HTTP), durable queue, 5k msg/s",
        "events": n,
        "allocs": int(c1 - c0),
        "idle_allocs_per_s": round(idle_per_s, 1),
        "allocs_per_event": round(allocs / n, 3),
        "target": 0,
        "how": "LD_PRELOAD counter of malloc/calloc/realloc/aligned allocations in every thread "
               "(LuaJIT's own allocator is not malloc and is not counted; the counter itself "
               "allocates nothing); the idle rate (measured over 2 s) is subtracted",
    }))


if __name__ == "__main__":
    main()
