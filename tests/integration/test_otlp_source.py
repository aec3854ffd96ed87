"""The otlp source (issue 47, item 1): OTLP/HTTP requests built and answers read by Debian's
python3-protobuf (tests/testing/otlp_proto.py: opentelemetry-proto's messages), and OTLP/JSON,
sent over a real connection; the events checked at a real HTTP receiver. Logs, metrics and
spans with their resource, scope, attributes, times and trace context; partial_success for
malformed records (kept in the error output); the documented answers to malformed, oversize
and unsupported bodies; 503 with Retry-After under backpressure; nothing answered 200 lost to
a kill -9 (sources/otlp/otlp_records.h, docs/otlp.md#the-otlp-source)."""
import gzip
import json
import threading
import time
import urllib.error
import urllib.request

from testing import otlp_proto
from testing.ports import free_port
from testing.ndjson import complete_lines
from testing.seedance_process import Seedance
from testing.waiting import wait_until

TRACE = bytes.fromhex("4bf92f3577b34da6a3ce929d0e0e4736")
SPAN = bytes.fromhex("00f067aa0ba902b7")
PB = "application/x-protobuf"


def config(port, receiver_url, tmp_path, source_extra="", extra=""):
    return f"""
sources:
  - type: otlp
    listen: 127.0.0.1:{port}
{source_extra}
sinks:
  - type: http
    endpoint: "{receiver_url}/in"
    encoding: envelope
    retry_initial: 20ms
    retry_max: 200ms
  - type: file
    name: errors
    path: {tmp_path / "errors.ndjson"}
    inputs: [error]
{extra}
"""


def post(port, path, body, content_type=PB, headers=None, timeout=30):
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=body, method="POST",
                                 headers={"Content-Type": content_type, **(headers or {})})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.read(), dict(r.headers)
    except urllib.error.HTTPError as e:
        return e.code, e.read(), dict(e.headers)


kv = otlp_proto.add_attribute


def logs_request(bodies, trace_id=TRACE, span_id=SPAN):
    r = otlp_proto.ExportLogsServiceRequest()
    rl = r.resource_logs.add()
    kv(rl.resource.attributes, "service.name", "checkout")
    kv(rl.resource.attributes, "host.name", "gw-1")
    sl = rl.scope_logs.add()
    sl.scope.name = "app.logger"
    sl.scope.version = "2.1"
    for i, body in enumerate(bodies):
        lr = sl.log_records.add()
        lr.time_unix_nano = 1_700_000_000_000_000_000 + i
        lr.observed_time_unix_nano = 1_700_000_000_500_000_000
        lr.severity_number = 13
        lr.severity_text = "WARN"
        lr.body.string_value = body
        kv(lr.attributes, "n", i)
        kv(lr.attributes, "ok", True)
        lr.trace_id = trace_id
        lr.span_id = span_id
        lr.flags = 1
    return r


def metrics_request():
    r = otlp_proto.ExportMetricsServiceRequest()
    rm = r.resource_metrics.add()
    kv(rm.resource.attributes, "service.name", "plc-exporter")
    sm = rm.scope_metrics.add()
    sm.scope.name = "meter"
    g = sm.metrics.add()
    g.name = "line.temperature"
    g.unit = "Cel"
    for line, value in (("a", 21.5), ("b", 22.25)):
        p = g.gauge.data_points.add()
        p.time_unix_nano = 1_700_000_001_000_000_000
        p.as_double = value
        kv(p.attributes, "line", line)
    s = sm.metrics.add()
    s.name = "parts.made"
    s.sum.aggregation_temporality = 2
    s.sum.is_monotonic = True
    p = s.sum.data_points.add()
    p.start_time_unix_nano = 1_699_999_000_000_000_000
    p.time_unix_nano = 1_700_000_001_000_000_000
    p.as_int = 1234
    h = sm.metrics.add()
    h.name = "cycle.time"
    hp = h.histogram.data_points.add()
    hp.time_unix_nano = 1_700_000_001_000_000_000
    hp.count = 6
    hp.sum = 14.5
    hp.bucket_counts.extend([1, 3, 2])
    hp.explicit_bounds.extend([1.0, 5.0])
    return r


