"""The otlp source: OTLP/HTTP intake (records/s, CPU s per 100k) of logs, protobuf and JSON, and OTLP metrics on to Prometheus by remote write."""
# Intake: 100,000 log records in export requests of 1,000 (each with its resource, scope,
# body, severity, two attributes and a trace context, as an SDK sends them), built once by
# Debian's python3-protobuf, POSTed by 2 keep-alive clients; otlp source -> file sink through
# the durable queue. Delivered records/s runs from the first request to the last line in the
# file; answered records/s to the last 200. CPU is Seedance's own (/proc).
# Remote write: 100,000 gauge data points (requests of 1,000, 10 series) from the otlp source
# to Debian's prometheus (remote-write receiver on, an out-of-order window), label_fields
# [attributes]; delivered = the sink's delivered events, from the first request to the last.
# Fluent Bit's opentelemetry input is the peer the issue names; Debian 12 does not package
# Fluent Bit, so there is no side-by-side run here.
import http.client
import json
import os
import shutil
import statistics
import subprocess
import tempfile
import threading
import time

from common import RELEASE_BIN, count_lines, cpu_seconds, free_port

from testing import otlp_proto  # noqa: E402
from testing.prometheus_server import Prometheus  # noqa: E402
from testing.seedance_process import metric, scrape  # noqa: E402

N = 100_000
PER_REQUEST = 1000
CLIENTS = 2
ROUNDS = 3
TRACE = bytes.fromhex("4bf92f3577b34da6a3ce929d0e0e4736")


kv = otlp_proto.add_attribute


