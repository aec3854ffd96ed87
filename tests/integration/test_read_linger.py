"""The MQTT source's read_linger (docs/mqtt.md, "Batching in time"): at a steady rate the
messages that arrive during the linger are taken in as one batch, so the process wakes once per
linger instead of once per message; nothing is lost or reordered on the way."""
import json
import time

from testing.mqtt_publish import publish_all
from testing.proc_stats import context_switches
from testing.seedance_process import Seedance
from testing.waiting import wait_until

N = 1500
RATE = 500  # messages per second: 2 ms apart, so a 20 ms linger gathers about 10


def run(broker, tmp_path, linger):
    out = tmp_path / f"out-{linger}.ndjson"
    work = tmp_path / f"work-{linger}"
    work.mkdir()
    sd = Seedance(f"""
sources:
  - type: mqtt
    uri: "{broker.uri}"
    topic: "sensor/#"
    client_id: linger-{linger}
    read_linger: {linger}
sinks:
  - type: file
    path: "{out}"
""", workdir=str(work)).start()
    try:
        assert sd.wait_log("connected to"), sd.stderr()
        time.sleep(0.3)
        before = context_switches(sd.proc.pid)
        start = time.monotonic()
        msgs = [("sensor/a", json.dumps({"id": i})) for i in range(N)]
        # Paced: message i leaves at start + i / RATE.
        publish_all(broker.port, msgs, pace=lambda i: time.sleep(
            max(0.0, start + (i + 1) / RATE - time.monotonic())))

        def lines():
            return out.read_text().splitlines() if out.exists() else []
        assert wait_until(lambda: len(lines()) >= N, 30), f"{len(lines())} of {N} arrived"
        switches = context_switches(sd.proc.pid) - before
        ids = [json.loads(line)["payload"]["id"] for line in lines()]  # the file sink's envelope
        assert ids == list(range(N)), "lost, repeated or reordered messages"
        return switches / N
    finally:
        sd.stop()


def test_a_linger_takes_messages_in_batches(broker, tmp_path):
    at_once = run(broker, tmp_path, "0s")
    lingering = run(broker, tmp_path, "20ms")
    # At 500 msg/s each message wakes the loop and the processing thread when read at once
    # (4.5-5.2 switches per message measured here); with a 20 ms linger about ten share one
    # wake-up of each (0.8-1.2, the sanitizer build the most).
    assert lingering * 2 < at_once, (
        f"{lingering:.2f} context switches per message with a 20 ms linger, {at_once:.2f} without")
    assert lingering < 2.0, f"{lingering:.2f} context switches per message with a linger"
