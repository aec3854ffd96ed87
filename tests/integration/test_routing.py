"""Routing without code: a sink's `topics:` (MQTT filters) picks the events it takes, in the
durable and in the memory buffer. Real mosquitto, real files."""
import json

import pytest

from testing.broker import Broker
from testing.mqtt_publish import publish_all
from testing.seedance_process import Seedance
from testing.waiting import wait_until


def lines(path):
    try:
        with open(path) as f:
            return [json.loads(line) for line in f if line.strip()]
    except FileNotFoundError:
        return []


@pytest.mark.parametrize("buffer", ["disk", "memory"])
def test_sinks_take_the_topics_they_match(tmp_path, buffer):
    broker = Broker().start()
    temps, rest, everything = tmp_path / "t.ndjson", tmp_path / "r.ndjson", tmp_path / "all.ndjson"
    cfg = f"""
sources:
  - type: mqtt
    uri: "{broker.uri}"
    topic: "sensor/#"
sinks:
  - type: file
    name: temperatures
    topics: ["sensor/+/temperature"]
    path: "{temps}"
    encoding: envelope
  - type: file
    name: rest
    topics: ["sensor/+/humidity", "sensor/x/#"]
    path: "{rest}"
    encoding: envelope
  - type: file
    name: everything
    path: "{everything}"
    encoding: envelope
queue:
  buffer: {buffer}
"""
    sd = Seedance(cfg, workdir=str(tmp_path)).start()
    try:
        assert sd.wait_log("connected to"), sd.stderr()
        topics = ["sensor/a/temperature", "sensor/b/humidity", "sensor/x/temperature",
                  "sensor/x/p/q", "sensor/c/pressure"]
        n = 500
        publish_all(broker.port, [(topics[i % 5], json.dumps({"n": i})) for i in range(n)])
        assert wait_until(lambda: len(lines(everything)) == n, 20), len(lines(everything))

        def ns(path, expect):
            assert wait_until(lambda: len(lines(path)) == expect, 10), (path, len(lines(path)))
            return sorted(e["payload"]["n"] for e in lines(path))
        # sensor/x/temperature matches both filters' sinks; sensor/c/pressure only "everything".
        assert ns(temps, 200) == [i for i in range(n) if i % 5 in (0, 2)]
        assert ns(rest, 300) == [i for i in range(n) if i % 5 in (1, 2, 3)]
    finally:
        assert sd.stop() == 0
        broker.stop()