def log_bodies():
    bodies = []
    for r in range(N // PER_REQUEST):
        req = otlp_proto.ExportLogsServiceRequest()
        rl = req.resource_logs.add()
        kv(rl.resource.attributes, "service.name", "line-controller")
        kv(rl.resource.attributes, "host.name", "gw-7")
        sl = rl.scope_logs.add()
        sl.scope.name = "app"
        sl.scope.version = "1.0"
        for k in range(PER_REQUEST):
            lr = sl.log_records.add()
            lr.time_unix_nano = 1_700_000_000_000_000_000 + r * PER_REQUEST + k
            lr.severity_number = 9
            lr.severity_text = "INFO"
            lr.body.string_value = f"cycle {r}-{k} done in 412 ms"
            kv(lr.attributes, "station", "s4")
            kv(lr.attributes, "seq", r * PER_REQUEST + k)
            lr.trace_id = TRACE
            lr.span_id = (r * PER_REQUEST + k + 1).to_bytes(8, "big")
            lr.flags = 1
        bodies.append(req.SerializeToString())
    return bodies


def metric_bodies():
    base = time.time_ns() - 60 * 10**9  # recent: Prometheus takes what its head block covers
    bodies = []
    for r in range(N // PER_REQUEST):
        req = otlp_proto.ExportMetricsServiceRequest()
        sm = req.resource_metrics.add().scope_metrics.add()
        m = sm.metrics.add()
        m.name = "line_temperature_celsius"
        for k in range(PER_REQUEST):
            p = m.gauge.data_points.add()
            # 10 series; each point 1 ms after its series' previous one
            p.time_unix_nano = base + (r * PER_REQUEST + k) * 100_000
            p.as_double = 20 + k % 7
            kv(p.attributes, "line", f"l{k % 10}")
        bodies.append(req.SerializeToString())
    return bodies


def wait_port(port):
    deadline = time.time() + 10
    while time.time() < deadline:
        try:
            http.client.HTTPConnection("127.0.0.1", port, timeout=1).connect()
            return
        except OSError:
            time.sleep(0.02)


def post_all(port, path, bodies, content_type):
    """POSTs every body (CLIENTS keep-alive connections); returns the seconds to the last 200."""
    t0 = time.perf_counter()

    def client(part):
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        for body in part:
            while True:
                conn.request("POST", path, body, {"Content-Type": content_type})
                r = conn.getresponse()
                r.read()
                if r.status == 200:
                    break
                assert r.status == 503, r.status  # backpressure: as an SDK does, again
                time.sleep(0.05)

    threads = [threading.Thread(target=client, args=(bodies[i::CLIENTS],)) for i in range(CLIENTS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return t0, time.perf_counter() - t0


def run(sink_section, bodies, content_type, path, delivered, work, metrics_port):
    port = free_port()
    config = os.path.join(work, "config.yaml")
    with open(config, "w") as f:
        f.write(f"""
sources:
  - type: otlp
    listen: 127.0.0.1:{port}
sinks:
{sink_section}
queue:
  data_dir: {os.path.join(work, "data")}
metrics:
  listen: 127.0.0.1:{metrics_port}
""")
    p = subprocess.Popen([RELEASE_BIN, "--config", config, "--log-level", "warn"], cwd=work)
    try:
        wait_port(port)
        cpu0 = cpu_seconds(p.pid)
        t0, answered = post_all(port, path, bodies, content_type)
        while delivered() < N and time.perf_counter() - t0 < 180:
            time.sleep(0.01)
        elapsed = time.perf_counter() - t0
        cpu = cpu_seconds(p.pid) - cpu0
        assert delivered() >= N, f"{delivered()} of {N} delivered"
    finally:
        p.terminate()
        p.wait(30)
    return {"delivered_per_s": N / elapsed, "answered_per_s": N / answered,
            "cpu_s_per_100k": cpu / N * 100_000}


def to_json(body, cls):
    """The OTLP/JSON form of a protobuf request (as the JS SDK's JSON exporters send it)."""
    from google.protobuf import json_format
    doc = json_format.MessageToDict(cls.FromString(body))

    def hexify(o):  # OTLP/JSON writes ids as hex, not base64
        if isinstance(o, dict):
            for k in ("traceId", "spanId"):
                if k in o:
                    import base64
                    o[k] = base64.b64decode(o[k]).hex()
            for v in o.values():
                hexify(v)
        elif isinstance(o, list):
            for v in o:
                hexify(v)
    hexify(doc)
    return json.dumps(doc).encode()


def main():
    logs = log_bodies()
    logs_json = [to_json(b, otlp_proto.ExportLogsServiceRequest) for b in logs]
    points = metric_bodies()
    # Two clients' requests interleave, and each round sends the same samples again: an
    # out-of-order window takes both (a sample sent again is a duplicate of the same value).
    prometheus = Prometheus(out_of_order_window="2h").start()
    results = {}
    try:
        cases = {
            "logs_protobuf": (logs, "application/x-protobuf", "/v1/logs"),
            "logs_json": (logs_json, "application/json", "/v1/logs"),
        }
        rounds = {name: [] for name in list(cases) + ["metrics_remote_write"]}
        for _ in range(ROUNDS):
            for name, (bodies, ctype, path) in cases.items():
                work = tempfile.mkdtemp(prefix="seedance-bench-otlp-")
                out = os.path.join(work, "out.ndjson")
                try:
                    rounds[name].append(run(f"  - type: file\n    path: {out}\n", bodies, ctype,
                                            path, lambda: count_lines(out), work, free_port()))
                finally:
                    shutil.rmtree(work, ignore_errors=True)
            work = tempfile.mkdtemp(prefix="seedance-bench-otlp-")
            metrics_port = free_port()

            def delivered():
                try:
                    return int(metric(scrape(f"http://127.0.0.1:{metrics_port}/metrics"),
                                      "seedance_events_out_total",
                                      component="prometheus_remote_write"))
                except (OSError, TypeError, ValueError):
                    return 0

            section = f"""  - type: prometheus_remote_write
    endpoint: {prometheus.write_url}
    label_fields: [attributes]
"""
            try:
                rounds["metrics_remote_write"].append(
                    run(section, points, "application/x-protobuf", "/v1/metrics", delivered,
                        work, metrics_port))
            finally:
                shutil.rmtree(work, ignore_errors=True)
        med = statistics.median
        for name, rs in rounds.items():
            results[name] = {k: round(med(r[k] for r in rs), 3 if k.startswith("cpu") else 0)
                             for k in rs[0]}
    finally:
        prometheus.remove()
    print(json.dumps({
        "benchmark": "otlp",
        "job": f"otlp source -> file sink (logs) and -> prometheus_remote_write (gauge points), "
               f"durable queue; {CLIENTS} keep-alive clients posting export requests of "
               f"{PER_REQUEST} records",
        "records": N,
        "rounds": ROUNDS,
        **results,
        "peer": "Fluent Bit (opentelemetry input) is not packaged for Debian 12: no side-by-side "
                "run here",
    }))


if __name__ == "__main__":
    main()
