"""Sinks on the same input: events/s and CPU s per 100k events for HTTP (none/gzip/zstd), MQTT, InfluxDB, NATS, Kafka (mock), Prometheus remote write."""
# One input for every sink: the generate source, 200,000 sensor readings as fast as the sink
# takes them, through the durable queue (the default). Per sink: delivered events/s (start to
# the last event at the far side), Seedance's CPU seconds per 100k events (user + system,
# /proc), its RSS once every event was delivered (what it still holds: the NATS sink's leak of
# every published message showed there, 100.6 MB against 10.4 MB after the fix, 2026-12-07),
# and for the HTTP-based ones the request bytes per event on the wire (what compression buys).
# The far sides are real and local: the test receiver, mosquitto with bench/mqtt_count
# subscribed, influxd, a one-node nats-server with JetStream (a stream of one
# replica, file storage), librdkafka's mock cluster (3 brokers; Debian packages no Kafka),
# Debian's prometheus with its remote-write receiver (two samples per event).
# `bench/run sinks NAME...` runs only the sinks named (e.g. prometheus_remote_write).
# events/s is bounded by the far side on this 2-core machine (influxd indexing, the Python
# receiver decompressing, the mock cluster); the CPU is Seedance's own.
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

from common import RELEASE_BIN, ROOT, Broker, Receiver, cpu_seconds, free_port, rss_kb

from testing.influxd import Influxd  # noqa: E402
from testing.kafka_mock import KafkaMock  # noqa: E402
from testing.nats_cluster import NatsCluster  # noqa: E402
from testing.prometheus_server import Prometheus  # noqa: E402
from testing.seedance_process import metric, scrape  # noqa: E402

N = 200_000
ROUNDS = 2
COUNT = os.path.join(ROOT, "build-release", "mqtt_count")
PAYLOAD = ('{"sent_ns":{now_ns},"seq":{n},"device":"sensor-7","site":"north",'
           '"temperature":21.5,"humidity":40.25,"ok":true}')


METRICS_PORT = None  # set in main(): each run serves /metrics there (the kafka case counts by it)


def run(sink_section, delivered, wire_bytes=None, span=None):
    """Runs the job with `sink_section`; `delivered()` counts what reached the far side;
    `span()`, when the far side measures it, is the seconds from its first event to its last."""
    work = tempfile.mkdtemp(prefix="seedance-bench-sinks-")
    config = os.path.join(work, "config.yaml")
    with open(config, "w") as f:
        f.write(f"""
sources:
  - type: generate
    payload: '{PAYLOAD}'
    topic: site/north/climate
    count: {N}
    rate: 0
    delay: 500ms
sinks:
{sink_section}
queue:
  data_dir: {os.path.join(work, "data")}
metrics:
  listen: 127.0.0.1:{METRICS_PORT}
""")
    bytes0 = wire_bytes() if wire_bytes else 0
    base = delivered()  # before the start: the MQTT case subscribes here
    p = subprocess.Popen([RELEASE_BIN, "--config", config, "--log-level", "warn"], cwd=work)
    try:
        time.sleep(0.4)
        cpu0 = cpu_seconds(p.pid)
        deadline = time.perf_counter() + 180
        first = None  # when the first events had arrived: the rate runs from there
        while (got := delivered() - base) < N and time.perf_counter() < deadline:
            if first is None and got > 0:
                first = (time.perf_counter(), got)
            time.sleep(0.005)
        seconds = time.perf_counter() - first[0] if first else float("inf")
        cpu = cpu_seconds(p.pid) - cpu0
        rss_end = rss_kb(p.pid)  # every event delivered: what is still held (a leak shows here)
    finally:
        p.terminate()
        p.wait(30)
    assert got >= N, f"{got} of {N} delivered"
    rate = N / span() if span else (N - first[1]) / seconds
    out = {"events_per_s": round(rate),
           "cpu_s_per_100k": round(cpu * 100_000 / N, 3),
           "rss_mb_after": round(rss_end / 1024, 1)}
    if wire_bytes:
        out["bytes_per_event"] = round((wire_bytes() - bytes0) / N, 1)
    return out


def median_of(rounds):
    return {k: (statistics.median(r[k] for r in rounds) if rounds[0][k] is not None else None)
            for k in rounds[0]}


def http_cases(receiver):
    cases = {}
    for compression in ("none", "gzip", "zstd"):
        section = f"""  - type: http
    endpoint: {receiver.url}/in
    compression: {compression}
"""
        cases[f"http_{compression}"] = (section, lambda: receiver.counted,
                                        lambda: receiver.wire_bytes, None)
    return cases


def mqtt_case(broker):
    section = f"""  - type: mqtt
    uri: {broker.uri}
    topic: out/climate
    qos: 1
"""
    state = {"sub": None, "seconds": None}

    def delivered():
        # A fresh subscriber per round, started before the first call counts.
        if state["sub"] is None:
            state["sub"] = subprocess.Popen(
                [COUNT, "127.0.0.1", str(broker.port), "out/#", "1", str(N), "120"],
                stdout=subprocess.PIPE, text=True)
            assert state["sub"].stdout.readline().strip() == "subscribed"
            return 0
        if state["sub"].poll() is None:
            return 0
        result = json.loads(state["sub"].stdout.readline())
        state["sub"] = None
        state["seconds"] = result["seconds"]
        return result["received"]

    return section, delivered, None, lambda: state["seconds"]


