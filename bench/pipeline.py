"""The reference job through a real broker at steady 1k/2k/5k msg/s and at burst, with the broker's own cost as the yardstick."""
# Each phase publishes stamped readings (bench/mqtt_load) to one mosquitto on loopback; the
# reference job (MQTT QoS 1 -> filter.lua -> HTTP, durable queue, fsync 100 ms) delivers them
# to a counting receiver. Per phase, from /proc of the Seedance process and of the broker:
#   delivered_eps           events the receiver got / seconds from first publish to last delivery
#   cpu_s_per_100k          Seedance CPU (user + system) per 100k delivered events
#   broker_cpu_s_per_100k   mosquitto's CPU per 100k messages of the same stream, same phase
#   ctx_switches_per_event  voluntary + involuntary context switches of all Seedance threads
#   syscalls_per_event      read- and write-class system calls (/proc/PID/io syscr + syscw;
#                           futex and epoll_wait are not in it: the context switches show those)
#   events_per_request      delivered events / HTTP requests the receiver answered
#   p50_ms, p99_ms          publish (sent_ns in the payload) to the receiver's arrival
#   peak_rss_kib            VmHWM of the Seedance process so far
# The burst publishes as fast as the broker takes messages, at QoS 1 and at QoS 0; its
# intake_eps (events the source took in per second, from /metrics) is compared with the same
# broker's pub -> sub ceiling (bench/mqtt_count at the same QoS) measured in the same run.
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

from common import RELEASE_BIN, ROOT, Broker, Receiver, cpu_seconds, free_port
from testing.proc_stats import context_switches, context_switches_by_thread, status_kb

LOAD = os.path.join(ROOT, "build-release", "mqtt_load")
COUNT = os.path.join(ROOT, "build-release", "mqtt_count")
STEADY_RATES = [1000, 2000, 5000]
STEADY_SECONDS = 8
BURST = 100_000


def passes_filter(i):
    return -40 <= -60 + (i * 7919 % 2100) / 10.0 <= 125


def expected_of(n):
    return sum(1 for i in range(n) if passes_filter(i))


def syscalls(pid):
    with open(f"/proc/{pid}/io") as f:
        fields = dict(line.split(": ") for line in f.read().splitlines())
    return int(fields["syscr"]) + int(fields["syscw"])


def events_in(metrics_url):
    """Events the MQTT source has taken in (its seedance_events_in_total)."""
    with urllib.request.urlopen(metrics_url, timeout=2) as r:
        text = r.read().decode()
    m = re.search(r'^seedance_events_in_total\{[^}]*kind="source"[^}]*\} (\d+)', text, re.M)
    if m is None:
        m = re.search(r'^seedance_events_in_total\{component="mqtt[^"]*"[^}]*\} (\d+)', text, re.M)
    return int(m.group(1)) if m else 0


def publish(port, count, rate, qos=1):
    return subprocess.Popen([LOAD, "127.0.0.1", str(port), str(count), str(rate), "2000", "0",
                             str(qos)], stdout=subprocess.PIPE, text=True)


class Snapshot:
    def __init__(self, pid, broker_pid, receiver):
        self.cpu = cpu_seconds(pid)
        self.broker_cpu = cpu_seconds(broker_pid)
        self.ctx = context_switches(pid)
        self.ctx_by_thread = context_switches_by_thread(pid)
        self.sys = syscalls(pid)
        self.posts = receiver.posts
        self.counted = receiver.counted


def phase(p, broker, receiver, metrics_url, count, rate, qos=1):
    """Publishes `count` messages at `rate` (0: burst) and measures until all are delivered."""
    expected = expected_of(count)
    receiver.e2e_ns.clear()
    in0 = events_in(metrics_url)
    before = Snapshot(p.pid, broker.proc.pid, receiver)
    t0 = time.perf_counter()
    pub = publish(broker.port, count, rate, qos)
    intake_at = None
    deadline = time.time() + max(120, 3 * count / max(rate, 1000))
    # Only the burst polls /metrics while it runs (every 20 ms): a scrape costs Seedance CPU.
    while time.time() < deadline:
        if intake_at is None and (rate == 0 or receiver.counted - before.counted >= expected):
            if events_in(metrics_url) - in0 >= count:
                intake_at = time.perf_counter()
        if receiver.counted - before.counted >= expected and intake_at is not None:
            break
        time.sleep(0.02 if rate == 0 else 0.05)
    pub.wait(30)
    after = Snapshot(p.pid, broker.proc.pid, receiver)
    delivered = after.counted - before.counted
    if delivered != expected:
        print(f"phase rate={rate} qos={qos}: delivered {delivered} of {expected}", file=sys.stderr)
    lat = sorted(receiver.e2e_ns)
    elapsed = receiver.last_at - t0
    per = 100_000 / max(delivered, 1)
    return {
        "rate_msgs": rate,
        "qos": qos,
        "published": count,
        "delivered": delivered,
        "expected": expected,
        "delivered_eps": round(delivered / elapsed),
        "intake_eps": round(count / (intake_at - t0)) if intake_at else 0,
        "cpu_s_per_100k": round((after.cpu - before.cpu) * per, 3),
        # Per message taken in, as the broker's figure is: the yardstick compares these.
        "cpu_s_per_100k_msgs": round((after.cpu - before.cpu) / count * 100_000, 3),
        "broker_cpu_s_per_100k": round((after.broker_cpu - before.broker_cpu) / count * 100_000, 3),
        "ctx_switches_per_event": round((after.ctx - before.ctx) / max(delivered, 1), 3),
        # Which threads switch: where the wake-ups are.
        "ctx_switches_per_event_by_thread": {
            name: round((n - before.ctx_by_thread.get(name, 0)) / max(delivered, 1), 3)
            for name, n in sorted(after.ctx_by_thread.items())
            if n - before.ctx_by_thread.get(name, 0) > 0},
        "syscalls_per_event": round((after.sys - before.sys) / max(delivered, 1), 3),
        "events_per_request": round(delivered / max(after.posts - before.posts, 1), 1),
        "p50_ms": round(statistics.median(lat) / 1e6, 2) if lat else None,
        "p99_ms": round(lat[int(0.99 * (len(lat) - 1))] / 1e6, 2) if lat else None,
        "peak_rss_kib": status_kb(p.pid, "VmHWM"),
    }


