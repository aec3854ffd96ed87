"""HTTP sink against a real receiver: retries through 503s, rejects 400s to a side output."""
import json
import time

from testing.mqtt_publish import publish_all, publish_v5
from testing.http_receiver import decode_events
from testing.seedance_process import Seedance, validate


def config(broker, receiver, tmp_path, extra=""):
    return f"""
sources:
  - type: mqtt
    uri: "{broker.uri}"
    topic: "s/#"
sinks:
  - type: http
    endpoint: "{receiver.url}/ingest"
    batch_size: 20
    retry_initial: 20ms
    retry_max: 200ms
{extra}
  - type: file
    name: rejected
    path: {tmp_path}/rejected.ndjson
    inputs: [rejected]
"""


def test_503_for_a_while_then_everything_arrives(broker, receiver, tmp_path):
    receiver.fail_next(15, 503)
    sd = Seedance(config(broker, receiver, tmp_path)).start()
    try:
        assert sd.wait_log("connected to")
        publish_all(broker.port, [("s/a", json.dumps({"n": i})) for i in range(500)])
        assert receiver.wait_for_events(500, timeout=30), sd.stderr()[-2000:]
        time.sleep(0.3)
        ns = sorted(e["n"] for e in receiver.accepted_events())
        assert ns == list(range(500))
        assert receiver.count(503) == 15
        assert sd.wait_log(r"failed: HTTP 503")
        assert sd.wait_log(r"recovered")
    finally:
        assert sd.stop() == 0


def test_429_retry_after_is_honoured(broker, receiver, tmp_path):
    receiver.retry_after = 1
    receiver.fail_next(1, 429)
    sd = Seedance(config(broker, receiver, tmp_path)).start()
    try:
        assert sd.wait_log("connected to")
        t0 = time.time()
        publish_all(broker.port, [("s/a", json.dumps({"n": 1}))])
        assert receiver.wait_for_events(1, timeout=10)
        assert time.time() - t0 >= 0.9, "retried before Retry-After elapsed"
    finally:
        assert sd.stop() == 0


def test_400_sends_the_batch_to_the_rejected_output(broker, receiver, tmp_path):
    receiver.reject = lambda body: 400 if b'"poison"' in body else None
    extra = "    format: single\n"
    sd = Seedance(config(broker, receiver, tmp_path, extra)).start()
    try:
        assert sd.wait_log("connected to")
        msgs = [("s/a", json.dumps({"n": i})) for i in range(50)]
        msgs.insert(25, ("s/a", json.dumps({"n": "poison"})))
        publish_all(broker.port, msgs)
        assert receiver.wait_for_events(50, timeout=15)
        rejected_file = tmp_path / "rejected.ndjson"
        deadline = time.time() + 5
        while time.time() < deadline and not (rejected_file.exists() and rejected_file.read_text()):
            time.sleep(0.05)
        lines = [json.loads(l) for l in rejected_file.read_text().splitlines()]
        assert len(lines) == 1
        assert lines[0]["payload"] == {"n": "poison"}
        assert lines[0]["headers"]["output"] == "rejected"
        assert "HTTP 400" in lines[0]["headers"]["reason"]
        assert receiver.count(400) == 1, "a 400 must not be retried"
    finally:
        assert sd.stop() == 0


def test_https_endpoint_with_verified_certificate(broker, tmp_path):
    from testing.certs import make_certs
    from testing.http_receiver import Receiver
    make_certs(tmp_path)
    receiver = Receiver(tls_dir=str(tmp_path)).start()
    try:
        extra = f"    tls:\n      ca_file: {tmp_path}/ca.crt\n"
        sd = Seedance(config(broker, receiver, tmp_path, extra)).start()
        try:
            assert sd.wait_log("connected to")
            publish_all(broker.port, [("s/a", json.dumps({"n": i})) for i in range(30)])
            assert receiver.wait_for_events(30, timeout=15), sd.stderr()[-2000:]
        finally:
            assert sd.stop() == 0
    finally:
        receiver.stop()


