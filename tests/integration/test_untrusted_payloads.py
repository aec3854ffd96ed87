"""Untrusted payloads through a real mosquitto broker into the reference job (issue 13,
findings 1 and 2): a payload of a million '[' (it crashed the process in the JSON check) and
JSON nested 10,000 levels (it made LuaJIT panic in the JSON→Lua bridge) each go to the error
output with their reason; the process keeps running and the next event is delivered."""
import json
import os

from testing.mqtt_publish import publish_all
from testing.seedance_process import SOURCE_DIR, Seedance
from testing.waiting import wait_until

SEED_FILTER = os.path.join(SOURCE_DIR, "examples", "seed", "filter.lua")


def test_deep_and_huge_nesting_go_to_error_and_the_pipeline_goes_on(broker, receiver, tmp_path):
    errors = tmp_path / "errors.ndjson"
    config = f"""
sources:
  - type: mqtt
    uri: "{broker.uri}"
    topic: "sensor/+/temperature"
sinks:
  - type: http
    endpoint: "{receiver.url}/v1/metrics"
    method: POST
  - type: file
    name: errors
    path: {errors}
    inputs: [error]
"""
    sd = Seedance(config, filter_path=SEED_FILTER).start()
    try:
        assert sd.wait_log(r"connected to 127\.0\.0\.1"), sd.stderr()
        topic = "sensor/d1/temperature"
        publish_all(broker.port, [
            (topic, b"[" * 1_000_000),
            (topic, (b"[" * 10_000) + (b"]" * 10_000)),
            (topic, b'{"temperature": 21.5, "id": 7}'),
        ], qos=1)
        assert receiver.wait_for_events(1, timeout=30), sd.stderr()[-3000:]
        assert wait_until(lambda: errors.exists() and len(errors.read_text().splitlines()) == 2,
                          timeout=30), sd.stderr()[-3000:]
        lines = [json.loads(l) for l in errors.read_text().splitlines()]
        assert all("nested deeper than 128 levels" in l["headers"]["reason"] for l in lines), lines
        assert sd.proc.poll() is None, "the process died"
    finally:
        assert sd.stop() == 0, sd.stderr()[-3000:]
