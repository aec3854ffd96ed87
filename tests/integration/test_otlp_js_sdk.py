"""Issue 47's acceptance for the otlp source: the OpenTelemetry JS SDK (npm, pinned in
tests/otel_js/package-lock.json, installed by scripts/setup) exports logs, metrics and spans
over OTLP/HTTP protobuf with its batch processors and its exporters' retries
(tests/otel_js/export.js). Seedance is killed with SIGKILL in the middle of the export and
started again: every record the SDK was told was exported arrives at the HTTP receiver, with
its resource, scope, attributes, times and trace context."""
import os
import shutil
import subprocess
import time

from testing.ports import free_port
from testing.seedance_process import Seedance
from testing.waiting import wait_until

OTEL_JS = os.path.join(os.path.dirname(__file__), "..", "otel_js")


def config(port, receiver_url):
    return f"""
sources:
  - type: otlp
    listen: 127.0.0.1:{port}
sinks:
  - type: http
    endpoint: "{receiver_url}/in"
    encoding: envelope
    retry_initial: 20ms
    retry_max: 200ms
"""


def sdk_installed():
    assert shutil.which("node"), "node is missing: run scripts/setup"
    assert os.path.isdir(os.path.join(OTEL_JS, "node_modules", "@opentelemetry", "sdk-logs")), \
        "the OpenTelemetry JS SDK is missing: run scripts/setup (npm ci in tests/otel_js)"


def read_accepted(path):
    logs, spans, points, failed, done = set(), set(), set(), [], False
    if not os.path.exists(path):
        return logs, spans, points, failed, done
    with open(path) as f:
        for line in f:
            if not line.endswith("\n"):
                break
            kind, _, rest = line.strip().partition(" ")
            if kind == "log":
                logs.add(int(rest))
            elif kind == "span":
                spans.add(int(rest))
            elif kind == "point":
                points.add(rest)
            elif kind == "failed":
                failed.append(rest)
            elif kind == "done":
                done = True
    return logs, spans, points, failed, done


def test_the_js_sdk_exports_through_a_kill_9_and_loses_nothing_it_was_told_was_accepted(
        receiver, tmp_path):
    sdk_installed()
    port = free_port()
    work = str(tmp_path / "run")
    text = config(port, receiver.url)
    sd = Seedance(text, workdir=work).start()
    accepted = str(tmp_path / "accepted.txt")
    count = 4000
    client = subprocess.Popen(["node", "export.js", f"http://127.0.0.1:{port}", str(count),
                               accepted], cwd=OTEL_JS, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True)
    try:
        # Kill once the SDK has some exports answered, while it still has more to send.
        assert wait_until(lambda: len(read_accepted(accepted)[0]) >= 200, 60), \
            "the SDK exported nothing"
        sd.kill()
        killed_with = len(read_accepted(accepted)[0])
        time.sleep(0.5)  # the SDK's exports meet a closed port and retry
        sd = Seedance(text, workdir=work).start()
        out, _ = client.communicate(timeout=180)
        assert client.returncode == 0, out[-3000:]
        logs, spans, points, failed, done = read_accepted(accepted)
        assert done, out[-3000:]
        assert killed_with < count, "the kill came after the last export"
        assert len(logs) > killed_with and spans and points

        def delivered():
            got_logs, got_spans, got_points = set(), set(), set()
            for e in receiver.accepted_events():
                p = e["payload"]
                if e["topic"] == "otlp/logs":
                    got_logs.add(p["attributes"]["i"])
                elif e["topic"] == "otlp/traces":
                    got_spans.add(p["attributes"]["i"])
                elif e["topic"] == "otlp/metrics":
                    got_points.add(f'{p["name"]} {p["time_unix_nano"]}')
            return got_logs, got_spans, got_points

        assert wait_until(lambda: logs <= delivered()[0] and spans <= delivered()[1] and
                          points <= delivered()[2], 60), \
            (len(logs - delivered()[0]), len(spans - delivered()[1]),
             len(points - delivered()[2]))
        print(f"kill -9 after {killed_with} of {count} log records exported; exported: "
              f"{len(logs)} logs, {len(spans)} spans, {len(points)} points "
              f"({len(failed)} exports failed for good: {failed[:3]}); all delivered")
    finally:
        if client.poll() is None:
            client.kill()
        sd.stop()

    events = receiver.accepted_events()
    log = next(e for e in events if e["topic"] == "otlp/logs")
    span_of = {e["payload"]["attributes"]["i"]: e for e in events if e["topic"] == "otlp/traces"}
    p = log["payload"]
    assert p["resource"]["service.name"] == "js-client" and p["resource"]["host.name"] == "gw-js"
    assert p["scope"]["name"] == "seedance-test" and p["scope"]["version"] == "1.0.0"
    assert p["severity_text"] == "WARN" and p["severity_number"] == 13
    assert p["body"] == f'record {p["attributes"]["i"]}' and p["attributes"]["line"] == "a"
    assert abs(p["time_unix_nano"] / 1e9 - time.time()) < 600
    # The log was emitted inside its span: the same trace, as a header and in the payload.
    span = span_of.get(p["attributes"]["i"])
    if span is not None:
        assert p["trace_id"] == span["payload"]["trace_id"]
        assert p["span_id"] == span["payload"]["span_id"]
        assert log["headers"]["traceparent"] == span["headers"]["traceparent"]
    point = next(e for e in events if e["topic"] == "otlp/metrics")["payload"]
    assert point["name"] == "parts.made" and point["type"] == "sum" and point["is_monotonic"]
    assert point["attributes"] == {"line": "a"} and point["unit"] == "1"
