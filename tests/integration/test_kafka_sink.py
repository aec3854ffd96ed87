"""kafka sink against librdkafka's mock cluster (3 brokers, a topic with 3 partitions
replicated 3 times; no Kafka broker is packaged for Debian): 50,000 events relayed from MQTT
through a broker going down, a leader change and Produce requests that time out; a message
too large for the producer, and a Produce request the broker refuses as too large, go to
`rejected`; the configuration's mistakes are refused by `validate`."""
import json
import threading
import time

import pytest

from testing.kafka_mock import MSG_SIZE_TOO_LARGE, NOT_LEADER_FOR_PARTITION, REQUEST_TIMED_OUT, KafkaMock
from testing.mqtt_publish import publish_all
from testing.seedance_process import Seedance, validate
from testing.waiting import wait_until


@pytest.fixture
def kafka():
    k = KafkaMock()
    yield k
    k.stop()


def config(broker, kafka, tmp_path, extra=""):
    return f"""
sources:
  - type: mqtt
    uri: "{broker.uri}"
    topic: "site/#"
    qos: 1
sinks:
  - type: kafka
    brokers: {json.dumps(kafka.brokers)}
    topic: "{kafka.topic}"
    key: "{{payload.device}}"
    message_timeout: 5s
    timeout: 8s
    retry_initial: 50ms
    retry_max: 500ms
{extra}
  - type: file
    name: rejected
    path: {tmp_path}/rejected.ndjson
    inputs: [rejected]
"""


def rejected_lines(tmp_path):
    f = tmp_path / "rejected.ndjson"
    return [json.loads(l) for l in f.read_text().splitlines()] if f.exists() else []


def test_50000_events_through_a_broker_down_a_leader_change_and_timeouts(broker, kafka, tmp_path):
    n = 50_000
    sd = Seedance(config(broker, kafka, tmp_path)).start()
    try:
        assert sd.wait_log("connected to"), sd.stderr()
        time.sleep(0.3)
        msgs = [("site/north/climate", json.dumps({"n": i, "device": f"d{i % 13}"}))
                for i in range(n)]

        def publish():
            for part in range(0, n, 25_000):
                publish_all(broker.port, msgs[part:part + 25_000], timeout=300)
        publisher = threading.Thread(target=publish)
        publisher.start()
        # The faults while records flow: some in the topic, far from all.
        assert wait_until(lambda: kafka.count()["messages"] >= 2_000, 60, 0.2), sd.stderr()[-3000:]
        kafka.command("down 1")                 # a broker (leader of a partition) goes
        time.sleep(1.5)
        kafka.command("up 1")
        kafka.command("leader 0 2")             # partitions change leader
        kafka.command("leader 1 3")
        kafka.command(f"produce_errors 5 {REQUEST_TIMED_OUT}")
        kafka.command(f"produce_errors 3 {NOT_LEADER_FOR_PARTITION}")
        during = kafka.count()["messages"]
        assert during < n, f"all {n} were in before the faults ended: they tested nothing"
        publisher.join()
        counted = {}

        def all_in():
            counted.update(kafka.count())
            return counted["unique"] >= n
        assert wait_until(all_in, 120, 1.0), (counted, sd.stderr()[-3000:])
        print(f"kafka: {counted} after a broker down, leader changes and request errors")
        assert counted["unique"] == n
        assert counted["keyed"] == counted["messages"]   # every record has its key
        # The idempotent producer retries without duplicates; a batch the runner sent again
        # after a failed report repeats what was written before the failure.
        assert counted["repeats"] <= n // 100, counted
        assert rejected_lines(tmp_path) == []
    finally:
        assert sd.stop() == 0


def test_records_too_large_go_to_rejected_and_the_rest_arrives(broker, kafka, tmp_path):
    # The producer refuses a record over message.max.bytes at once; the broker refuses a whole
    # Produce request as too large (the mock, told to): both are refusals, not retries.
    extra = "    properties: {message.max.bytes: \"20000\"}\n    batch_size: 50\n"
    sd = Seedance(config(broker, kafka, tmp_path, extra)).start()
    try:
        assert sd.wait_log("connected to"), sd.stderr()
        time.sleep(0.3)
        publish_all(broker.port, [("site/a", json.dumps({"n": 0, "device": "d0", "big": "x" * 30000}))])
        assert wait_until(lambda: len(rejected_lines(tmp_path)) == 1, 20), sd.stderr()[-3000:]
        r = rejected_lines(tmp_path)[0]
        assert r["payload"]["n"] == 0 and "too large" in r["headers"]["reason"].lower(), r
        kafka.command(f"produce_errors 1 {MSG_SIZE_TOO_LARGE}")
        publish_all(broker.port, [("site/a", json.dumps({"n": i, "device": "d1"}))
                                  for i in range(1, 201)])
        counted = {}

        def settled():
            counted.update(kafka.count())
            return counted["unique"] + len(rejected_lines(tmp_path)) >= 201
        assert wait_until(settled, 60, 0.5), (counted, sd.stderr()[-3000:])
        refused = [l for l in rejected_lines(tmp_path) if l["payload"]["n"] != 0]
        assert refused, "the broker's refusal sent no event to rejected"
        for l in refused:
            assert "too large" in l["headers"]["reason"].lower(), l
        assert counted["unique"] + len(refused) == 200, (counted, len(refused))
    finally:
        assert sd.stop() == 0


@pytest.mark.parametrize("section,message", [
    ("topic: \"a/{topic}\"\n    properties: {acks: \"1\"}", "acks is set by the sink"),
    ("topic: \"{nope}\"", "unknown placeholder {nope}"),
    ("topic: t\n    properties: {no.such.property: x}", "No such configuration property"),
])
def test_bad_sections_are_refused_by_validate(tmp_path, section, message):
    cfg = tmp_path / "c.yaml"
    cfg.write_text("sources:\n  - {type: generate, payload: '{}'}\nsinks:\n  - type: kafka\n"
                   f"    brokers: [127.0.0.1:9092]\n    {section}\n")
    r = validate(cfg)
    assert r.returncode == 2, r.stderr
    assert "c.yaml:" in r.stderr and message in r.stderr, r.stderr
