"""The MQTT sink against a real mosquitto: MQTT → Seedance → MQTT relays with templated topics,
MQTT 5 properties, QoS 1 and 2, broker refusals (ACL) and unfillable topics to `rejected`, and
a kill -9 in the middle of a relay that loses nothing."""
import collections
import json
import re
import threading
import time

import pytest

from testing.broker import Broker
from testing.mqtt_publish import publish_all, publish_v5
from testing.ndjson import complete_lines as rejected_events
from testing.mqtt_subscribe import Subscriber
from testing.seedance_process import Seedance, validate
from testing.waiting import wait_until


def relay_config(broker, topic, sink_extra="", source_extra="", rejected_path=None):
    rejected = ""
    if rejected_path:
        rejected = f"""
  - type: file
    name: rejected_file
    inputs: [rejected]
    path: "{rejected_path}"
"""
    return f"""
sources:
  - type: mqtt
    uri: "{broker.uri}"
    topic: "sensor/+/temperature"
{source_extra}
sinks:
  - type: mqtt
    name: relay
    uri: "{broker.uri}"
    topic: "{topic}"
{sink_extra}
{rejected}
"""


def test_relay_fills_templated_topics_and_sends_mqtt5_properties(tmp_path):
    broker = Broker().start()
    sub = Subscriber(broker.port, "out/#", qos=1)
    rejected = tmp_path / "rejected.ndjson"
    cfg = relay_config(broker, "out/{topic.2}/{payload.kind}",
                       "    content_type: application/json\n    message_expiry: 1h",
                       rejected_path=rejected)
    sd = Seedance(cfg, workdir=str(tmp_path)).start()
    try:
        assert sd.wait_log(r"\[relay\] connected to"), sd.stderr()
        n = 2000
        msgs = []
        for i in range(n):
            body = {"n": i, "kind": f"k{i % 3}"} if i % 100 else {"n": i}  # 20 without "kind"
            msgs.append((f"sensor/d{i % 5}/temperature", json.dumps(body)))
        publish_all(broker.port, msgs)
        assert sub.wait_for(n - 20, 30), len(sub.received())
        assert wait_until(lambda: len(rejected_events(rejected)) == 20, 10)
        time.sleep(0.3)
        got = sub.received()
        assert len(got) == n - 20
        by_n = {json.loads(p)["n"]: (t, props) for t, p, props in got}
        assert sorted(by_n) == [i for i in range(n) if i % 100]
        for i, (topic, props) in by_n.items():
            assert topic == f"out/d{i % 5}/k{i % 3}"
            assert props.ContentType == "application/json"
            assert props.PayloadFormatIndicator == 1
            assert 3500 <= props.MessageExpiryInterval <= 3600
        reasons = {e["headers"]["reason"] for e in rejected_events(rejected)}
        assert reasons == {"topic template: the payload has no field payload.kind"}
        assert sorted(json.loads(e["payload"])["n"] if isinstance(e["payload"], str)
                      else e["payload"]["n"] for e in rejected_events(rejected)) == \
            list(range(0, n, 100))
    finally:
        assert sd.stop() == 0
        sub.stop()
        broker.stop()


def test_a_relay_keeps_the_mqtt5_metadata_of_each_message(tmp_path):
    broker = Broker().start()
    sub = Subscriber(broker.port, "out/#", qos=1)
    copy = tmp_path / "copy.ndjson"
    cfg = relay_config(broker, "out/{topic.2}") + f"""
  - type: file
    name: copy
    path: "{copy}"
"""
    sd = Seedance(cfg, workdir=str(tmp_path)).start()
    try:
        assert sd.wait_log(r"\[relay\] connected to"), sd.stderr()
        publish_v5(broker.port, "sensor/a/temperature", json.dumps({"v": 1}),
                   user_properties=[("site", "north"), ("site", "south"), ("line", "3")],
                   ContentType="application/vnd.x+json", ResponseTopic="reply/7",
                   CorrelationData=b"\x01\x02req")
        assert sub.wait_for(1, 15), sd.stderr()[-2000:]
        topic, payload, got = sub.received()[0]
        assert topic == "out/a" and json.loads(payload) == {"v": 1}
        assert got.UserProperty == [("site", "north"), ("site", "south"), ("line", "3")]
        assert got.ContentType == "application/vnd.x+json"
        assert got.ResponseTopic == "reply/7"
        assert got.CorrelationData == b"\x01\x02req"
        # The same metadata as headers, in the file sink's envelope.
        assert wait_until(lambda: copy.exists() and copy.read_text().strip(), 10)
        headers = json.loads(copy.read_text().splitlines()[0])["headers"]
        assert headers["mqtt_content_type"] == "application/vnd.x+json"
        assert headers["mqtt_response_topic"] == "reply/7"
        assert headers["mqtt_correlation_data"] == "AQJyZXE="
        assert headers["mqtt_user_line"] == "3"
    finally:
        assert sd.stop() == 0
        sub.stop()
        broker.stop()


