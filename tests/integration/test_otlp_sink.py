"""The otlp sink (issue 47, item 2) against an OTLP/HTTP receiver on loopback whose requests are
decoded by Debian's python3-protobuf (tests/testing/otlp_proto.py: opentelemetry-proto's
messages): logs with their times, body, severity, resource and attributes, and the trace id of
an MQTT 5 message's `traceparent` (the same one an HTTP receiver gets); metrics as gauges; the
answers: partial_success, 400 with a google.rpc.Status, 503 retried
(sinks/otlp/otlp_sink.h)."""
import json
import time
import urllib.request

import pytest

from testing import otlp_proto
from testing.otlp_receiver import OtlpReceiver
from testing.mqtt_publish import publish_all, publish_v5
from testing.ports import free_port
from testing.seedance_process import Seedance, metric, scrape, validate
from testing.waiting import wait_until

TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


def test_logs_carry_body_times_severity_attributes_and_the_mqtt_trace_id(broker, receiver):
    otlp = OtlpReceiver()
    sd = Seedance(f"""
sources:
  - type: mqtt
    uri: "{broker.uri}"
    topic: "site/#"
    protocol: "5"
sinks:
  - type: otlp
    endpoint: "{otlp.url}"
    compression: gzip
    resource: {{service.name: gw-7, host.name: edge}}
    severity_field: level
    attributes: {{site: "{{topic.2}}"}}
  - type: otlp
    name: errors
    inputs: [error]
    endpoint: "{otlp.url}"
  - type: http
    endpoint: "{receiver.url}/in"
    format: single
    event_headers: [traceparent]
""").start()
    try:
        assert sd.wait_log("connected to"), sd.stderr()
        time.sleep(0.3)
        t0 = time.time_ns()
        publish_v5(broker.port, "site/north/line", json.dumps(
            {"level": "error", "msg": "overheat", "temp": 91.5, "n": 7, "tags": ["a", 1]}),
            user_properties=[("traceparent", TRACEPARENT)])
        publish_all(broker.port, [("site/south/line", "not json")])  # to `error`, as a string
        assert wait_until(lambda: len(otlp.records()) == 2, 15), sd.stderr()[-3000:]
        assert wait_until(lambda: receiver.count(200) >= 1, 15)  # the error is not main
    finally:
        assert sd.stop() == 0
        otlp.stop()
    path, headers, _, _ = next(r for r in otlp.requests if r[1].get("Content-Encoding"))
    assert path == "/v1/logs"
    assert headers["Content-Type"] == "application/x-protobuf"
    assert headers["Content-Encoding"] == "gzip"
    by_topic = {otlp_proto.attributes(r.attributes)["messaging.destination.name"]: (res, s, r)
                for res, s, r in otlp.records()}
    resource, scope, rec = by_topic["site/north/line"]
    assert resource == {"service.name": "gw-7", "host.name": "edge"}
    assert scope.name == "seedance" and scope.version
    assert otlp_proto.any_value(rec.body) == {"level": "error", "msg": "overheat", "temp": 91.5,
                                              "n": 7, "tags": ["a", 1]}
    assert rec.severity_text == "error" and rec.severity_number == 17
    assert otlp_proto.attributes(rec.attributes)["site"] == "north"
    assert otlp_proto.attributes(rec.attributes)["seedance.source"] == "mqtt"
    assert t0 <= rec.observed_time_unix_nano and rec.time_unix_nano <= rec.observed_time_unix_nano
    assert rec.trace_id.hex() == TRACEPARENT.split("-")[1]
    assert rec.span_id.hex() == TRACEPARENT.split("-")[2]
    assert rec.flags == 1
    _, _, plain = by_topic["site/south/line"]
    assert plain.body.string_value == "not json" and plain.trace_id == b""
    # The HTTP receiver got the same trace context for the same message.
    traced = [dict((k.lower(), v) for k, v in h) for h in receiver.request_headers]
    assert [h.get("traceparent") for h in traced].count(TRACEPARENT) == 1


