"""The MQTT source's read_linger (docs/mqtt.md, "Batching in time"): at a steady rate the
messages that arrive during the linger are taken in as one batch, so the process wakes once per
batch instead of once per message; the wait follows the rate (about 14 messages' time) with
read_linger as its most; nothing is lost or reordered on the way."""
import datetime
import json
import statistics
import threading
import time

from testing.mqtt_publish import publish_all
from testing.proc_stats import context_switches
from testing.seedance_process import Seedance
from testing.waiting import wait_until

N = 1500
RATE = 500  # messages per second: 2 ms apart, so a 20 ms linger gathers about 10


def watch(out, n, start, rate, delays):
    """Polls the file every 2 ms; appends, for each line that appeared, how long after its
    message was due to leave the publisher it was seen."""
    seen = 0
    deadline = time.monotonic() + 30
    while seen < n and time.monotonic() < deadline:
        count = len(out.read_text().splitlines()) if out.exists() else 0
        now = time.monotonic()
        for i in range(seen, count):
            delays.append(now - (start + (i + 1) / rate))
        seen = max(seen, count)
        time.sleep(0.002)


def start_job(broker, work, client_id, linger, qos, out, batch_linger="0s"):
    """MQTT source (`read_linger`, `qos`) to a file sink (`batch_linger`), started."""
    return Seedance(f"""
sources:
  - type: mqtt
    uri: "{broker.uri}"
    topic: "sensor/#"
    client_id: {client_id}
    read_linger: {linger}
    qos: {qos}
sinks:
  - type: file
    path: "{out}"
    batch_linger: {batch_linger}
""", workdir=str(work)).start()


def run(broker, tmp_path, linger, n=N, rate=RATE, delays=None, qos=1, batch_linger="0s"):
    out = tmp_path / f"out-{linger}.ndjson"
    work = tmp_path / f"work-{linger}"
    work.mkdir()
    sd = start_job(broker, work, f"linger-{linger}", linger, qos, out, batch_linger)
    try:
        assert sd.wait_log("connected to"), sd.stderr()
        time.sleep(0.3)
        before = context_switches(sd.proc.pid)
        start = time.monotonic()
        msgs = [("sensor/a", json.dumps({"id": i})) for i in range(n)]
        watcher = None
        if delays is not None:  # when each message shows up in the file, against when it left
            watcher = threading.Thread(target=watch, args=(out, n, start, rate, delays))
            watcher.start()
        # Paced: message i leaves at start + (i + 1) / rate.
        publish_all(broker.port, msgs, pace=lambda i: time.sleep(
            max(0.0, start + (i + 1) / rate - time.monotonic())))

        def lines():
            return out.read_text().splitlines() if out.exists() else []
        assert wait_until(lambda: len(lines()) >= n, 30), f"{len(lines())} of {n} arrived"
        if watcher:
            watcher.join(10)
        switches = context_switches(sd.proc.pid) - before
        ids = [json.loads(line)["payload"]["id"] for line in lines()]  # the file sink's envelope
        assert ids == list(range(n)), "lost, repeated or reordered messages"
        return switches / n
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


def test_the_wait_follows_the_rate_and_read_linger_is_only_its_most(broker, tmp_path):
    # 2,000 msg/s: 14 messages take 7 ms, so each read waits about 7 ms even with a 300 ms
    # read_linger. A fixed 300 ms wait would hold the last messages at least that long. QoS 0:
    # at QoS 1 a read of 20 or more unacknowledged messages is followed by an immediate one.
    delays = []
    per_message = run(broker, tmp_path, "300ms", n=2000, rate=2000, delays=delays, qos=0)
    median = statistics.median(delays)
    # Measured here (debug build, 2 ms polling): 9-11 ms; with a fixed 300 ms wait, 173 ms.
    assert median < 0.06, f"messages took {median * 1000:.0f} ms (median) to arrive"
    assert per_message < 2.0, f"{per_message:.2f} context switches per message: not batched"


def test_a_sinks_batch_linger_counts_from_the_read_lingers_start(broker, tmp_path):
    # 50 msg/s: each read waits its whole 100 ms read_linger. Messages are dated from the start
    # of that wait, so the sink's 100 ms batch_linger has mostly passed when they reach it: the
    # two waits overlap instead of adding up. Measured here: 38-41 ms; dated from the read
    # instead, 131-138 ms.
    delays = []
    run(broker, tmp_path, "100ms", n=150, rate=50, delays=delays, qos=0, batch_linger="100ms")
    median = statistics.median(delays)
    assert median < 0.085, f"messages took {median * 1000:.0f} ms (median) to arrive"


