"""Routing: a sink's `topics:` (MQTT filters) picks the events it takes, and a script sends
events to named outputs that sinks list in `inputs:`, in the durable and in the memory buffer.
Real mosquitto, real files."""
import json
import time

import pytest

from testing.broker import Broker
from testing.mqtt_publish import publish_all
from testing.ndjson import complete_lines as lines
from testing.seedance_process import Seedance, validate
from testing.waiting import wait_until


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


@pytest.mark.parametrize("buffer", ["disk", "memory"])
def test_a_script_sends_events_to_a_named_output(tmp_path, buffer):
    broker = Broker().start()
    alerts, normal = tmp_path / "alerts.ndjson", tmp_path / "normal.ndjson"
    cfg = f"""
sources:
  - type: mqtt
    uri: "{broker.uri}"
    topic: "sensor/#"
processors:
  - type: lua
    outputs: [alerts]
    code: |
      function process(event)
        if event.payload.t > 100 then return event, "alerts" end
        return event
      end
sinks:
  - type: file
    name: alerts
    inputs: [alerts]
    path: "{alerts}"
    encoding: envelope
  - type: file
    name: normal
    path: "{normal}"
    encoding: envelope
queue:
  buffer: {buffer}
"""
    sd = Seedance(cfg, workdir=str(tmp_path)).start()
    try:
        assert sd.wait_log("connected to"), sd.stderr()
        n = 300
        publish_all(broker.port, [("sensor/a", json.dumps({"n": i, "t": i})) for i in range(n)])
        assert wait_until(lambda: len(lines(alerts)) + len(lines(normal)) == n, 20)
        time.sleep(0.3)
        assert sorted(e["payload"]["n"] for e in lines(alerts)) == list(range(101, n))
        assert sorted(e["payload"]["n"] for e in lines(normal)) == list(range(0, 101))
        assert all(e["headers"]["output"] == "alerts" for e in lines(alerts))
    finally:
        assert sd.stop() == 0
        broker.stop()


def test_validate_refuses_an_input_nobody_produces_and_warns_of_an_unconsumed_output(tmp_path):
    cfg = tmp_path / "c.yaml"
    head = ("sources:\n  - {type: generate, payload: '{}'}\nprocessors:\n  - type: lua\n"
            "    outputs: [alerts, audit]\n    code: 'function process(e) return e end'\nsinks:\n")
    cfg.write_text(head + "  - {type: stdout, inputs: [alerts]}\n")
    r = validate(cfg)
    assert r.returncode == 0, r.stderr
    assert 'no sink consumes the output "audit"' in r.stderr, r.stderr
    cfg.write_text(head + "  - {type: stdout, inputs: [alarms]}\n")
    r = validate(cfg)
    assert r.returncode == 2
    assert 'c.yaml:8:28: sinks[0].inputs: "alarms" is not an output' in r.stderr, r.stderr
