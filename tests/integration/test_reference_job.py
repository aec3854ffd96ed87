"""The reference job end to end: MQTT (real mosquitto) → the seed's filter.lua → HTTP receiver.

10,000 QoS 1 messages on sensor/<id>/temperature, temperatures spread over −60..150 °C, some
non-JSON: exactly the in-range ones arrive, bodies byte-for-byte intact, none twice; the
non-JSON ones are counted and routed to the error output; /metrics passes promtool and its
counters match what was sent.
"""
import json
import os
import subprocess

from testing.ports import free_port
from testing.mqtt_publish import publish_all
from testing.seedance_process import SOURCE_DIR, Seedance, metric, scrape, seed_job_config

SEED_FILTER = os.path.join(SOURCE_DIR, "examples", "seed", "filter.lua")
N = 10_000


def make_messages():
    msgs, expected = [], {}
    bad = 0
    for i in range(N):
        topic = f"sensor/dev{i % 37}/temperature"
        if i % 97 == 13:
            msgs.append((topic, f"not json #{i}".encode()))
            bad += 1
            continue
        t = round(-60 + 210 * ((i * 7919) % N) / N, 2)
        payload = json.dumps({"id": i, "device": f"dev{i % 37}", "temperature": t, "unit": "C"},
                             separators=(",", ":"))
        if i % 5 == 0:  # some with spaces, to see that bytes are kept, not re-serialized
            payload = payload.replace(",", ", ")
        msgs.append((topic, payload.encode()))
        if -40 <= t <= 125:
            expected[i] = payload
    return msgs, expected, bad


def raw_items(body):
    """The raw text of each element of a JSON array body, exactly as sent."""
    text = body.decode()
    assert text[0] == "[" and text[-1] == "]", text[:80]
    dec = json.JSONDecoder()
    items, pos, inner = [], 1, text[:-1]
    while pos < len(inner):
        _, end = dec.raw_decode(inner, pos)
        items.append(inner[pos:end])
        pos = end + 1  # skip the comma
    return items


def test_ten_thousand_messages_exactly_the_in_range_ones_arrive(broker, receiver, tmp_path):
    metrics_port = free_port()
    errors = tmp_path / "errors.ndjson"
    config = seed_job_config(broker, receiver, more_sinks=f"""\
  - type: file
    name: errors
    path: {errors}
    inputs: [error]
""", rest=f"metrics:\n  listen: 127.0.0.1:{metrics_port}\n")
    sd = Seedance(config, filter_path=SEED_FILTER).start()
    try:
        assert sd.wait_log(r"connected to 127\.0\.0\.1"), sd.stderr()
        msgs, expected, bad = make_messages()
        publish_all(broker.port, msgs, qos=1)
        assert receiver.wait_for_events(len(expected), timeout=60), (
            f"{len(receiver.accepted_events())} of {len(expected)} arrived\n" + sd.stderr()[-3000:])

        got = {}
        for body in receiver.accepted_bodies():
            for raw in raw_items(body):
                i = json.loads(raw)["id"]
                assert i not in got, f"event {i} delivered twice"
                got[i] = raw
        assert set(got) == set(expected)
        for i, raw in got.items():
            assert raw == expected[i], f"body of {i} changed: {raw!r} != {expected[i]!r}"

        lines = [json.loads(l) for l in errors.read_text().splitlines()]
        assert len(lines) == bad
        assert all(l["headers"]["output"] == "error" for l in lines)
        assert all("invalid JSON" in l["headers"]["reason"] for l in lines)
        assert all(l["payload"].startswith("not json #") for l in lines)

        text = scrape(f"http://127.0.0.1:{metrics_port}/metrics")
        check = subprocess.run(["promtool", "check", "metrics"], input=text.encode(),
                               capture_output=True)
        assert check.returncode == 0, check.stdout.decode() + check.stderr.decode()
        assert metric(text, "seedance_events_in_total", component="mqtt") == N
        assert metric(text, "seedance_events_dropped_total", component="mqtt",
                      reason="invalid_json") == bad
        assert metric(text, "seedance_events_in_total", component="filter") == N - bad
        assert metric(text, "seedance_events_dropped_total", component="filter",
                      reason="filtered") == N - bad - len(expected)
        assert metric(text, "seedance_events_out_total", component="http") == len(expected)
        assert metric(text, "seedance_events_out_total", component="errors") == bad
        assert metric(text, "seedance_output_events_total", output="error") == bad
        assert metric(text, "seedance_mqtt_connected", component="mqtt") == 1
        assert scrape(f"http://127.0.0.1:{metrics_port}/healthz").strip() == "ok"
    finally:
        assert sd.stop() == 0, sd.stderr()[-3000:]