def influx_case(influxd):
    section = f"""  - type: influxdb
    endpoint: {influxd.url}
    database: bench
    measurement: "{{topic.3}}"
    tags: {{site: "{{payload.site}}", device: "{{payload.device}}"}}
    fields: [temperature, humidity, ok, seq]
    batch_size: 5000
"""
    def delivered():
        rows = influxd.rows("SELECT count(seq) FROM climate", "bench")
        return rows[0]["count"] if rows else 0

    return section, delivered


def nats_case(server, round_number):
    stream = f"BENCH{round_number}"
    section = f"""  - type: nats
    servers: [{server.urls[0]}]
    subject: "bench{round_number}.{{topic.2}}"
    stream: {stream}
    create_stream: {{subjects: ["bench{round_number}.>"]}}
"""

    def delivered():
        try:
            return server.count(stream, f"bench{round_number}.>", timeout=5,
                                info_only=True)["stream_msgs"]
        except RuntimeError:  # the stream is made when Seedance starts
            return 0

    return section, delivered


def kafka_case(kafka):
    """librdkafka's mock cluster (3 brokers, replication 3, in one process: events/s is the
    mock's, not a Kafka cluster's). Delivered = the sink's delivered events (every record's
    delivery report a success); the mock keeps only its partitions' last few MB, so the topic
    is not read back here (tests/integration/test_kafka_sink.py reads every record back)."""
    section = f"""  - type: kafka
    brokers: [{",".join(kafka.brokers)}]
    topic: {kafka.topic}
    key: "{{payload.device}}"
"""

    def delivered():
        try:
            return int(metric(scrape(f"http://127.0.0.1:{METRICS_PORT}/metrics"),
                              "seedance_events_out_total", component="kafka"))
        except OSError:
            return 0

    return section, delivered


def remote_write_case(prometheus):
    """Two series (temperature, humidity) of one device: each event two samples. Delivered = the
    sink's delivered events (a request is delivered once Prometheus answered 2xx; the events of
    one millisecond are samples at the same time with the same value, which Prometheus takes as
    one, so its own sample count is not the event count)."""
    section = f"""  - type: prometheus_remote_write
    endpoint: {prometheus.write_url}
    metric: climate
    label_fields: [device, site]
    fields: [temperature, humidity]
"""

    def delivered():
        try:
            return int(metric(scrape(f"http://127.0.0.1:{METRICS_PORT}/metrics"),
                              "seedance_events_out_total", component="prometheus_remote_write"))
        except OSError:
            return 0

    return section, delivered


def main():
    only = set(sys.argv[1:])
    receiver = Receiver().start()
    receiver.count_only = True
    broker = Broker().start()
    influxd = Influxd().start()
    nats = NatsCluster(nodes=1).start()
    kafka = KafkaMock(topic="bench", partitions=3, brokers=3)
    prometheus = Prometheus().start()
    global METRICS_PORT
    METRICS_PORT = free_port()
    results = {}
    try:
        cases = http_cases(receiver)
        cases["mqtt_qos1"] = mqtt_case(broker)
        rounds = {name: [] for name in cases}
        rounds["influxdb"] = []
        rounds["nats"] = []
        rounds["kafka_mock"] = []
        rounds["prometheus_remote_write"] = []
        if only:
            unknown = only - set(rounds)
            assert not unknown, f"no sink case named {sorted(unknown)}: {sorted(rounds)}"
            cases = {k: v for k, v in cases.items() if k in only}
            rounds = {k: v for k, v in rounds.items() if k in only}
        for r in range(ROUNDS):
            for name, (section, delivered, wire, span) in cases.items():
                rounds[name].append(run(section, delivered, wire, span))
            if "influxdb" in rounds:
                # A new database per round: the points of the last round would be overwritten
                # (same series and times are not guaranteed), and the count must start at 0.
                influxd.query("DROP DATABASE bench")
                influxd.query("CREATE DATABASE bench")
                section, delivered = influx_case(influxd)
                rounds["influxdb"].append(run(section, delivered))
            if "nats" in rounds:
                section, delivered = nats_case(nats, r)
                rounds["nats"].append(run(section, delivered))
            if "kafka_mock" in rounds:
                section, delivered = kafka_case(kafka)
                rounds["kafka_mock"].append(run(section, delivered))
            if "prometheus_remote_write" in rounds:
                section, delivered = remote_write_case(prometheus)
                rounds["prometheus_remote_write"].append(run(section, delivered))
        for name, rs in rounds.items():
            results[name] = median_of(rs)
            print(f"{name:>10}: {results[name]}", file=sys.stderr)
    finally:
        receiver.stop()
        broker.stop()
        influxd.stop()
        nats.stop()
        kafka.stop()
        prometheus.remove()
    print(json.dumps({"events": N, "rounds": ROUNDS, "sinks": results}))


if __name__ == "__main__":
    main()