@pytest.mark.parametrize("protocol", ["3.1.1", "5"])
def test_qos2_end_to_end_delivers_each_message_once(tmp_path, protocol):
    broker = Broker().start()
    sub = Subscriber(broker.port, "relayed/#", qos=2)
    cfg = relay_config(broker, "relayed/{topic}", f"    qos: 2\n    protocol: \"{protocol}\"",
                       "    qos: 2")
    sd = Seedance(cfg, workdir=str(tmp_path)).start()
    try:
        assert sd.wait_log(r"\[relay\] connected to"), sd.stderr()
        n = 500
        publish_all(broker.port, [("sensor/a/temperature", json.dumps({"n": i})) for i in range(n)],
                    qos=2)
        assert sub.wait_for(n, 30), len(sub.received())
        time.sleep(0.5)
        got = sub.received()
        assert sorted(json.loads(p)["n"] for _, p, _ in got) == list(range(n))
        assert {t for t, _, _ in got} == {"relayed/sensor/a/temperature"}
        # The QoS 2 window stays within mosquitto's max_inflight_messages (20): a client with
        # more unfinished is disconnected (retried, so nothing is lost, but it reconnects).
        assert len(re.findall(r"\[relay\] connected to", sd.stderr())) == 1, sd.stderr()
    finally:
        assert sd.stop() == 0
        sub.stop()
        broker.stop()


def test_a_message_the_broker_refuses_goes_to_rejected_with_its_reason(tmp_path):
    acl = tmp_path / "acl"
    acl.write_text("topic readwrite sensor/#\ntopic readwrite out/allowed/#\ntopic read out/#\n")
    broker = Broker(extra=f"acl_file {acl}\n").start()
    sub = Subscriber(broker.port, "out/#", qos=1)
    rejected = tmp_path / "rejected.ndjson"
    cfg = relay_config(broker, "out/{payload.zone}/x", rejected_path=rejected)
    sd = Seedance(cfg, workdir=str(tmp_path)).start()
    try:
        assert sd.wait_log(r"\[relay\] connected to"), sd.stderr()
        zones = ["allowed", "denied"]
        publish_all(broker.port, [("sensor/a/temperature", json.dumps({"n": i, "zone": zones[i % 2]}))
                                  for i in range(100)])
        assert sub.wait_for(50, 20), len(sub.received())
        assert wait_until(lambda: len(rejected_events(rejected)) == 50, 20), \
            len(rejected_events(rejected))
        time.sleep(0.3)
        assert sorted(json.loads(p)["n"] for _, p, _ in sub.received()) == list(range(0, 100, 2))
        reasons = {e["headers"]["reason"] for e in rejected_events(rejected)}
        assert reasons == {"broker refused the message (0x87 not authorized)"}, reasons
    finally:
        assert sd.stop() == 0
        sub.stop()
        broker.stop()


def test_kill_9_in_the_middle_of_a_relay_loses_nothing(tmp_path):
    n = 50_000
    broker = Broker().start()
    sub = Subscriber(broker.port, "out/#", qos=1)
    cfg = relay_config(broker, "out/{topic.2}")
    sd = Seedance(cfg, workdir=str(tmp_path)).start()
    try:
        assert sd.wait_log(r"\[relay\] connected to"), sd.stderr()
        msgs = [(f"sensor/d{i % 20}/temperature", json.dumps({"id": i})) for i in range(n)]
        publisher = threading.Thread(target=publish_all, args=(broker.port, msgs),
                                     kwargs={"timeout": 120})
        publisher.start()
        assert wait_until(lambda: len(sub.received()) >= n // 4, 60), len(sub.received())
        sd.kill()  # SIGKILL, mid-stream
        sd = Seedance(cfg, workdir=str(tmp_path)).start()
        publisher.join()
        got = collections.Counter()

        def all_arrived():
            got.clear()
            got.update(json.loads(p)["id"] for _, p, _ in sub.received())
            return len(got) == n
        assert wait_until(all_arrived, 120, 0.5), f"{n - len(got)} of {n} ids missing"
        duplicates = sum(c - 1 for c in got.values())
        print(f"MQTT relay, kill -9 once: {n} ids delivered, {duplicates} duplicates")
    finally:
        sd.stop()
        sub.stop()
        broker.stop()


def test_validate_points_at_a_bad_topic_template(tmp_path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text("sources:\n  - type: generate\n    payload: '{}'\nsinks:\n  - type: mqtt\n"
                   "    uri: tcp://127.0.0.1:1883\n    topic: \"out/{payload.}/+\"\n")
    r = validate(cfg)
    assert r.returncode == 2, r.stderr
    assert "c.yaml:7:12: sinks[0].topic: unknown placeholder {payload.}" in r.stderr, r.stderr


def test_a_source_and_a_sink_both_named_mqtt_report_their_connections_apart(tmp_path):
    from testing.ports import free_port
    from testing.seedance_process import metric, scrape
    broker = Broker().start()
    port = free_port()
    cfg = f"""
sources:
  - type: mqtt
    uri: "{broker.uri}"
    topic: "sensor/#"
sinks:
  - type: mqtt
    uri: "{broker.uri}"
    topic: "out/{{topic}}"
metrics:
  listen: 127.0.0.1:{port}
"""
    sd = Seedance(cfg, workdir=str(tmp_path)).start()
    try:
        url = f"http://127.0.0.1:{port}/metrics"
        assert wait_until(lambda: metric(scrape(url), "seedance_mqtt_connects_total",
                                         component="mqtt") == 2, 10), sd.stderr()
        text = scrape(url)
        for kind in ("source", "sink"):
            assert metric(text, "seedance_mqtt_connected", component="mqtt", kind=kind) == 1
            assert metric(text, "seedance_mqtt_connects_total", component="mqtt", kind=kind) == 1
    finally:
        assert sd.stop() == 0
        broker.stop()
