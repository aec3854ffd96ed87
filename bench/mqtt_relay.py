"""MQTT in -> filter.lua -> MQTT out at QoS 1 against the input broker's QoS 1 pub->sub ceiling.

Two topologies, interleaved with the ceiling in every round:
- bridge (the headline `ratio`): Seedance reads from the local broker and publishes to a second
  one (the upstream an edge relay feeds). Each broker carries each message twice, as in the
  ceiling, so the ratio measures what Seedance costs the stream.
- one broker: Seedance publishes back to the broker it reads from. mosquitto is one thread and
  here carries each relayed message four times against twice in the ceiling, so this ratio
  cannot pass about 0.5 wherever the broker is the limit (reported as `ratio_one_broker`).
"""
import json
import os
import statistics
import subprocess
import tempfile
import time

from common import RELEASE_BIN, ROOT, Broker, cpu_seconds

LOAD = os.path.join(ROOT, "build-release", "mqtt_load")
COUNT = os.path.join(ROOT, "build-release", "mqtt_count")
N = 100_000
ROUNDS = 5  # interleaved; medians reported (a shared VM's rate varies by half between runs)


def counting_subscriber(port, topic, count):
    """bench/mqtt_count at QoS 1, exiting after `count` messages: the fastest subscriber we have
    (mosquitto_sub acknowledges each message with its own write and was the limit it measured)."""
    p = subprocess.Popen([COUNT, "127.0.0.1", str(port), topic, "1", str(count), "180"],
                         stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "subscribed"
    return p


def wait_all(sub, count):
    """Waits for the subscriber to exit; every message must have arrived."""
    result = json.loads(sub.stdout.readline())
    sub.wait(30)
    assert result["received"] == count, f"{result['received']} of {count} messages arrived"


def publish(port, count):
    return subprocess.run([LOAD, "127.0.0.1", str(port), str(count), "0", "2000"],
                          capture_output=True, text=True, check=True)


def ceiling(broker):
    """The broker's own QoS 1 pub -> sub rate for the same stream, and its CPU use."""
    sub = counting_subscriber(broker.port, "sensor/#", N)
    cpu0 = cpu_seconds(broker.proc.pid)
    t0 = time.perf_counter()
    publish(broker.port, N)
    wait_all(sub, N)
    elapsed = time.perf_counter() - t0
    return N / elapsed, (cpu_seconds(broker.proc.pid) - cpu0) / elapsed


def relay(broker, base, out):
    """Relays from `broker` to `out` (the same broker or another), from a fresh data directory:
    a queue left by an earlier run would deliver its remainder into this one's count."""
    work = tempfile.mkdtemp(prefix="run-", dir=base)
    config = os.path.join(work, "config.yaml")
    with open(config, "w") as f:
        f.write(f"""
sources:
  - type: mqtt
    uri: "{broker.uri}"
    topic: "sensor/+/temperature"
    client_id: bench-relay-in
    # Else the broker keeps the session between runs and queues the ceiling's messages for it.
    persistent_session: false
sinks:
  - type: mqtt
    uri: "{out.uri}"
    topic: "out/{{topic.2}}"
    client_id: bench-relay-out
queue:
  data_dir: "{os.path.join(work, 'data')}"
""")
    p = subprocess.Popen([RELEASE_BIN, "--config", config, "--filter",
                          os.path.join(ROOT, "examples/seed/filter.lua"), "--log-level", "warn"],
                         cwd=work, stderr=subprocess.DEVNULL)
    time.sleep(1.0)
    expected = sum(1 for i in range(N) if -40 <= -60 + (i * 7919 % 2100) / 10.0 <= 125)
    try:
        sub = counting_subscriber(out.port, "out/#", expected)
        cpu0, broker_cpu0 = cpu_seconds(p.pid), cpu_seconds(broker.proc.pid)
        t0 = time.perf_counter()
        publish(broker.port, N)
        wait_all(sub, expected)
        elapsed = time.perf_counter() - t0
        cpu = cpu_seconds(p.pid) - cpu0
        broker_busy = (cpu_seconds(broker.proc.pid) - broker_cpu0) / elapsed
    finally:
        p.terminate()
        p.wait(30)
    return N / elapsed, expected, cpu, broker_busy


def main():
    broker = Broker(extra="max_inflight_messages 0\n").start()
    upstream = Broker(extra="max_inflight_messages 0\n").start()
    work = tempfile.mkdtemp(prefix="seedance-bench-relay-")
    ceilings, bridged, looped = [], [], []
    try:
        for _ in range(ROUNDS):
            ceilings.append(ceiling(broker))
            bridged.append(relay(broker, work, upstream))
            looped.append(relay(broker, work, broker))
    finally:
        broker.stop()
        upstream.stop()
    med = statistics.median
    broker_eps, ceiling_busy = med(c[0] for c in ceilings), med(c[1] for c in ceilings)
    relay_eps, cpu, relay_busy = (med(r[0] for r in bridged), med(r[2] for r in bridged),
                                  med(r[3] for r in bridged))
    one_eps, one_cpu, one_busy = (med(r[0] for r in looped), med(r[2] for r in looped),
                                  med(r[3] for r in looped))
    expected = bridged[0][1]
    print(json.dumps({
        "benchmark": "mqtt_relay",
        "job": "MQTT QoS 1 -> filter.lua -> MQTT QoS 1 (sink defaults), "
               "durable queue, fsync 100ms; mosquitto on loopback: local -> upstream (ratio), "
               "and back to the same one (ratio_one_broker)",
        "published": N,
        "rounds": ROUNDS,
        "relayed": expected,
        "broker_ceiling_msgs": round(broker_eps),
        "relay_eps": round(relay_eps),
        # Each round's relay against the ceiling measured just before it: the VM's speed drifts
        # between rounds more than within one.
        "ratio": round(med(r[0] / c[0] for c, r in zip(ceilings, bridged)), 3),
        "ratio_each_round": [round(r[0] / c[0], 3) for c, r in zip(ceilings, bridged)],
        "cpu_s_per_100k": round(cpu / N * 100_000, 3),
        "relay_eps_one_broker": round(one_eps),
        "ratio_one_broker": round(med(r[0] / c[0] for c, r in zip(ceilings, looped)), 3),
        "ratio_one_broker_each_round": [round(r[0] / c[0], 3) for c, r in zip(ceilings, looped)],
        # One broker moves each message twice in the ceiling (in, out) and up to four times in
        # the one-broker relay (in, to Seedance, from Seedance, out): its ratio per message moved.
        "ratio_one_broker_per_hop": round(one_eps / broker_eps * (2 * N + 2 * expected) / (2 * N),
                                          3),
        "cpu_s_per_100k_one_broker": round(one_cpu / N * 100_000, 3),
        # mosquitto is one thread: near 1.0 it is the bottleneck.
        "broker_busy_ceiling": round(ceiling_busy, 2),
        "broker_busy_relay": round(relay_busy, 2),
        "broker_busy_one_broker": round(one_busy, 2),
    }))


if __name__ == "__main__":
    main()
