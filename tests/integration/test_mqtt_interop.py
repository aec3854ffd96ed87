"""Our MQTT client against the real mosquitto broker, in MQTT 3.1.1 and 5."""
import json
import os
import subprocess
import time

import pytest

from testing.broker import Broker
from testing.certs import make_certs
from testing.mqtt_publish import publish_all
from testing.seedance_process import Seedance

PROTOCOLS = ["3.1.1", "5"]


def config(uri, receiver, protocol, topic='"sensor/+/temperature"', source_extra="", top_extra=""):
    return f"""
sources:
  - type: mqtt
    uri: "{uri}"
    topic: {topic}
    protocol: "{protocol}"
{source_extra}
sinks:
  - type: http
    endpoint: "{receiver.url}/in"
{top_extra}
"""


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("qos", [0, 1, 2])
def test_wildcards_and_every_qos(broker, receiver, protocol, qos):
    topics = '["sensor/+/temperature", "site/#"]'
    sd = Seedance(config(broker.uri, receiver, protocol, topics, f"    qos: {qos}")).start()
    try:
        assert sd.wait_log("connected to"), sd.stderr()
        msgs = []
        for i in range(300):
            topic = ["sensor/a/temperature", "site/x/y/z", "other/t", "sensor/a/b/temperature"][i % 4]
            msgs.append((topic, json.dumps({"n": i, "topic": topic})))
        publish_all(broker.port, msgs, qos=qos)
        expected = sorted(i for i in range(300) if i % 4 in (0, 1))
        assert receiver.wait_for_events(len(expected), timeout=15), sd.stderr()[-2000:]
        time.sleep(0.3)
        assert sorted(e["n"] for e in receiver.accepted_events()) == expected
    finally:
        assert sd.stop() == 0


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_username_password(receiver, tmp_path, protocol):
    pw = tmp_path / "passwd"
    subprocess.run(["mosquitto_passwd", "-b", "-c", str(pw), "gateway", "s3cret"], check=True,
                   capture_output=True)
    os.chmod(pw, 0o644)
    b = Broker(extra=f"allow_anonymous false\npassword_file {pw}\n").start()
    try:
        good = Seedance(config(b.uri, receiver, protocol, source_extra=(
            "    username: gateway\n    password: ${MQTT_PASSWORD}")))
        os.environ["MQTT_PASSWORD"] = "s3cret"
        good.start()
        assert good.wait_log("connected to"), good.stderr()
        good.stop()
        os.environ["MQTT_PASSWORD"] = "wrong"
        bad = Seedance(config(b.uri, receiver, protocol, source_extra=(
            "    username: gateway\n    password: ${MQTT_PASSWORD}\n    reconnect_min: 50ms\n"
            "    reconnect_max: 100ms"))).start()
        assert bad.wait_log("refused the connection: (bad user name or password|not authorized)"), bad.stderr()
        time.sleep(1.0)
        assert bad.proc.poll() is None, "a refused login must not stop seedance"
        refusals = [l for l in bad.stderr_lines if "refused the connection" in l]
        assert len(refusals) == 1, "the same failure must be logged once, not on every retry"
        assert bad.stop() == 0
    finally:
        os.environ.pop("MQTT_PASSWORD", None)
        b.stop()


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_persistent_session_gets_messages_sent_while_offline(broker, receiver, protocol):
    extra = "    client_id: seedance-persist-test\n    persistent_session: true\n    qos: 1"
    cfg = config(broker.uri, receiver, protocol, '"sensor/#"', extra)
    sd = Seedance(cfg).start()
    assert sd.wait_log("connected to .*session new"), sd.stderr()
    assert sd.stop() == 0
    publish_all(broker.port, [("sensor/x", json.dumps({"n": i})) for i in range(200)])
    sd = Seedance(cfg).start()
    try:
        assert sd.wait_log("connected to .*session resumed"), sd.stderr()
        assert receiver.wait_for_events(200, timeout=15)
        assert sorted(e["n"] for e in receiver.accepted_events()) == list(range(200))
    finally:
        assert sd.stop() == 0


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_by_default_qos1_keeps_its_session_across_a_restart(broker, receiver, protocol, tmp_path):
    # No client_id, no persistent_session: the defaults must lose nothing across a restart.
    cfg = config(broker.uri, receiver, protocol, '"sensor/#"')
    sd = Seedance(cfg, workdir=str(tmp_path)).start()
    assert sd.wait_log("connected to .*session new"), sd.stderr()
    assert sd.stop() == 0
    publish_all(broker.port, [("sensor/x", json.dumps({"n": i})) for i in range(200)], qos=1)
    sd = Seedance(cfg, workdir=str(tmp_path)).start()
    try:
        assert sd.wait_log("connected to .*session resumed"), sd.stderr()
        assert receiver.wait_for_events(200, timeout=15), sd.stderr()[-2000:]
        assert sorted(e["n"] for e in receiver.accepted_events()) == list(range(200))
    finally:
        assert sd.stop() == 0


def test_qos0_starts_a_clean_session_by_default(broker, receiver, tmp_path):
    cfg = config(broker.uri, receiver, "5", '"sensor/#"', "    qos: 0")
    for _ in range(2):
        sd = Seedance(cfg, workdir=str(tmp_path)).start()
        assert sd.wait_log("connected to .*session new"), sd.stderr()
        assert sd.stop() == 0