def spans_request():
    r = otlp_proto.ExportTraceServiceRequest()
    rs = r.resource_spans.add()
    kv(rs.resource.attributes, "service.name", "gateway")
    ss = rs.scope_spans.add()
    ss.scope.name = "tracer"
    parent = ss.spans.add()
    parent.trace_id, parent.span_id = TRACE, SPAN
    parent.name = "POST /orders"
    parent.kind = 2
    parent.start_time_unix_nano = 1_700_000_002_000_000_000
    parent.end_time_unix_nano = 1_700_000_002_250_000_000
    parent.flags = 1
    parent.trace_state = "vendor=1"
    child = ss.spans.add()
    child.trace_id, child.span_id, child.parent_span_id = TRACE, bytes(range(1, 9)), SPAN
    child.name = "db.query"
    child.kind = 3
    child.start_time_unix_nano = 1_700_000_002_010_000_000
    child.end_time_unix_nano = 1_700_000_002_200_000_000
    child.status.code = 2
    child.status.message = "timeout"
    ev = child.events.add()
    ev.name = "retry"
    ev.time_unix_nano = 1_700_000_002_100_000_000
    return r


def by_topic(receiver, topic):
    return [e for e in receiver.accepted_events() if e.get("topic") == topic]


def test_logs_metrics_and_spans_become_events_with_their_context(receiver, tmp_path):
    port = free_port()
    sd = Seedance(config(port, receiver.url, tmp_path)).start()
    try:
        status, body, headers = post(port, "/v1/logs",
                                     logs_request(["disk 91% full", "fan slow"]).SerializeToString())
        assert status == 200 and headers["Content-Type"] == PB, (status, body)
        assert not otlp_proto.ExportLogsServiceResponse.FromString(body).HasField("partial_success")
        status, body, _ = post(port, "/v1/metrics",
                               gzip.compress(metrics_request().SerializeToString()),
                               headers={"Content-Encoding": "gzip"})
        assert status == 200, body
        assert post(port, "/v1/traces", spans_request().SerializeToString())[0] == 200
        assert receiver.wait_for_events(2 + 4 + 2, timeout=10)
    finally:
        assert sd.stop() == 0, sd.stderr()[-2000:]
    logs = sorted(by_topic(receiver, "otlp/logs"), key=lambda e: e["payload"]["time_unix_nano"])
    assert [e["payload"]["body"] for e in logs] == ["disk 91% full", "fan slow"]
    first = logs[0]["payload"]
    assert first["time_unix_nano"] == 1_700_000_000_000_000_000
    assert first["observed_time_unix_nano"] == 1_700_000_000_500_000_000
    assert (first["severity_number"], first["severity_text"]) == (13, "WARN")
    assert first["attributes"] == {"n": 0, "ok": True}
    assert first["resource"] == {"service.name": "checkout", "host.name": "gw-1"}
    assert first["scope"] == {"name": "app.logger", "version": "2.1", "attributes": {}}
    assert first["trace_id"] == TRACE.hex() and first["span_id"] == SPAN.hex()
    assert logs[0]["headers"]["traceparent"] == f"00-{TRACE.hex()}-{SPAN.hex()}-01"

    points = {(e["payload"]["name"], e["payload"]["attributes"].get("line")): e["payload"]
              for e in by_topic(receiver, "otlp/metrics")}
    assert points[("line.temperature", "a")]["value"] == 21.5
    assert points[("line.temperature", "b")]["unit"] == "Cel"
    assert points[("line.temperature", "b")]["type"] == "gauge"
    made = points[("parts.made", None)]
    assert (made["value"], made["type"], made["is_monotonic"],
            made["aggregation_temporality"]) == (1234, "sum", True, "cumulative")
    assert made["start_time_unix_nano"] == 1_699_999_000_000_000_000
    cycle = points[("cycle.time", None)]
    assert (cycle["count"], cycle["sum"], cycle["bucket_counts"], cycle["explicit_bounds"]) == \
        (6, 14.5, [1, 3, 2], [1.0, 5.0])
    assert made["resource"] == {"service.name": "plc-exporter"}

    spans = {e["payload"]["name"]: e for e in by_topic(receiver, "otlp/traces")}
    parent, child = spans["POST /orders"], spans["db.query"]
    assert parent["headers"]["traceparent"] == f"00-{TRACE.hex()}-{SPAN.hex()}-01"
    assert parent["headers"]["tracestate"] == "vendor=1"
    assert parent["payload"]["kind"] == "server" and child["payload"]["kind"] == "client"
    assert child["payload"]["parent_span_id"] == SPAN.hex()
    assert child["payload"]["status"] == {"code": "error", "message": "timeout"}
    assert child["payload"]["events"][0]["name"] == "retry"
    assert child["headers"]["traceparent"].split("-")[1] == TRACE.hex()