def test_a_message_after_a_quiet_spell_is_dated_when_it_arrived(broker, tmp_path):
    # Dating from the linger's start holds only for what arrived during the linger: a message
    # that comes a second after the last one is read by a read that waited for it, and its time
    # (the event time, in the file envelope) is when it arrived, not the linger's start.
    out = tmp_path / "out.ndjson"
    sd = start_job(broker, tmp_path, "linger-quiet", "200ms", 0, out)
    try:
        assert sd.wait_log("connected to"), sd.stderr()
        time.sleep(0.3)
        publish_all(broker.port, [("sensor/a", json.dumps({"id": 0}))], qos=0)
        time.sleep(1.0)
        sent = time.time()
        publish_all(broker.port, [("sensor/a", json.dumps({"id": 1}))], qos=0)
        assert wait_until(lambda: out.exists() and len(out.read_text().splitlines()) >= 2, 10)
        second = json.loads(out.read_text().splitlines()[1])
        dated = datetime.datetime.strptime(second["time"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(
            tzinfo=datetime.timezone.utc).timestamp()
        assert dated >= sent - 0.005, f"dated {sent - dated:.3f} s before it was sent"
    finally:
        sd.stop()


def late_message_delay(tmp_path, unacknowledged):
    """A scripted broker sends `unacknowledged` QoS 1 messages in one write, then one more
    100 ms later; returns how long after it was sent that last message reached the file.

    The SUBACK comes 2 s after the SUBSCRIBE and the burst 1 s after it, so the read pacer
    estimates a low rate and its linger is the whole read_linger (600 ms): a read that leaves
    fewer than 20 messages unacknowledged lingers before the next read, one that leaves 20 (the
    broker's in-flight window: it sends nothing more until our PUBACKs) reads at once."""
    import socket
    import struct
    from testing.fake_broker import FakeBroker, connack, publish, suback
    sent = {}

    def script(_index, c):
        c.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        c.send(connack(True))  # the source speaks MQTT 5 by default
        _, body = c.read_packet()  # SUBSCRIBE
        time.sleep(2.0)
        c.send(suback(struct.unpack(">H", body[:2])[0], 1, True))
        time.sleep(1.0)
        c.send(b"".join(publish(b"sensor/a", json.dumps({"id": i}).encode(), qos=1,
                                packet_id=i + 1, v5=True) for i in range(unacknowledged)))
        time.sleep(0.1)
        sent["late"] = time.monotonic()
        c.send(publish(b"sensor/a", json.dumps({"id": unacknowledged}).encode(), qos=1,
                       packet_id=unacknowledged + 1, v5=True))
        c.drain(5)

    fake = FakeBroker(script).start()
    out = tmp_path / f"out-{unacknowledged}.ndjson"
    work = tmp_path / f"work-{unacknowledged}"
    work.mkdir()
    sd = start_job(fake, work, f"window-{unacknowledged}", "600ms", 1, out)
    try:
        def count():
            return len(out.read_text().splitlines()) if out.exists() else 0
        assert wait_until(lambda: count() >= unacknowledged + 1, 15, step=0.002), sd.stderr()
        seen = time.monotonic()
        ids = [json.loads(line)["payload"]["id"] for line in out.read_text().splitlines()]
        assert ids == list(range(unacknowledged + 1)), "lost, repeated or reordered messages"
        return seen - sent["late"]
    finally:
        sd.stop()
        fake.stop()


def test_no_linger_while_the_brokers_in_flight_window_is_full(tmp_path):
    # docs/mqtt.md: "not while 20 or more QoS 1/2 messages are unacknowledged". With 19 the
    # read lingers (the control: without it the test could not tell), with 20 it does not.
    lingered = late_message_delay(tmp_path, 19)
    full_window = late_message_delay(tmp_path, 20)
    assert lingered > 0.35, f"19 unacknowledged: the late message took {lingered:.3f} s"
    assert full_window < 0.25, f"20 unacknowledged: the late message took {full_window:.3f} s"
