"""Seedance's own spans (`tracing:`, observe/tracer.h; issue 47's trace-context acceptance): an
MQTT 5 message with a sampled `traceparent` reaches an HTTP receiver and an OTLP receiver with
the same trace id, and the spans Seedance exports over OTLP/HTTP (decoded by Debian's
python3-protobuf) form one trace with the publisher's span: publisher → process → deliver, and
the receivers see the process span as their parent. Sampling is parent-based; sample_ratio
starts traces; a rejected delivery is an error span; a dead tracing endpoint costs spans, never
events or a shutdown."""
import json
import socket
import time

from testing import otlp_proto
from testing.mqtt_publish import publish_all, publish_v5
from testing.otlp_receiver import OtlpReceiver
from testing.seedance_process import Seedance, metric, scrape
from testing.ports import free_port
from testing.waiting import wait_until

TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
PUBLISHER_SPAN = "00f067aa0ba902b7"
SAMPLED = f"00-{TRACE}-{PUBLISHER_SPAN}-01"
NOT_SAMPLED = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00"
CONSUMER, PRODUCER = 5, 4
STATUS_ERROR = 2


def headers_of(receiver):
    return [dict((k.lower(), v) for k, v in h) for h in receiver.request_headers]


def test_with_tracing_on_the_exported_spans_form_one_trace(broker, receiver):
    logs = OtlpReceiver()
    traces = OtlpReceiver()
    metrics_port = free_port()
    sd = Seedance(f"""
sources:
  - type: mqtt
    uri: "{broker.uri}"
    topic: "site/#"
    protocol: "5"
processors:
  - type: lua
    code: |
      function process(event)
        event.payload.seen = event.headers.traceparent
        return event
      end
sinks:
  - type: otlp
    endpoint: "{logs.url}"
  - type: http
    endpoint: "{receiver.url}/in"
    format: single
    event_headers: [traceparent]
tracing:
  url: "{traces.url}/v1/traces"
  interval: 100ms
  service_name: gw-7
metrics:
  listen: 127.0.0.1:{metrics_port}
""").start()
    try:
        assert sd.wait_log("connected to"), sd.stderr()
        time.sleep(0.3)
        t0 = time.time_ns()
        publish_v5(broker.port, "site/north/line", json.dumps({"n": 1}),
                   user_properties=[("traceparent", SAMPLED)])
        publish_v5(broker.port, "site/south/line", json.dumps({"n": 2}),
                   user_properties=[("traceparent", NOT_SAMPLED)])
        publish_v5(broker.port, "site/east/line", json.dumps({"n": 3}))
        assert wait_until(lambda: len(logs.records()) == 3 and receiver.count(200) == 3, 15), \
            sd.stderr()[-3000:]
        assert wait_until(lambda: len(traces.spans()) >= 3, 15), sd.stderr()[-3000:]
        time.sleep(0.5)  # nothing more comes
        text = scrape(f"http://127.0.0.1:{metrics_port}/metrics")
        assert metric(text, "seedance_tracing_spans_total", result="exported") == 3
    finally:
        assert sd.stop() == 0
        logs.stop()
        traces.stop()
    spans = traces.spans()
    assert len(spans) == 3, spans  # the unsampled and the untraced messages made none
    assert all(span.trace_id.hex() == TRACE for _, _, span in spans)
    resource, scope, _ = spans[0]
    assert resource["service.name"] == "gw-7" and resource["service.version"]
    assert scope.name == "seedance"
    by_name = {span.name: span for _, _, span in spans}
    assert set(by_name) == {"process mqtt", "deliver otlp", "deliver http"}
    process = by_name["process mqtt"]
    assert process.parent_span_id.hex() == PUBLISHER_SPAN and process.kind == CONSUMER
    assert t0 <= process.start_time_unix_nano <= process.end_time_unix_nano
    assert otlp_proto.attributes(process.attributes)["messaging.destination.name"] == \
        "site/north/line"
    for sink in ("otlp", "http"):
        deliver = by_name[f"deliver {sink}"]
        assert deliver.parent_span_id == process.span_id and deliver.kind == PRODUCER
        assert otlp_proto.attributes(deliver.attributes)["seedance.sink"] == sink
        assert process.start_time_unix_nano <= deliver.start_time_unix_nano
        assert deliver.start_time_unix_nano <= deliver.end_time_unix_nano
        assert deliver.status.code != STATUS_ERROR
    # One trace: every parent is the publisher's span or a span Seedance exported.
    ids = {span.span_id.hex() for _, _, span in spans} | {PUBLISHER_SPAN}
    assert all(span.parent_span_id.hex() in ids for _, _, span in spans)
    # Both receivers got the same trace id, with Seedance's process span as the parent, and the
    # script saw that traceparent too.
    carried = f"00-{TRACE}-{process.span_id.hex()}-01"
    assert [h.get("traceparent") for h in headers_of(receiver)].count(carried) == 1
    seen = {e["n"]: e.get("seen") for e in receiver.accepted_events()}
    assert seen == {1: carried, 2: NOT_SAMPLED, 3: None}
    by_topic = {otlp_proto.attributes(r.attributes)["messaging.destination.name"]: r
                for _, _, r in logs.records()}
    assert by_topic["site/north/line"].trace_id.hex() == TRACE
    assert by_topic["site/north/line"].span_id == process.span_id
    # Parent-based: an unsampled traceparent passes through as it came; no trace is started.
    assert [h.get("traceparent") for h in headers_of(receiver)].count(NOT_SAMPLED) == 1
    assert by_topic["site/east/line"].trace_id == b""