def ceiling(broker, qos):
    """The broker's own pub -> sub rate for the same stream at `qos`, to the fastest subscriber
    we have (bench/mqtt_count: mosquitto_sub is slower than Seedance, so it measured itself)."""
    sub = subprocess.Popen([COUNT, "127.0.0.1", str(broker.port), "sensor/#", str(qos), str(BURST)],
                           stdout=subprocess.PIPE, text=True)
    assert sub.stdout.readline().strip() == "subscribed"
    t0 = time.perf_counter()
    publish(broker.port, BURST, 0, qos).wait(120)
    sub.wait(120)
    return BURST / (time.perf_counter() - t0)


def main():
    broker = Broker(extra="max_inflight_messages 0\nmax_queued_messages 0\n").start()
    receiver = Receiver().start()
    receiver.count_only = True
    receiver.collect_latency = True
    work = tempfile.mkdtemp(prefix="seedance-bench-pipeline-")
    metrics_port = free_port()
    metrics_url = f"http://127.0.0.1:{metrics_port}/metrics"
    env = dict(os.environ, BROKER_URI=broker.uri, SINK_URL=receiver.url + "/v1/metrics",
               METRICS_LISTEN=f"127.0.0.1:{metrics_port}",
               SEEDANCE_DATA_DIR=os.path.join(work, "data"),
               SIDE_OUTPUT_FILE=os.path.join(work, "side.ndjson"))
    # bench/run pipeline [CONFIG]: another configuration of the job (e.g. other lingers).
    config = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "examples/reference/config.yaml")
    # Before Seedance subscribes (the broker serves one subscriber); the median of three rounds,
    # interleaved: a shared VM's rate varies by a third between runs.
    rounds = [(ceiling(broker, 1), ceiling(broker, 0)) for _ in range(3)]
    ceiling_qos1 = statistics.median(r[0] for r in rounds)
    ceiling_qos0 = statistics.median(r[1] for r in rounds)
    p = subprocess.Popen([RELEASE_BIN, "--config", config,
                          "--filter", os.path.join(ROOT, "examples/seed/filter.lua"), "--log-level", "warn"],
                         env=env, cwd=work, stderr=subprocess.DEVNULL)
    time.sleep(1.0)
    try:
        phase(p, broker, receiver, metrics_url, 2000, 1000)  # warm-up: pages, pools, connections
        steady = [phase(p, broker, receiver, metrics_url, r * STEADY_SECONDS, r) for r in STEADY_RATES]
        burst = phase(p, broker, receiver, metrics_url, BURST, 0, qos=1)
        burst_qos0 = phase(p, broker, receiver, metrics_url, BURST, 0, qos=0)
    finally:
        p.terminate()
        p.wait(30)
        receiver.stop()
        broker.stop()
    burst["broker_ceiling_msgs"] = round(ceiling_qos1)
    burst["intake_vs_ceiling"] = round(burst["intake_eps"] / ceiling_qos1, 3)
    burst_qos0["broker_ceiling_msgs"] = round(ceiling_qos0)
    burst_qos0["intake_vs_ceiling"] = round(burst_qos0["intake_eps"] / ceiling_qos0, 3)
    for s in steady:
        print(f"steady {s['rate_msgs']:>5}/s: cpu {s['cpu_s_per_100k']} s/100k events, "
              f"{s['cpu_s_per_100k_msgs']} s/100k msgs (broker "
              f"{s['broker_cpu_s_per_100k']}), ctx/event {s['ctx_switches_per_event']}, "
              f"sys/event {s['syscalls_per_event']}, events/request {s['events_per_request']}, "
              f"P50 {s['p50_ms']} P99 {s['p99_ms']} ms; by thread "
              f"{s['ctx_switches_per_event_by_thread']}", file=sys.stderr)
    for b in (burst, burst_qos0):
        print(f"burst qos {b['qos']}: intake {b['intake_eps']}/s vs ceiling "
              f"{b['broker_ceiling_msgs']}/s ({b['intake_vs_ceiling']}), delivered "
              f"{b['delivered_eps']}/s, cpu {b['cpu_s_per_100k']} s/100k (broker "
              f"{b['broker_cpu_s_per_100k']})", file=sys.stderr)
    print(json.dumps({
        "benchmark": "pipeline",
        "job": "reference (MQTT QoS 1 -> filter.lua -> HTTP), durable queue, fsync 100ms",
        "config": os.path.relpath(config, ROOT),
        "machine": f"{os.cpu_count()} cores",
        "steady": steady,
        "burst": burst,
        "burst_qos0": burst_qos0,
        "broker_ceiling_msgs": round(ceiling_qos1),
    }))


if __name__ == "__main__":
    main()
