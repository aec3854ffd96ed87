"""The prometheus_scrape source (issue 47, item 4) against real HTTP servers on loopback: the
text format and OpenMetrics by content negotiation, each sample an event, an `up` event per
scrape, and the hostile targets — down, silent, oversized, malformed, too many samples — each
failing its scrape with the reason, never the source (sources/prometheus/scrape_source.h)."""
import http.server
import json
import threading
import time

from testing.ports import free_port
from testing.seedance_process import Seedance, metric, scrape, validate
from testing.waiting import wait_until

TEXT = (b'# HELP x_total things\n# TYPE x_total counter\n'
        b'x_total{a="1",path="C:\\\\d \\"q\\""} 3 1700000000000\ntemp NaN\nbig +Inf\n')
OPEN_METRICS = (b'# TYPE req counter\nreq_total{code="200"} 7 1700000000.5 # {trace_id="ab"} 1\n'
                b'# EOF\n')


class Targets:
    """One server, a page per path; records each request's Accept header."""

    def __init__(self):
        self.accepts = []
        self.times = []  # (path, time.monotonic()) of each request
        self.counting = 0
        outer = self

        class H(http.server.BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_GET(self):  # noqa: N802
                outer.accepts.append(self.headers.get("Accept", ""))
                outer.times.append((self.path, time.monotonic()))
                if self.path == "/silent":
                    time.sleep(3)
                    return
                content_type = "text/plain; version=0.0.4"
                if self.path == "/text":
                    body = TEXT
                elif self.path == "/om" and "openmetrics" in self.headers.get("Accept", ""):
                    body, content_type = OPEN_METRICS, "application/openmetrics-text; version=1.0.0"
                elif self.path == "/huge":
                    body = b"x 1\n" * 300_000  # 1.2 MB, over max_body
                elif self.path == "/malformed":
                    body = b"ok 1\nbroken{a=\"1\" 2\n"
                elif self.path == "/counting":  # 100 samples, valued by the request's number
                    outer.counting += 1
                    body = b"".join(b'c{i="%d"} %d\n' % (i, outer.counting) for i in range(100))
                elif self.path == "/wide":  # 20,000 samples, 1.1 MB
                    body = b"".join(b'w{i="%d",site="plant-north-line-7"} %d\n' % (i, i)
                                    for i in range(20_000))
                elif self.path == "/many":
                    body = b"".join(b"s%d 1\n" % i for i in range(50))
                else:
                    self.send_response(404)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                self.send_response(200)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def url(self, path):
        return f"http://127.0.0.1:{self.port}{path}"

    def stop(self):
        self.server.shutdown()


def events(path):
    if not path.exists():
        return []
    return [json.loads(l) for l in path.read_text().splitlines()]


def test_pages_in_both_formats_become_events_and_every_scrape_an_up_event(tmp_path):
    targets = Targets()
    out = tmp_path / "out.ndjson"
    down = f"http://127.0.0.1:{targets.port}/missing"
    sd = Seedance(f"""
sources:
  - type: prometheus_scrape
    name: node
    targets: ["{targets.url('/text')}", "{targets.url('/om')}", "{down}"]
    interval: 300ms
    timeout: 250ms
sinks:
  - type: file
    path: {out}
    encoding: payload
queue:
  data_dir: {tmp_path}/data
""").start()
    try:
        assert wait_until(lambda: sum(1 for e in events(out) if e["name"] == "up") >= 9,
                          timeout=15), sd.stderr()
    finally:
        sd.stop()
        targets.stop()
    got = events(out)
    x = next(e for e in got if e["name"] == "x_total")
    assert x["labels"] == {"a": "1", "path": 'C:\\d "q"'}
    assert x["value"] == 3 and x["timestamp_ms"] == 1700000000000
    assert x["instance"] == f"127.0.0.1:{targets.port}" and x["job"] == "node"
    assert next(e for e in got if e["name"] == "temp")["value"] == "NaN"
    assert next(e for e in got if e["name"] == "big")["value"] == "+Inf"
    req = next(e for e in got if e["name"] == "req_total")  # OpenMetrics: seconds, exemplar
    assert req["timestamp_ms"] == 1700000000500 and req["value"] == 7
    assert all("openmetrics-text" in a and "text/plain;version=0.0.4" in a
               for a in targets.accepts)
    ups = [e for e in got if e["name"] == "up"]
    assert {e["value"] for e in ups if e["scrape_samples"] == 3} == {1}
    failed = [e for e in ups if e["value"] == 0]
    assert failed and all(e["error"] == "answered HTTP 404" for e in failed)
    assert all(e["scrape_duration_seconds"] >= 0 for e in ups)
    # Logged once for the episode, not once per scrape.
    assert sd.stderr().count("scrape of " + down + " failed") == 1


def test_hostile_targets_fail_their_scrape_with_the_reason(tmp_path):
    targets = Targets()
    out = tmp_path / "out.ndjson"
    paths = ["/silent", "/huge", "/malformed", "/many"]
    sd = Seedance(f"""
sources:
  - type: prometheus_scrape
    targets: [{", ".join('"' + targets.url(p) + '"' for p in paths)}]
    interval: 1s
    timeout: 500ms
    max_body: 1MiB
    max_samples: 20
sinks:
  - type: file
    path: {out}
    encoding: payload
queue:
  data_dir: {tmp_path}/data
""").start()
    try:
        def errors():
            return {e["error"] for e in events(out) if e["name"] == "up" and e["value"] == 0}
        assert wait_until(lambda: len(errors()) >= 4, timeout=15), (errors(), sd.stderr())
        assert sd.proc.poll() is None
    finally:
        sd.stop()
        targets.stop()
    errs = sorted(errors())
    assert any(e == "no answer within timeout (500 ms)" for e in errs), errs
    assert any("over max_body" in e for e in errs), errs
    assert any(e.startswith("line 2: not a sample") for e in errs), errs
    assert any("more than 20 samples" in e for e in errs), errs
    # Nothing of a failed page was emitted.
    assert not [e for e in events(out) if e["name"] != "up"]


def blocked_pipeline(target, interval, receiver, port, tmp_path, extra=""):
    """A scrape of `target` into a pipeline that fills up while the receiver refuses: the sink
    retries, a small queue that blocks, 20 events in the ingest queue."""
    timeout = f"{int(interval.rstrip('ms')) * 3 // 4}ms"
    return f"""
sources:
  - type: prometheus_scrape
    name: node
    targets: ["{target}"]
    interval: {interval}
    timeout: {timeout}
sinks:
  - type: http
    endpoint: "{receiver.url}/in"
    retry_initial: 20ms
    retry_max: 100ms
pipeline:
  queue_capacity: 20
queue:
  data_dir: {tmp_path}/data
  max_disk: 64KiB
  segment_size: 16KiB
  when_full: block
metrics:
  listen: 127.0.0.1:{port}
{extra}"""


def test_a_full_pipeline_holds_one_page_per_target_and_skips_its_scrapes(receiver, tmp_path):
    """docs/prometheus-scrape.md, Backpressure: while the pipeline is full (the sink down, a
    small queue that blocks) the page being emitted waits in the source, the target is not
    scraped again (what waits is that one page) and each scrape due meanwhile is counted as
    `scrape_skipped`. Once the sink is back, every page scraped arrives whole: no page cut."""
    targets = Targets()
    port = free_port()
    receiver.fail_next(1_000_000, 503)
    sd = Seedance(blocked_pipeline(targets.url('/counting'), "200ms", receiver, port,
                                   tmp_path)).start()
    url = f"http://127.0.0.1:{port}/metrics"

    def skipped():
        return metric(scrape(url), "seedance_events_dropped_total", reason="scrape_skipped")
    try:
        assert wait_until(lambda: skipped() >= 3, timeout=20), sd.stderr()[-2000:]
        scraped, skipped_before = targets.counting, skipped()
        time.sleep(1.0)  # five scrapes due: all skipped, the target left alone
        assert targets.counting == scraped, "a target was scraped while its page still waited"
        assert skipped() >= skipped_before + 4
        with receiver.lock:
            receiver.fail_queue.clear()
        assert wait_until(lambda: any(e["name"] == "c" and e["value"] == scraped
                                      for e in receiver.accepted_events()), timeout=30)
        time.sleep(0.5)
    finally:
        sd.stop()
        targets.stop()
    pages = {}
    for p in receiver.accepted_events():  # the http sink sends the payloads
        if p["name"] == "c":
            pages.setdefault(int(p["value"]), set()).add(p["labels"]["i"])
    assert scraped in pages
    for n, labels in pages.items():
        assert len(labels) == 100, f"page {n} arrived with {len(labels)} of its 100 samples"


def test_a_page_still_waiting_at_a_stop_is_not_taken_and_the_log_says_so(receiver, tmp_path):
    """docs/prometheus-scrape.md, Backpressure: a page enters the pipeline whole, so a stop
    leaves no part of one in the source; a page still waiting then is not taken, and the log
    says how many samples. (Before, a page went in piecewise through the 20-event ingest queue
    and a stop dropped its remainder silently: a cut page, seen once in CI.)"""
    targets = Targets()
    port = free_port()
    receiver.fail_next(1_000_000, 503)
    sd = Seedance(blocked_pipeline(targets.url('/counting'), "200ms", receiver, port,
                                   tmp_path)).start()
    url = f"http://127.0.0.1:{port}/metrics"
    try:
        # A skipped scrape: the target's page still waits in the source.
        assert wait_until(lambda: metric(scrape(url), "seedance_events_dropped_total",
                                         reason="scrape_skipped") >= 2, timeout=20)
    finally:
        sd.stop()
        targets.stop()
    assert "stopping: 1 scraped page(s) (100 samples) still waiting for room" in sd.stderr(), \
        sd.stderr()[-2000:]


def test_a_waiting_page_is_charged_to_limits_memory(receiver, tmp_path):
    """docs/governor.md: a page that waits in the source for a full pipeline is counted by
    limits.memory like the queue it waits for (so the governor sees it), and given back once
    it left."""
    targets = Targets()
    port = free_port()
    receiver.fail_next(1_000_000, 503)
    sd = Seedance(blocked_pipeline(targets.url('/wide'), "500ms", receiver, port, tmp_path,
                                   extra="limits:\n  memory: 64MiB\n")).start()
    url = f"http://127.0.0.1:{port}/metrics"

    def in_memory():
        return metric(scrape(url), "seedance_memory_bytes", tier="memory")
    try:
        assert wait_until(lambda: metric(scrape(url), "seedance_events_dropped_total",
                                         reason="scrape_skipped") >= 2, timeout=20)
        # 20,000 events of ~200 bytes wait in the source; the rest of the pipeline holds 20
        # events and what 64 KiB of queue gives the sink.
        held = in_memory()
        assert held >= 2_000_000, held
        with receiver.lock:
            receiver.fail_queue.clear()
        assert wait_until(lambda: len([e for e in receiver.accepted_events()
                                       if e["name"] == "w"]) >= 20_000, timeout=60)
        targets.stop()
        # Everything scraped since has left too: nothing is charged any more.
        assert wait_until(lambda: in_memory() < 100_000, timeout=30), in_memory()
    finally:
        sd.stop()
        targets.stop()


def test_a_missed_scrape_is_skipped_not_run_late(tmp_path):
    """sources/prometheus/scrape_source.h: scrapes are timed from the start, and a slot missed
    (here: the process stopped with SIGSTOP for 1.5 s, 7 slots of 200 ms) is skipped, not run
    late: after SIGCONT the one scrape that was due runs, then the schedule goes on, with no
    burst of catch-up scrapes."""
    import os
    import signal
    targets = Targets()
    sd = Seedance(f"""
sources:
  - type: prometheus_scrape
    targets: ["{targets.url('/text')}"]
    interval: 200ms
    timeout: 100ms
sinks:
  - type: file
    path: {tmp_path / "out.ndjson"}
queue:
  data_dir: {tmp_path}/data
""").start()
    try:
        assert wait_until(lambda: len(targets.times) >= 3, timeout=10), sd.stderr()
        os.kill(sd.proc.pid, signal.SIGSTOP)
        time.sleep(1.5)
        before = len(targets.times)
        resumed = time.monotonic()
        os.kill(sd.proc.pid, signal.SIGCONT)
        time.sleep(1.0)
        after = [t for _, t in targets.times[before:] if t - resumed < 1.0]
    finally:
        sd.stop()
        targets.stop()
    # 1 s after the resume: the scrape that was due, then the slots of the schedule (5).
    # Running the 7 missed slots late would make 12 or more.
    print("scrapes after the resume (s):", [round(t - resumed, 3) for t in after])
    assert 4 <= len(after) <= 7, [round(t - resumed, 3) for t in after]


def test_a_timeout_over_the_interval_names_both_even_when_defaulted(tmp_path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text("sources:\n  - type: prometheus_scrape\n    targets: [\"http://127.0.0.1:1/m\"]\n"
                   "    interval: 500ms\nsinks:\n  - type: stdout\n")
    r = validate(cfg)
    assert r.returncode != 0
    assert ("c.yaml:2:5: source \"prometheus_scrape\": timeout: must be above 0 and at most "
            "interval (timeout 10000 ms, the default, interval 500 ms)") in r.stderr, r.stderr