def test_json_bodies_are_read_and_answered_as_json(receiver, tmp_path):
    port = free_port()
    sd = Seedance(config(port, receiver.url, tmp_path)).start()
    doc = {"resourceLogs": [{"resource": {"attributes": [
        {"key": "service.name", "value": {"stringValue": "web"}}]},
        "scopeLogs": [{"scope": {"name": "js"}, "logRecords": [
            {"timeUnixNano": "1700000000000000042", "severityNumber": 9,
             "body": {"kvlistValue": {"values": [
                 {"key": "msg", "value": {"stringValue": "hi"}},
                 {"key": "sizes", "value": {"arrayValue": {"values": [
                     {"intValue": "3"}, {"doubleValue": 0.5}]}}}]}},
             "traceId": TRACE.hex(), "spanId": SPAN.hex(), "flags": 1},
            {"body": {"stringValue": "bad ids"}, "traceId": "abcd"}]}]}]}
    try:
        status, body, headers = post(port, "/v1/logs", json.dumps(doc).encode(),
                                     content_type="application/json")
        assert status == 200 and headers["Content-Type"] == "application/json", body
        answer = json.loads(body)
        assert answer["partialSuccess"]["rejectedLogRecords"] == "1", answer
        assert "trace_id" in answer["partialSuccess"]["errorMessage"], answer
        status, body, _ = post(port, "/v1/logs", b'{"resourceLogs": [{"scopeLogs": 7}]}',
                               content_type="application/json")
        assert status == 400, body
        err = json.loads(body)
        assert err["code"] == 3 and "$.resourceLogs[0].scopeLogs: expected an object" in \
            err["message"], err
        assert receiver.wait_for_events(1, timeout=10)
    finally:
        assert sd.stop() == 0, sd.stderr()[-2000:]
    (e,) = receiver.accepted_events()
    assert e["payload"]["body"] == {"msg": "hi", "sizes": [3, 0.5]}
    assert e["payload"]["time_unix_nano"] == 1_700_000_000_000_000_042
    assert e["payload"]["resource"] == {"service.name": "web"}
    assert e["headers"]["traceparent"] == f"00-{TRACE.hex()}-{SPAN.hex()}-01"


def test_refused_records_get_partial_success_and_go_to_the_error_output(receiver, tmp_path):
    port = free_port()
    sd = Seedance(config(port, receiver.url, tmp_path)).start()
    req = logs_request(["good", "bad"])
    req.resource_logs[0].scope_logs[0].log_records[1].trace_id = b"\x01\x02\x03"
    try:
        status, body, _ = post(port, "/v1/logs", req.SerializeToString())
        assert status == 200, body
        ps = otlp_proto.ExportLogsServiceResponse.FromString(body).partial_success
        assert ps.rejected_log_records == 1, ps
        assert "a trace_id that is not 16 bytes" in ps.error_message, ps
        assert receiver.wait_for_events(1, timeout=10)
        errors = tmp_path / "errors.ndjson"
        assert wait_until(lambda: errors.exists() and len(complete_lines(errors)) == 1, 10)
        assert "trace_id" in complete_lines(errors)[0]["headers"]["reason"]
    finally:
        assert sd.stop() == 0, sd.stderr()[-2000:]
    assert [e["payload"]["body"] for e in receiver.accepted_events()] == ["good"]


def test_malformed_oversize_and_unsupported_bodies_get_the_documented_answers(receiver,
                                                                                tmp_path):
    port = free_port()
    sd = Seedance(config(port, receiver.url, tmp_path,
                         source_extra="    max_body: 64KiB\n    max_records: 10\n")).start()

    def rpc_status(body):
        return otlp_proto.Status.FromString(body)

    try:
        status, body, _ = post(port, "/v1/logs", b"\x0a\xff\xff\xff\x0f")  # a length past the end
        assert status == 400 and rpc_status(body).code == 3, body
        assert "not an OTLP export request" in rpc_status(body).message
        status, body, _ = post(port, "/v1/logs", b"x" * 70000)
        assert status == 413, body
        bomb = gzip.compress(b"\0" * (10 << 20))
        status, body, _ = post(port, "/v1/logs", bomb, headers={"Content-Encoding": "gzip"})
        assert status == 413 and rpc_status(body).code == 8, body
        status, body, _ = post(port, "/v1/logs",
                               logs_request([str(i) for i in range(11)]).SerializeToString())
        assert status == 413 and "more than 10 records" in rpc_status(body).message, body
        # One 40 KB resource repeated by 10 records would be 400 KB of events from a 40 KB body:
        # more than 4 x max_body (256 KiB) is refused whole.
        big = logs_request([str(i) for i in range(10)])
        kv(big.resource_logs[0].resource.attributes, "pad", "r" * 40000)
        status, body, _ = post(port, "/v1/logs", big.SerializeToString())
        assert status == 413 and "bytes as events" in rpc_status(body).message, body
        status, body, _ = post(port, "/v1/logs", b"{}", content_type="text/plain")
        assert status == 415 and "application/x-protobuf" in rpc_status(body).message, body
        assert post(port, "/v1/profiles", b"")[0] == 404
        # A body nested 150 levels deep (AnyValue arrays): one refused record, no crash.
        req = logs_request(["ok"])
        deep = otlp_proto.AnyValue()
        node = deep
        for _ in range(150):
            node = node.array_value.values.add()
        node.string_value = "leaf"
        bad = req.resource_logs[0].scope_logs[0].log_records.add()
        bad.body.CopyFrom(deep)
        status, body, _ = post(port, "/v1/logs", req.SerializeToString())
        assert status == 200
        ps = otlp_proto.ExportLogsServiceResponse.FromString(body).partial_success
        assert ps.rejected_log_records == 1 and "nested deeper than 128" in ps.error_message, ps
        assert post(port, "/v1/logs", logs_request(["after"]).SerializeToString())[0] == 200
        assert receiver.wait_for_events(2, timeout=10)
    finally:
        assert sd.stop() == 0, sd.stderr()[-2000:]


