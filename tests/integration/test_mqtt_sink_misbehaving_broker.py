"""The MQTT sink against brokers that misbehave on a live connection (issue 50, finding 1): a
broker that leaves QoS 1 messages unacknowledged, answers with an id that is not in flight or
with the wrong packet, or drops the connection right after CONNACK must not stop delivery for
good. A message in flight longer than the attempt timeout ends the connection (logged with the
packet id), the reconnect sends it again, and every event arrives once the broker behaves."""
import json
import socket
import struct
import threading
import time

from testing.fake_broker import FakeBroker, connack, packet, varint
from testing.seedance_process import Seedance
from testing.waiting import wait_until

PUBLISH, PUBACK, PUBREC, PINGREQ, DISCONNECT = 3, 4, 5, 12, 14
COUNT = 40


def job(uri, tmp_path, protocol="5"):
    return f"""
sources:
  - type: generate
    count: {COUNT}
    rate: 200
    payload: '{{"n":{{n}}}}'
sinks:
  - type: mqtt
    name: up
    uri: "{uri}"
    protocol: "{protocol}"
    topic: "out/x"
    qos: 1
    timeout: 2s
    reconnect_min: 100ms
    reconnect_max: 500ms
queue:
  data_dir: {tmp_path}/data
"""


def parse_publish(first, body, v5):
    qos = (first >> 1) & 3
    (tlen,) = struct.unpack(">H", body[:2])
    pos = 2 + tlen
    pid = 0
    if qos:
        (pid,) = struct.unpack(">H", body[pos:pos + 2])
        pos += 2
    if v5:
        length, mult = 0, 1
        while True:
            b = body[pos]
            pos += 1
            length += (b & 0x7F) * mult
            mult *= 128
            if not b & 0x80:
                break
        pos += length
    return pid, bool(first & 0x08), body[pos:]


class Upstream:
    """Records what a scripted broker acknowledged: the payloads it took (PUBACK sent)."""

    def __init__(self, v5):
        self.v5 = v5
        self.lock = threading.Lock()
        self.taken = set()

    def serve_normally(self, client, seconds=30):
        deadline = time.time() + seconds
        while time.time() < deadline:
            try:
                p = client.read_packet(timeout=0.5)
            except socket.timeout:
                continue
            if p is None:
                return
            first, body = p
            kind = first >> 4
            if kind == PUBLISH:
                pid, _, payload = parse_publish(first, body, self.v5)
                with self.lock:
                    self.taken.add(json.loads(payload)["n"])
                client.send(packet(0x40, struct.pack(">H", pid) + (b"\x00" if self.v5 else b"")))
            elif kind == PINGREQ:
                client.send(packet(0xD0, b""))
            elif kind == DISCONNECT:
                return

    def misbehave(self, client, answer, seconds=6):
        """Reads for `seconds`, answering each PUBLISH with answer(pid) (None: nothing) and
        keeping the connection alive (PINGRESP)."""
        deadline = time.time() + seconds
        while time.time() < deadline:
            try:
                p = client.read_packet(timeout=0.2)
            except socket.timeout:
                continue
            if p is None:
                return
            first, body = p
            if first >> 4 == PUBLISH:
                pid, _, _ = parse_publish(first, body, self.v5)
                reply = answer(pid)
                if reply:
                    client.send(reply)
            elif first >> 4 == PINGREQ:
                client.send(packet(0xD0, b""))

    def count(self):
        with self.lock:
            return len(self.taken)


def run_against(tmp_path, first_connection, protocol="5", min_connections=2, for_seconds=0):
    """The first connection (every one for `for_seconds`) goes to `first_connection`, the
    others are served normally."""
    v5 = protocol == "5"
    up = Upstream(v5)
    misbehave_until = time.time() + for_seconds

    def script(index, client):
        if index == 0 or time.time() < misbehave_until:
            first_connection(up, client)
        else:
            client.send(connack(v5, session_present=True))
            up.serve_normally(client)

    broker = FakeBroker(script).start()
    try:
        sd = Seedance(job(broker.uri, tmp_path, protocol)).start()
        try:
            if not wait_until(lambda: up.count() == COUNT, timeout=30):
                print(sd.stderr()[-5000:])
                raise AssertionError((up.count(), broker.connection_count()))
            assert broker.connection_count() >= min_connections
            return sd.stderr()
        finally:
            assert sd.stop() == 0, sd.stderr()[-3000:]
    finally:
        broker.stop()


def test_a_broker_that_never_acknowledges_costs_the_connection_not_the_sink(tmp_path):
    def never_ack(up, client):
        client.send(connack(True))
        up.misbehave(client, lambda pid: None, seconds=20)

    log = run_against(tmp_path, never_ack)
    assert "not acknowledged within 2000 ms" in log, log[-3000:]


def test_mqtt311_a_broker_that_never_acknowledges_costs_the_connection(tmp_path):
    def never_ack(up, client):
        client.send(connack(False))
        up.misbehave(client, lambda pid: None, seconds=20)

    log = run_against(tmp_path, never_ack, protocol="3.1.1")
    assert "not acknowledged within 2000 ms" in log, log[-3000:]


def test_an_acknowledgement_for_an_id_not_in_flight_is_reported_and_does_not_stall(tmp_path):
    def wrong_ids(up, client):
        client.send(connack(True))
        up.misbehave(client, lambda pid: packet(0x40, struct.pack(">H", (pid + 1000) % 65536) +
                                                b"\x00"), seconds=20)

    log = run_against(tmp_path, wrong_ids)
    assert "not in flight" in log, log[-3000:]
    assert log.count("not in flight") == 1, log[-3000:]  # once per connection


def test_an_acknowledgement_with_packet_id_0_is_a_protocol_error(tmp_path):
    def id_zero(up, client):
        client.send(connack(True))
        up.misbehave(client, lambda pid: packet(0x40, b"\x00\x00\x00"), seconds=20)

    log = run_against(tmp_path, id_zero)
    assert "packet id 0" in log, log[-3000:]


def test_a_pubrec_for_a_qos1_message_is_a_protocol_error(tmp_path):
    def pubrec(up, client):
        client.send(connack(True))
        up.misbehave(client, lambda pid: packet(0x50, struct.pack(">H", pid) + b"\x00"),
                     seconds=20)

    log = run_against(tmp_path, pubrec)
    assert "PUBREC" in log and "QoS 1" in log, log[-3000:]


def test_receive_maximum_then_a_dropped_connection_does_not_stall(tmp_path):
    # For 5 s (longer than the attempt timeout) every connection gets a CONNACK with Receive
    # Maximum 10 (property 0x21) and is closed at once; then the broker behaves. Before the
    # fix the timed-out attempts never ended and nothing more was sent.
    def drop_after_connack(up, client):
        props = b"\x21" + struct.pack(">H", 10)
        client.send(packet(0x20, b"\x00\x00" + varint(len(props)) + props))
        time.sleep(0.05)

    run_against(tmp_path, drop_after_connack, min_connections=3, for_seconds=5)
