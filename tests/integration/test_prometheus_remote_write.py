"""The prometheus_remote_write sink against a real Prometheus (Debian's 2.42, its remote-write
receiver on, loopback): samples read back value for value with their labels; events outside
Prometheus's data model and an out-of-order sample routed to `rejected` with the reason while
the rest of their batch is written; and node-exporter scraped every second through a
Prometheus outage and a kill -9 of Seedance with no gap in the stored series
(sinks/prometheus/remote_write_sink.h)."""
import json
import os
import time

import pytest

from testing.mqtt_publish import publish_all
from testing.prometheus_server import NodeExporter, Prometheus
from testing.seedance_process import Seedance, validate
from testing.waiting import wait_until

# Ten minutes ago, in whole ms: inside the watermark's lateness and Prometheus's head block.
BASE_MS = (int(time.time()) - 600) * 1000


@pytest.fixture
def prometheus():
    server = Prometheus().start()
    yield server
    server.remove()


def config(broker, prometheus, tmp_path, sink_extra=""):
    return f"""
sources:
  - type: mqtt
    uri: "{broker.uri}"
    topic: "site/#"
    qos: 1
processors:
  - type: watermark
    time_field: ts
    time_format: ms
    allowed_lateness: 1000h
sinks:
  - type: prometheus_remote_write
    endpoint: "{prometheus.write_url}"
    labels:
      site: "{{topic.2}}"
    retry_initial: 20ms
    retry_max: 300ms
{sink_extra}
  - type: file
    name: rejected
    path: {tmp_path}/rejected.ndjson
    inputs: [rejected]
"""


def rejected_lines(tmp_path):
    f = tmp_path / "rejected.ndjson"
    return [json.loads(l) for l in f.read_text().splitlines()] if f.exists() else []


def test_samples_are_read_back_with_their_labels_and_values(broker, prometheus, tmp_path):
    sd = Seedance(config(broker, prometheus, tmp_path)).start()
    try:
        assert sd.wait_log("connected to"), sd.stderr()
        time.sleep(0.3)
        msgs = []
        for i in range(300):
            p = {"name": "room_temperature_celsius", "labels": {"room": f"r{i % 3}"},
                 "value": i * 0.5 - 20, "ts": BASE_MS + i * 1000}
            if i == 7:
                p["name"] = "room-temperature"  # not a Prometheus name
            if i == 8:
                p["labels"] = {"bad label": "x"}
            if i == 9:
                p["value"] = "warm"
            if i == 10:
                p["value"] = "+Inf"
            msgs.append(("site/north/x", json.dumps(p)))
        publish_all(broker.port, msgs)
        at = BASE_MS / 1000 + 400
        assert wait_until(lambda: sum(len(v) for v in prometheus.raw_samples(
            "room_temperature_celsius", at).values()) >= 297, 30), sd.stderr()[-3000:]
        series = prometheus.raw_samples("room_temperature_celsius", at)
        assert len(series) == 3
        for key, samples in series.items():
            labels = dict(key)
            assert labels["site"] == "north" and labels["__name__"] == "room_temperature_celsius"
            r = int(labels["room"][1:])
            want = [(BASE_MS + i * 1000, float("inf") if i == 10 else i * 0.5 - 20)
                    for i in range(300) if i % 3 == r and i not in (7, 8, 9)]
            assert samples == want, labels
        assert wait_until(lambda: len(rejected_lines(tmp_path)) == 3, 10)
        reasons = {l["payload"]["ts"] - BASE_MS: l["headers"]["reason"]
                   for l in rejected_lines(tmp_path)}
        assert "metric name \"room-temperature\" is not valid" in reasons[7000], reasons
        assert "label name \"bad label\"" in reasons[8000], reasons
        assert "no value" in reasons[9000], reasons
    finally:
        assert sd.stop() == 0


def test_an_out_of_order_sample_goes_to_rejected_and_its_batch_is_written(broker, prometheus,
                                                                          tmp_path):
    # No out-of-order window: Prometheus refuses the whole request for one old sample (400).
    sd = Seedance(config(broker, prometheus, tmp_path, "    batch_linger: 500ms")).start()
    try:
        assert sd.wait_log("connected to"), sd.stderr()
        time.sleep(0.3)
        first = [("site/north/x", json.dumps({"name": "g", "labels": {"k": "a"}, "value": i,
                                              "ts": BASE_MS + 100_000 + i * 1000}))
                 for i in range(10)]
        publish_all(broker.port, first)
        at = BASE_MS / 1000 + 400
        assert wait_until(lambda: sum(len(v) for v in prometheus.raw_samples("g", at).values())
                          == 10, 20), sd.stderr()[-3000:]
        # One batch: other series, and series k=a 50 s before what Prometheus holds.
        second = [("site/north/x", json.dumps({"name": "g", "labels": {"k": f"b{i}"}, "value": i,
                                               "ts": BASE_MS + i * 1000})) for i in range(20)]
        second.insert(11, ("site/north/x", json.dumps({"name": "g", "labels": {"k": "a"},
                                                       "value": 99, "ts": BASE_MS + 50_000})))
        publish_all(broker.port, second)
        assert wait_until(lambda: len(rejected_lines(tmp_path)) == 1, 20), sd.stderr()[-3000:]
        line = rejected_lines(tmp_path)[0]
        assert line["payload"]["value"] == 99
        assert "HTTP 400" in line["headers"]["reason"], line
        assert "out of order" in line["headers"]["reason"], line
        series = prometheus.raw_samples("g", at)
        assert len(series) == 21
        assert series[frozenset({"__name__": "g", "k": "a", "site": "north"}.items())] == \
            [(BASE_MS + 100_000 + i * 1000, float(i)) for i in range(10)]
        assert sd.wait_log("prometheus refused a sample of the batch")
    finally:
        assert sd.stop() == 0