def test_a_full_pipeline_answers_503_with_retry_after(receiver, tmp_path):
    """The sink is down and the queue small: once the pipeline is full the client gets 503
    with Retry-After (retryable in the OTLP spec) and a google.rpc.Status saying nothing was
    taken; every request answered 200 is delivered once the sink is back."""
    port = free_port()
    receiver.fail_next(100000, 503)
    sd = Seedance(config(port, receiver.url, tmp_path,
                         source_extra="    ack_timeout: 1s\n",
                         extra="pipeline:\n  queue_capacity: 20\nqueue:\n  max_disk: 64KiB\n"
                               "  segment_size: 16KiB\n  when_full: block\n")).start()
    accepted, full = [], []
    try:
        for i in range(400):
            status, body, headers = post(port, "/v1/logs", logs_request(
                [json.dumps({"req": i, "k": k, "pad": "p" * 100}) for k in range(5)])
                .SerializeToString())
            if status == 200:
                accepted.append(i)
                continue
            assert status == 503 and headers.get("Retry-After") == "1", (status, headers)
            assert otlp_proto.Status.FromString(body).code == 14  # UNAVAILABLE
            if b"nothing of this request was taken" in body:
                full.append(i)
                if len(full) >= 3:
                    break
        assert full, f"the pipeline never filled up ({len(accepted)} taken)"
        with receiver.lock:
            receiver.fail_queue.clear()
        want = {(i, k) for i in accepted for k in range(5)}

        def got():
            return {(json.loads(e["payload"]["body"])["req"], json.loads(e["payload"]["body"])["k"])
                    for e in receiver.accepted_events()}

        assert wait_until(lambda: want <= got(), 30)
    finally:
        sd.stop()


def test_a_kill_9_loses_no_record_answered_200(receiver, tmp_path):
    """20,000 log records in 400 requests; Seedance is killed with SIGKILL half way and started
    again while the client keeps sending (a request without an answer is sent again, as an
    OTLP exporter retries). Every record of every request answered 200 is delivered."""
    port = free_port()
    work = str(tmp_path / "run")
    text = config(port, receiver.url, tmp_path)
    sd = Seedance(text, workdir=work).start()
    requests, per_request = 400, 50
    answered = []

    def client():
        for i in range(requests):
            body = logs_request([f"{i}:{k}" for k in range(per_request)]).SerializeToString()
            deadline = time.time() + 60
            while time.time() < deadline:
                try:
                    status, _, _ = post(port, "/v1/logs", body, timeout=10)
                except OSError:
                    time.sleep(0.05)
                    continue
                if status == 200:
                    answered.append(i)
                    break
                time.sleep(0.05)

    t = threading.Thread(target=client)
    t.start()
    try:
        assert wait_until(lambda: len(answered) >= requests // 2, 60), "no progress"
        sd.kill()
        sd = Seedance(text, workdir=work).start()
        t.join(180)
        assert len(answered) == requests, f"{len(answered)} of {requests} answered"
        want = {f"{i}:{k}" for i in range(requests) for k in range(per_request)}
        assert wait_until(lambda: want <= {e["payload"]["body"]
                                           for e in receiver.accepted_events()}, 120)
    finally:
        sd.stop()
