"""MQTT in -> filter.lua -> MQTT out at QoS 1 against the same broker's QoS 1 pub->sub ceiling."""
import json
import os
import statistics
import subprocess
import tempfile
import time

from common import RELEASE_BIN, ROOT, Broker, cpu_seconds

LOAD = os.path.join(ROOT, "build-release", "mqtt_load")
N = 100_000
ROUNDS = 3  # interleaved; medians reported (a shared VM's rate varies by half between runs)


def counting_subscriber(port, topic, count):
    """mosquitto_sub (C) at QoS 1 that exits after `count` messages: fast enough not to be the
    bottleneck it measures."""
    p = subprocess.Popen(["mosquitto_sub", "-h", "127.0.0.1", "-p", str(port), "-t", topic,
                          "-q", "1", "-C", str(count)], stdout=subprocess.DEVNULL)
    time.sleep(0.5)  # subscribed before anything is published
    return p


def publish(port, count):
    return subprocess.run([LOAD, "127.0.0.1", str(port), str(count), "0", "2000"],
                          capture_output=True, text=True, check=True)


def ceiling(broker):
    """The broker's own QoS 1 pub -> sub rate for the same stream, and its CPU use."""
    sub = counting_subscriber(broker.port, "sensor/#", N)
    cpu0 = cpu_seconds(broker.proc.pid)
    t0 = time.perf_counter()
    publish(broker.port, N)
    sub.wait(120)
    elapsed = time.perf_counter() - t0
    return N / elapsed, (cpu_seconds(broker.proc.pid) - cpu0) / elapsed


def relay(broker, work):
    config = os.path.join(work, "config.yaml")
    with open(config, "w") as f:
        f.write(f"""
sources:
  - type: mqtt
    uri: "{broker.uri}"
    topic: "sensor/+/temperature"
    client_id: bench-relay-in
sinks:
  - type: mqtt
    uri: "{broker.uri}"
    topic: "out/{{topic.2}}"
    client_id: bench-relay-out
    max_in_flight: 20
queue:
  data_dir: "{os.path.join(work, 'data')}"
""")
    p = subprocess.Popen([RELEASE_BIN, "--config", config, "--filter",
                          os.path.join(ROOT, "examples/seed/filter.lua"), "--log-level", "warn"],
                         cwd=work, stderr=subprocess.DEVNULL)
    time.sleep(1.0)
    expected = sum(1 for i in range(N) if -40 <= -60 + (i * 7919 % 2100) / 10.0 <= 125)
    try:
        sub = counting_subscriber(broker.port, "out/#", expected)
        cpu0, broker_cpu0 = cpu_seconds(p.pid), cpu_seconds(broker.proc.pid)
        t0 = time.perf_counter()
        publish(broker.port, N)
        sub.wait(180)
        elapsed = time.perf_counter() - t0
        cpu = cpu_seconds(p.pid) - cpu0
        broker_busy = (cpu_seconds(broker.proc.pid) - broker_cpu0) / elapsed
    finally:
        p.terminate()
        p.wait(30)
    return N / elapsed, expected, cpu, broker_busy


def main():
    broker = Broker(extra="max_inflight_messages 0\n").start()
    work = tempfile.mkdtemp(prefix="seedance-bench-relay-")
    ceilings, relays = [], []
    try:
        for _ in range(ROUNDS):
            ceilings.append(ceiling(broker))
            relays.append(relay(broker, work))
    finally:
        broker.stop()
    med = statistics.median
    broker_eps, ceiling_busy = med(c[0] for c in ceilings), med(c[1] for c in ceilings)
    relay_eps, cpu, relay_busy = (med(r[0] for r in relays), med(r[2] for r in relays),
                                  med(r[3] for r in relays))
    expected = relays[0][1]
    print(json.dumps({
        "benchmark": "mqtt_relay",
        "job": "MQTT QoS 1 -> filter.lua -> MQTT QoS 1 (sink defaults: max_in_flight 20), "
               "durable queue, fsync 100ms, one mosquitto on loopback",
        "published": N,
        "rounds": ROUNDS,
        "ratio_each_round": [round(r[0] / c[0], 3) for c, r in zip(ceilings, relays)],
        "relayed": expected,
        "relay_eps": round(relay_eps),
        "broker_ceiling_msgs": round(broker_eps),
        "ratio": round(relay_eps / broker_eps, 3),
        # The broker moves each message twice in the ceiling (in, out) and up to four times in
        # the relay (in, to Seedance, from Seedance, out): the ratio per message the broker moves.
        "ratio_per_broker_hop": round(relay_eps / broker_eps * (2 * N + 2 * expected) / (2 * N), 3),
        "cpu_s_per_100k": round(cpu / N * 100_000, 3),
        # mosquitto is one thread: near 1.0 it is the bottleneck. In the relay it carries each
        # message twice (in to Seedance, out from it) plus the subscriber's copy.
        "broker_busy_ceiling": round(ceiling_busy, 2),
        "broker_busy_relay": round(relay_busy, 2),
    }))


if __name__ == "__main__":
    main()