def test_two_jobs_on_one_host_do_not_take_each_others_session(broker, receiver):
    # Same configuration, default client ids, two data directories: each keeps its connection
    # (with one id for both, the broker hands the session back and forth on every reconnect).
    cfg = config(broker.uri, receiver, "5", '"sensor/#"', "    reconnect_min: 50ms")
    jobs = [Seedance(cfg).start(), Seedance(cfg).start()]
    try:
        for sd in jobs:
            assert sd.wait_log("connected to"), sd.stderr()
        time.sleep(2.0)
        publish_all(broker.port, [("sensor/x", json.dumps({"n": i})) for i in range(50)], qos=1)
        assert receiver.wait_for_events(100, timeout=15)
        for sd in jobs:
            assert sum("connected to" in line for line in sd.stderr_lines) == 1, sd.stderr()
            assert "taken over" not in sd.stderr() and "DISCONNECT" not in sd.stderr(), sd.stderr()
        assert sorted(e["n"] for e in receiver.accepted_events()) == sorted(list(range(50)) * 2)
    finally:
        for sd in jobs:
            assert sd.stop() == 0


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_reconnects_after_broker_restart_and_survives_unreachable_broker(receiver, protocol):
    b = Broker().start()
    port = b.port
    cfg = config(b.uri, receiver, protocol, '"sensor/#"',
                 "    reconnect_min: 50ms\n    reconnect_max: 200ms")
    sd = Seedance(cfg).start()
    try:
        assert sd.wait_log("connected to")
        b.stop()
        assert sd.wait_log("retrying with backoff"), sd.stderr()
        time.sleep(1.5)  # many reconnect attempts against a closed port
        assert sd.proc.poll() is None
        warnings = [l for l in sd.stderr_lines if "retrying with backoff" in l]
        assert len(warnings) <= 3, f"log storm while the broker is down: {len(warnings)} lines"
        b = Broker(port=port).start()
        deadline = time.time() + 10
        while time.time() < deadline and sum("connected to" in l for l in sd.stderr_lines) < 2:
            time.sleep(0.05)
        assert sum("connected to" in l for l in sd.stderr_lines) >= 2, sd.stderr()
        publish_all(b.port, [("sensor/x", json.dumps({"n": i})) for i in range(50)])
        assert receiver.wait_for_events(50, timeout=10)
    finally:
        assert sd.stop() == 0
        b.stop()


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_tls_with_verified_broker_certificate(receiver, tmp_path, protocol):
    make_certs(tmp_path)
    plain = Broker()
    tls_port = plain.port
    b = Broker(port=tls_port, extra=(
        f"cafile {tmp_path}/ca.crt\ncertfile {tmp_path}/server.crt\nkeyfile {tmp_path}/server.key\n"))
    b.start()
    try:
        tls = f"    tls:\n      ca_file: {tmp_path}/ca.crt\n      server_name: localhost"
        sd = Seedance(config(f"ssl://127.0.0.1:{tls_port}", receiver, protocol, '"sensor/#"', tls)).start()
        assert sd.wait_log("connected to"), sd.stderr()
        pub = subprocess.run(["mosquitto_pub", "-h", "127.0.0.1", "-p", str(tls_port), "--cafile",
                              f"{tmp_path}/ca.crt", "--insecure", "-t", "sensor/tls", "-q", "1",
                              "-m", '{"over":"tls"}'], capture_output=True, text=True)
        assert pub.returncode == 0, pub.stderr
        assert receiver.wait_for_events(1, timeout=10)
        assert receiver.accepted_events() == [{"over": "tls"}]
        assert sd.stop() == 0
        # A broker whose certificate is not signed by the configured CA is refused.
        other = tmp_path / "other"
        other.mkdir()
        make_certs(other)
        wrong = f"    tls:\n      ca_file: {other}/ca.crt\n      server_name: localhost"
        sd = Seedance(config(f"ssl://127.0.0.1:{tls_port}", receiver, protocol, '"sensor/#"', wrong)).start()
        assert sd.wait_log("TLS handshake .*(certificate verify failed|verify)"), sd.stderr()
        assert sd.stop() == 0
    finally:
        b.stop()


def test_backpressure_pauses_reading_and_loses_nothing(broker, receiver):
    receiver.delay_s = 0.02  # a slow receiver
    cfg = config(broker.uri, receiver, "5", '"sensor/#"', "    receive_maximum: 100",
                 "    batch_size: 10\n    concurrency: 1\npipeline:\n  queue_capacity: 20")
    sd = Seedance(cfg).start()
    try:
        assert sd.wait_log("connected to")
        publish_all(broker.port, [("sensor/x", json.dumps({"n": i})) for i in range(1000)], timeout=120)
        assert receiver.wait_for_events(1000, timeout=60), sd.stderr()[-2000:]
        assert sorted(e["n"] for e in receiver.accepted_events()) == list(range(1000))
        assert sd.wait_log("pausing reads from the broker")
    finally:
        assert sd.stop() == 0


def test_subscriptions_over_the_brokers_maximum_packet_size_are_refused_with_the_reason(receiver):
    """An MQTT 5 broker that announces a Maximum Packet Size ends the connection on a bigger
    SUBSCRIBE, every time: the source says why, with both sizes, instead of reconnecting
    without a word."""
    broker = Broker(extra="max_packet_size 1024\n").start()
    try:
        topics = json.dumps([f"site/{i:04d}/line/+/temperature" for i in range(60)])  # ~1.8 KB
        sd = Seedance(config(broker.uri, receiver, "5", topic=topics)).start(wait_ready=False)
        try:
            assert sd.wait_log(r"accepts packets of at most 1024 bytes, and the SUBSCRIBE for "
                               r"the configured topic filters is \d+ bytes"), sd.stderr()
            assert "connected to" not in sd.stderr()
        finally:
            sd.stop()
    finally:
        broker.stop()