def test_node_exporter_through_an_outage_and_a_kill_9_leaves_no_gap(tmp_path):
    """The issue's acceptance scaled to CI: scraped every second; Prometheus stopped for 20 s
    and Seedance killed with SIGKILL in the middle of it. The issue's 3 minutes:
    SEEDANCE_PROMETHEUS_OUTAGE_S=180 (run by hand; docs/prometheus.md)."""
    outage = float(os.environ.get("SEEDANCE_PROMETHEUS_OUTAGE_S", "20"))
    prometheus = Prometheus(out_of_order_window="30m").start()
    exporter = NodeExporter().start()
    cfg = f"""
sources:
  - type: prometheus_scrape
    name: node
    targets: ["{exporter.url}"]
    interval: 1s
    timeout: 900ms
sinks:
  - type: prometheus_remote_write
    endpoint: "{prometheus.write_url}"
    retry_initial: 50ms
    retry_max: 1s
"""
    work = tmp_path / "sd"
    sd = Seedance(cfg, workdir=str(work)).start()
    sd2 = None
    try:
        start = time.time()
        time.sleep(5)
        prometheus.stop()
        time.sleep(outage / 2)
        sd.kill()  # mid-outage: what was scraped waits in the queue on disk
        sd2 = Seedance(cfg, workdir=str(work)).start()
        time.sleep(outage / 2)
        prometheus.start()
        time.sleep(5)
        end = time.time()
        # Everything scraped until `end` arrives (the queue drains).
        assert wait_until(lambda: last_up_ms(prometheus, end) >= (end - 1.5) * 1000, 30), \
            sd2.stderr()[-3000:]
        ups = prometheus.raw_samples('up{job="node"}', end, window="5m")
        assert len(ups) == 1
        times = [t for t, v in next(iter(ups.values()))]
        assert all(v == 1.0 for t, v in next(iter(ups.values())))
        assert times[0] <= (start + 1.5) * 1000
        gaps = [b - a for a, b in zip(times, times[1:])]
        print(f"{len(times)} scrapes over {(times[-1] - times[0]) / 1000:.1f} s, "
              f"longest gaps (ms): {sorted(gaps)[-3:]}")
        # One scrape a second; across the kill, the restart's first scrape follows the last
        # scrape before it by less than a second plus the restart.
        assert max(gaps) < 2000, sorted(gaps)[-5:]
        # A node-exporter series as scraped: every scrape's sample, none twice.
        load = prometheus.raw_samples("node_load1", end, window="5m")
        assert len(load) == 1
        assert [t for t, v in next(iter(load.values()))] == times
    finally:
        if sd2 is not None:
            assert sd2.stop() == 0
        sd.kill()
        exporter.stop()
        prometheus.remove()


def last_up_ms(prometheus, at):
    try:
        ups = prometheus.raw_samples('up{job="node"}', at, window="5m")
    except OSError:
        return 0
    return max((s[-1][0] for s in ups.values()), default=0)


@pytest.mark.parametrize("section,key,message", [
    ("compression: gzip", "compression", "remote write sends snappy"),
    ("labels: {\"__tenant\": x}", "labels", "\"__tenant\" is not a label name"),
    ("labels: {\"a-b\": x}", "labels", "\"a-b\" is not a label name"),
    ("metric: \"{nope}\"", "metric", "unknown placeholder {nope}"),
    ("value: \"a..b\"", "value", "value:"),
])
def test_bad_sections_name_the_file_line_and_key(tmp_path, section, key, message):
    cfg = tmp_path / "c.yaml"
    cfg.write_text("sources:\n  - {type: generate, payload: '{}'}\nsinks:\n"
                   "  - type: prometheus_remote_write\n"
                   f"    endpoint: http://127.0.0.1:9/api/v1/write\n    {section}\n")
    r = validate(cfg)
    assert r.returncode == 2, r.stderr
    assert "c.yaml:6:" in r.stderr and message in r.stderr, r.stderr