def test_metrics_are_gauges_named_by_the_mapping(broker):
    otlp = OtlpReceiver()
    sd = Seedance(f"""
sources:
  - type: mqtt
    uri: "{broker.uri}"
    topic: "site/#"
sinks:
  - type: otlp
    endpoint: "{otlp.url}/custom/path"
    signal: metrics
    metric: "{{topic.3}}"
    attribute_fields: [device]
    fields: [avg, stats.max]
""").start()
    try:
        assert sd.wait_log("connected to"), sd.stderr()
        time.sleep(0.3)
        publish_all(broker.port, [("site/north/climate",
                                   json.dumps({"device": "d1", "avg": 21.5, "stats": {"max": 30}}))])
        assert wait_until(lambda: otlp.requests, 15), sd.stderr()[-3000:]
    finally:
        assert sd.stop() == 0
        otlp.stop()
    path, _, msg, _ = otlp.requests[0]
    assert path == "/custom/path"  # an endpoint with a path is used as it is
    metrics = {m.name: m for m in msg.resource_metrics[0].scope_metrics[0].metrics}
    assert set(metrics) == {"climate.avg", "climate.stats.max"}
    point = metrics["climate.avg"].gauge.data_points[0]
    assert point.as_double == 21.5
    assert otlp_proto.attributes(point.attributes) == {"device": "d1"}
    assert abs(point.time_unix_nano - time.time_ns()) < 60e9
    assert metrics["climate.stats.max"].gauge.data_points[0].as_double == 30


def test_spans_taken_by_the_otlp_source_go_out_as_the_same_spans(tmp_path):
    """OTLP traces through Seedance: an export request of two services' spans into the otlp
    source, out of the otlp sink with signal: traces; the receiver decodes the same spans
    under the same resources and scopes: ids, parent, trace state, name, kind, times,
    attributes, events, links, status."""
    source_port = free_port()
    otlp = OtlpReceiver()
    sd = Seedance(f"""
sources:
  - type: otlp
    listen: 127.0.0.1:{source_port}
sinks:
  - type: otlp
    endpoint: "{otlp.url}"
    signal: traces
    batch_linger: 20ms
queue:
  data_dir: {tmp_path}/data
""").start()
    req = otlp_proto.ExportTraceServiceRequest()
    trace = bytes.fromhex("4bf92f3577b34da6a3ce929d0e0e4736")
    for k, (service, n) in enumerate((("checkout", 3), ("payments", 2))):
        rs = req.resource_spans.add()
        a = rs.resource.attributes.add()
        a.key, a.value.string_value = "service.name", service
        ss = rs.scope_spans.add()
        ss.scope.name, ss.scope.version = f"{service}.tracer", "1.2"
        for i in range(n):
            span = ss.spans.add()
            span.trace_id = trace
            span.span_id = bytes([k + 1, i, 0, 0, 0, 0, 0, 1])
            span.parent_span_id = bytes(8 * [9])
            span.trace_state = "k=v"
            span.flags = 1
            span.name = f"{service} op {i}"
            span.kind = 3
            span.start_time_unix_nano = 1_700_000_000_000_000_000 + i
            span.end_time_unix_nano = 1_700_000_000_900_000_000 + i
            attr = span.attributes.add()
            attr.key, attr.value.int_value = "i", i
            ev = span.events.add()
            ev.name, ev.time_unix_nano = "retry", 1_700_000_000_100_000_000
            link = span.links.add()
            link.trace_id, link.span_id = trace, bytes(8 * [7])
            span.status.code, span.status.message = 2, "timeout"
    try:
        body = req.SerializeToString()
        r = urllib.request.urlopen(urllib.request.Request(
            f"http://127.0.0.1:{source_port}/v1/traces", data=body, method="POST",
            headers={"Content-Type": "application/x-protobuf"}), timeout=10)
        assert r.status == 200

        def received():
            with otlp.lock:
                return [(rs, ss, span) for path, _, msg, _ in otlp.requests
                        if path == "/v1/traces" for rs in msg.resource_spans
                        for ss in rs.scope_spans for span in ss.spans]

        assert wait_until(lambda: len(received()) == 5, 10), len(received())
    finally:
        assert sd.stop() == 0, sd.stderr()[-2000:]
        otlp.stop()
    sent = {span.span_id: (rs, ss, span) for rs in req.resource_spans for ss in rs.scope_spans
            for span in ss.spans}
    for rs, ss, span in received():
        want_rs, want_ss, want = sent[span.span_id]
        assert otlp_proto.attributes(rs.resource.attributes) == \
            otlp_proto.attributes(want_rs.resource.attributes)
        assert (ss.scope.name, ss.scope.version) == (want_ss.scope.name, want_ss.scope.version)
        for field in ("trace_id", "parent_span_id", "trace_state", "flags", "name", "kind",
                      "start_time_unix_nano", "end_time_unix_nano"):
            assert getattr(span, field) == getattr(want, field), field
        assert otlp_proto.attributes(span.attributes) == {"i": otlp_proto.attributes(
            want.attributes)["i"]}
        assert [(e.name, e.time_unix_nano) for e in span.events] == \
            [(e.name, e.time_unix_nano) for e in want.events]
        assert [(link.trace_id, link.span_id) for link in span.links] == \
            [(link.trace_id, link.span_id) for link in want.links]
        assert (span.status.code, span.status.message) == (2, "timeout")