def test_sample_ratio_starts_traces_and_a_rejected_delivery_is_an_error_span(broker):
    logs = OtlpReceiver()
    logs.answers = [(400, "application/json", b'{"code": 3, "message": "no such tenant"}')]
    traces = OtlpReceiver()
    sd = Seedance(f"""
sources:
  - type: mqtt
    uri: "{broker.uri}"
    topic: "site/#"
    protocol: "5"
sinks:
  - type: otlp
    endpoint: "{logs.url}"
tracing:
  url: "{traces.url}/v1/traces"
  sample_ratio: 1
  interval: 100ms
""").start()
    try:
        assert sd.wait_log("connected to"), sd.stderr()
        time.sleep(0.3)
        publish_v5(broker.port, "site/north/line", json.dumps({"n": 1}))
        assert wait_until(lambda: len(traces.spans()) >= 2, 15), sd.stderr()[-3000:]
    finally:
        assert sd.stop() == 0
        logs.stop()
        traces.stop()
    by_name = {span.name: span for _, _, span in traces.spans()}
    process, deliver = by_name["process mqtt"], by_name["deliver otlp"]
    assert process.parent_span_id == b""  # a root: Seedance started this trace
    assert deliver.trace_id == process.trace_id and deliver.parent_span_id == process.span_id
    assert deliver.status.code == STATUS_ERROR and "no such tenant" in deliver.status.message
    # The refused request carried the new trace (the record is the one that was refused).
    _, _, refused, _ = logs.requests[0]
    record = refused.resource_logs[0].scope_logs[0].log_records[0]
    assert record.trace_id == process.trace_id and record.span_id == process.span_id


def test_a_dead_tracing_endpoint_costs_spans_not_events(broker, receiver):
    with socket.socket() as s:  # a port that refuses connections
        s.bind(("127.0.0.1", 0))
        dead = s.getsockname()[1]
    metrics_port = free_port()
    sd = Seedance(f"""
sources:
  - type: mqtt
    uri: "{broker.uri}"
    topic: "site/#"
    protocol: "5"
sinks:
  - type: http
    endpoint: "{receiver.url}/in"
tracing:
  url: "http://127.0.0.1:{dead}/v1/traces"
  sample_ratio: 1
  interval: 100ms
  max_queued_spans: 16
metrics:
  listen: 127.0.0.1:{metrics_port}
""").start()
    began = time.monotonic()
    try:
        assert sd.wait_log("connected to"), sd.stderr()
        time.sleep(0.3)
        publish_all(broker.port, [("site/x", json.dumps({"i": i})) for i in range(40)])
        assert receiver.wait_for_events(40, 15), sd.stderr()[-3000:]

        def lost():
            text = scrape(f"http://127.0.0.1:{metrics_port}/metrics")
            return (metric(text, "seedance_tracing_spans_total", result="export_failed") +
                    metric(text, "seedance_tracing_spans_total", result="queue_full"))
        assert wait_until(lambda: lost() == 80, 15), lost()  # a process and a deliver span each
        started = time.monotonic()
    finally:
        assert sd.stop() == 0
    assert time.monotonic() - started < 10
    # Logged, at most once per 10 s for each kind of loss.
    lines = sd.stderr().count("failed, dropped")
    assert 1 <= lines <= 1 + (time.monotonic() - began) // 10, sd.stderr()
    assert sorted(e["i"] for e in receiver.accepted_events()) == list(range(40))