def test_event_headers_become_request_headers_and_cannot_inject_fields(broker, receiver):
    # A script sets a header with a line break: sent as it is it would inject a header field.
    cfg = f"""
sources:
  - type: mqtt
    uri: "{broker.uri}"
    topic: "sensor/#"
processors:
  - type: lua
    code: |
      function process(event)
        event.headers["mqtt_user_evil"] = "x\\r\\nX-Injected: 1"
        event.headers["mqtt_user_big"] = string.rep("b", 9000)
        return event
      end
sinks:
  - type: http
    endpoint: "{receiver.url}/in"
    format: single
    event_headers: ["mqtt_user_*", "mqtt_content_type"]
"""
    sd = Seedance(cfg).start()
    try:
        assert sd.wait_log("connected to"), sd.stderr()
        time.sleep(0.5)  # "connected" is logged when SUBSCRIBE is sent, not yet taken
        publish_v5(broker.port, "sensor/a", json.dumps({"v": 1}),
                   user_properties=[("site", "north")], ContentType="application/json")
        assert receiver.wait_for_events(1, timeout=10), sd.stderr()[-2000:]
        fields = {k.lower(): v for k, v in receiver.request_headers[0]}
        assert fields["mqtt_user_site"] == "north"
        assert fields["mqtt_content_type"] == "application/json"
        assert "mqtt_user_evil" not in fields and "x-injected" not in fields, fields
        assert "mqtt_user_big" not in fields  # over the 8 KiB of event headers a request carries
    finally:
        assert sd.stop() == 0


def test_event_headers_need_one_event_per_request(tmp_path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text("sources:\n  - {type: generate, payload: '{}'}\nsinks:\n  - type: http\n"
                   "    endpoint: http://127.0.0.1:9/x\n    event_headers: [a]\n")
    r = validate(cfg)
    assert r.returncode == 2, r.stderr
    assert "c.yaml:6:20: sink \"http\": event_headers needs format: single" in r.stderr, r.stderr


def test_compressed_bodies_arrive_whole_with_their_content_encoding(broker, receiver, tmp_path):
    # Two sinks on one stream, gzip and zstd: the receiver undoes each Content-Encoding, so
    # every event arriving twice proves both encoders; the wire bytes prove they compressed.
    cfg = f"""
sources:
  - type: mqtt
    uri: "{broker.uri}"
    topic: "s/#"
sinks:
  - type: http
    name: gz
    endpoint: "{receiver.url}/gzip"
    compression: gzip
    batch_size: 100
  - type: http
    name: zs
    endpoint: "{receiver.url}/zstd"
    compression: zstd
    compression_level: 9
    batch_size: 100
"""
    sd = Seedance(cfg).start()
    try:
        assert sd.wait_log("connected to"), sd.stderr()
        time.sleep(0.3)
        msgs = [("s/a", json.dumps({"n": i, "device": "sensor-%d" % (i % 5), "t": 21.5}))
                for i in range(1000)]
        publish_all(broker.port, msgs)
        assert receiver.wait_for_events(2000, timeout=30), sd.stderr()[-2000:]
        by_path = {}
        for path, _, body, status in receiver.requests:
            assert status == 200
            by_path.setdefault(path, []).extend(decode_events(body))
        for path in ("/gzip", "/zstd"):
            assert sorted(e["n"] for e in by_path[path]) == list(range(1000)), path
        encodings = {dict((k.lower(), v) for k, v in h)["content-encoding"]
                     for h in receiver.request_headers}
        assert encodings == {"gzip", "zstd"}
        plain = 2 * sum(len(m[1]) for m in msgs)
        assert receiver.wire_bytes < plain / 3, (receiver.wire_bytes, plain)
    finally:
        assert sd.stop() == 0


def test_a_compression_level_out_of_range_names_the_key(tmp_path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text("sources:\n  - {type: generate, payload: '{}'}\nsinks:\n  - type: http\n"
                   "    endpoint: http://127.0.0.1:9/x\n    compression: gzip\n"
                   "    compression_level: 12\n")
    r = validate(cfg)
    assert r.returncode == 2, r.stderr
    assert "c.yaml:7:24: sink \"http\": compression_level: gzip takes 1 to 9" in r.stderr, r.stderr