def test_answers_partial_success_a_refusal_and_backpressure(broker, tmp_path):
    otlp = OtlpReceiver()
    partial = otlp_proto.ExportLogsServiceResponse()
    partial.partial_success.rejected_log_records = 1
    partial.partial_success.error_message = "one record had no body"
    every = otlp_proto.ExportLogsServiceResponse()
    every.partial_success.rejected_log_records = 1
    every.partial_success.error_message = "no body"
    status = otlp_proto.Status(code=3, message="bad request: field 9 too long")
    otlp.answers = [
        (503, "application/x-protobuf", b""),  # retried
        (200, "application/x-protobuf", partial.SerializeToString()),
        (200, "application/x-protobuf", every.SerializeToString()),
        (400, "application/x-protobuf", status.SerializeToString()),
        (200, "application/x-protobuf", partial.SerializeToString()),  # logged once per 10 s
    ]
    port = free_port()
    sd = Seedance(f"""
metrics:
  listen: 127.0.0.1:{port}
sources:
  - type: mqtt
    uri: "{broker.uri}"
    topic: "site/#"
sinks:
  - type: otlp
    endpoint: "{otlp.url}"
    batch_size: 2
    batch_linger: 300ms
    retry_initial: 20ms
  - type: file
    name: rejected
    path: {tmp_path}/rejected.ndjson
    inputs: [rejected]
""").start()
    try:
        assert sd.wait_log("connected to"), sd.stderr()
        time.sleep(0.3)
        # Two events in one batch: 503 (retried), then 200 rejecting one of them unnamed.
        publish_all(broker.port, [("site/a", json.dumps({"n": 1})), ("site/a", json.dumps({"n": 2}))])
        assert wait_until(lambda: len(otlp.requests) >= 2, 10), sd.stderr()
        assert wait_until(lambda: metric(scrape(f"http://127.0.0.1:{port}/metrics"),
                                         "seedance_otlp_rejected_records_total",
                                         component="otlp") == 1, 5)
        # Then one event each: rejected whole by partial_success, then refused with 400.
        publish_all(broker.port, [("site/a", json.dumps({"n": 3}))])
        assert wait_until(lambda: len(otlp.requests) >= 3, 10), sd.stderr()
        publish_all(broker.port, [("site/a", json.dumps({"n": 4}))])
        rejected_file = tmp_path / "rejected.ndjson"
        assert wait_until(lambda: rejected_file.exists() and
                          len(rejected_file.read_text().splitlines()) == 2, 10), sd.stderr()
        # A second partial success: counted, and not logged again within 10 s (docs/otlp.md).
        publish_all(broker.port, [("site/a", json.dumps({"n": 5})), ("site/a", json.dumps({"n": 6}))])
        assert wait_until(lambda: metric(scrape(f"http://127.0.0.1:{port}/metrics"),
                                         "seedance_otlp_rejected_records_total",
                                         component="otlp") == 2, 10), sd.stderr()
        assert sd.log_times("without naming them") and \
            sd.logged_at_most_every("without naming them", 10), sd.stderr()[-3000:]
    finally:
        assert sd.stop() == 0
        otlp.stop()
    assert len(otlp.requests[0][2].resource_logs[0].scope_logs[0].log_records) == 2
    assert otlp.requests[0][2] == otlp.requests[1][2]  # the retry sent the same request
    lines = [json.loads(l) for l in rejected_file.read_text().splitlines()]
    reasons = {l["payload"]["n"]: l["headers"]["reason"] for l in lines}
    assert reasons[3] == "otlp: the receiver rejected every record: no body"
    assert reasons[4] == "otlp: HTTP 400: bad request: field 9 too long"
    log = sd.stderr()
    assert "rejected 1 of 2 records without naming them (one record had no body)" in log, log


@pytest.mark.parametrize("section,key,message", [
    ("compression: zstd", "compression", "OTLP/HTTP takes compression none or gzip"),
    ("attributes: {site: \"{nope}\"}", "attributes", "unknown placeholder {nope}"),
    ("body_field: \"a..b\"", "body_field", "body_field:"),
    ("signal: metrics\n    metric: \"{topic\"", "metric", "metric"),
])
def test_bad_sections_name_the_file_line_and_key(tmp_path, section, key, message):
    cfg = tmp_path / "c.yaml"
    cfg.write_text("sources:\n  - {type: generate, payload: '{}'}\nsinks:\n  - type: otlp\n"
                   f"    endpoint: http://127.0.0.1:9\n    {section}\n")
    r = validate(cfg)
    assert r.returncode == 2, r.stderr
    lines = {"compression": 6, "attributes": 6, "body_field": 6, "metric": 7}
    assert f"c.yaml:{lines[key]}:" in r.stderr and message in r.stderr, r.stderr
