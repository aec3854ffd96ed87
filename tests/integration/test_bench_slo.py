"""seedance bench, bench compare and slo-check, end to end: a real mosquitto, the real binary as
the pipeline under test, a real Prometheus Pushgateway."""
import json
import os
import shutil
import subprocess
import time
import urllib.request
import xml.etree.ElementTree as ET

import pytest

from testing.ports import free_port, wait_port
from testing.seedance_process import BIN, SOURCE_DIR, Seedance

SEED = os.path.join(SOURCE_DIR, "examples", "seed")
PUSHGATEWAY = shutil.which("prometheus-pushgateway") or "/usr/bin/prometheus-pushgateway"


def bench(*args, timeout=120):
    return subprocess.run([BIN, "bench", *args], capture_output=True, text=True, timeout=timeout)


def write_report(path, throughput, p99, runs=None):
    report = {"throughput_eps": throughput, "latency_ms": {"p50": 1, "p95": 2, "p99": p99},
              "rss_peak_kb": 8000, "rss_idle_kb": 6000, "cpu_s": 1.0, "ready_ms": 3.0,
              "events_in": 1000, "events_out": 1000,
              "runs": [{"throughput_eps": throughput, "latency_ms": {"p50": 1, "p95": 2, "p99": r}}
                       for r in (runs or [])]}
    path.write_text(json.dumps(report))
    return str(path)


def test_bench_runs_the_reference_job_through_the_broker(broker, tmp_path):
    out, svg = tmp_path / "report.json", tmp_path / "run.svg"
    r = bench("--config", os.path.join(SEED, "config.yaml"), "--filter", os.path.join(SEED, "filter.lua"),
              "--broker", broker.uri, "--count", "3000", "--rate", "3000", "--repeat", "2",
              "--out", str(out), "--svg", str(svg))
    assert r.returncode == 0, r.stderr
    assert "\r" not in r.stderr, "no progress line when stderr is not a terminal"
    report = json.loads(out.read_text())
    for key in ("events_in", "events_out", "throughput_eps", "latency_ms", "rss_peak_kb",
                "rss_idle_kb", "cpu_s", "ready_ms", "host", "build"):
        assert key in report, key
    assert report["repetitions"] == 2 and len(report["runs"]) == 2
    assert report["summary"] == "median of the runs"
    for run in report["runs"]:
        # Every generated event passes the filter (21.5 °C) and arrives exactly once counted.
        assert run["events_in"] == 3000 and run["events_out"] == 3000
        lat = run["latency_ms"]
        assert 0 < lat["p50"] <= lat["p95"] <= lat["p99"] <= lat["max"]
        assert 0 < run["rss_idle_kb"] <= run["rss_peak_kb"] < 64 * 1024
        assert run["cpu_s"] > 0 and run["ready_ms"] > 0
        # 3000 events at 3000/s: about a second, never faster than the offered rate.
        assert 1000 < run["throughput_eps"] <= 3100
        assert sum(p["events_out"] for p in run["timeline"][-1:]) == 3000
        assert sum(sum(p["latency_buckets"]) for p in run["timeline"]) == 3000
    tputs = sorted(run["throughput_eps"] for run in report["runs"])
    assert report["throughput_eps"] == pytest.approx(sum(tputs) / 2, rel=1e-3)
    assert report["host"]["cpus"] >= 1 and report["build"]["version"]
    root = ET.parse(svg).getroot()
    assert root.tag.endswith("svg")
    assert len(root.findall("{http://www.w3.org/2000/svg}polyline")) == 3  # P50, P99, RSS


def test_bench_with_the_builtin_generator_and_a_file_sink(tmp_path):
    config = tmp_path / "gen.yaml"
    config.write_text("""
sources:
  - type: generate
    payload: '{"temperature": 20}'
sinks:
  - type: file
    path: /nonexistent/out.ndjson
    encoding: envelope
""")
    r = bench("--config", str(config), "--count", "2000", "--rate", "4000")
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)  # no --out: the report goes to stdout
    assert report["events_in"] == 2000 and report["events_out"] == 2000
    assert report["duplicates"] == 0
    assert "generate" in report["job"]["load"]


def test_bench_says_why_nothing_arrived(broker, tmp_path):
    # 200 °C: the reference filter drops every event; the bench must not report a silent zero.
    r = bench("--config", os.path.join(SEED, "config.yaml"), "--filter", os.path.join(SEED, "filter.lua"),
              "--broker", broker.uri, "--count", "200", "--payload", '{"temperature": 200}',
              "--settle", "1s")
    assert r.returncode == 1
    assert "nothing was delivered" in r.stderr and "bench_seq" in r.stderr


def test_bench_refuses_what_it_cannot_measure(tmp_path):
    config = tmp_path / "stdout.yaml"
    config.write_text("sources:\n  - type: generate\nsinks:\n  - type: stdout\n")
    r = bench("--config", str(config), "--count", "10")
    assert r.returncode == 2 and "http and file sinks" in r.stderr
    r = bench("--config", str(tmp_path / "missing.yaml"), "--count", "10")
    assert r.returncode == 2
    r = bench("--config", str(config))
    assert r.returncode == 2 and "--count or --duration" in r.stderr


def test_compare_gates_on_thresholds_and_directions(tmp_path):
    base = write_report(tmp_path / "base.json", 10000, 10.0)
    slower = write_report(tmp_path / "slower.json", 10000, 10.8)
    fewer = write_report(tmp_path / "fewer.json", 9000, 10.0)
    r = subprocess.run([BIN, "bench", "compare", "--baseline", base, "--target", slower,
                        "--threshold", "5%"], capture_output=True, text=True)
    assert r.returncode == 1, r.stdout + r.stderr
    row = next(l for l in r.stdout.splitlines() if l.startswith("latency_ms.p99"))
    assert "REGRESSED" in row and "+8.0%" in row
    r = subprocess.run([BIN, "bench", "compare", "--baseline", base, "--target", slower,
                        "--threshold", "5%", "--metric-threshold", "latency_ms.p99=10%"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout
    r = subprocess.run([BIN, "bench", "compare", "--baseline", base, "--target", fewer],
                       capture_output=True, text=True)
    assert r.returncode == 1 and "throughput_eps" in r.stdout
    r = subprocess.run([BIN, "bench", "compare", "--baseline", base, "--target", str(tmp_path / "nope.json")],
                       capture_output=True, text=True)
    assert r.returncode == 2


def test_compare_uses_medians_of_repetitions(tmp_path):
    # One noisy run (50 ms) does not move the median of three.
    base = write_report(tmp_path / "b.json", 1000, 10, runs=[10, 10.1, 9.9])
    target = write_report(tmp_path / "t.json", 1000, 50, runs=[10.2, 50, 9.8])
    r = subprocess.run([BIN, "bench", "compare", "--baseline", base, "--target", target],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout
    assert "comparing medians: baseline 3 run(s), target 3 run(s)" in r.stdout


def slo_check(*args):
    return subprocess.run([BIN, "slo-check", *args], capture_output=True, text=True, timeout=60)


def test_slo_check_on_a_running_seedance(receiver):
    port = free_port()
    sd = Seedance(f"""
sources:
  - type: generate
    rate: 200
sinks:
  - type: http
    endpoint: {receiver.url}/ingest
metrics:
  listen: 127.0.0.1:{port}
""").start()
    try:
        url = f"http://127.0.0.1:{port}/metrics"
        time.sleep(0.5)
        ok = slo_check("--metric", "p95_latency_ms", "--slo", "500", "--window", "2s", "--url", url)
        assert ok.returncode == 0, ok.stdout + ok.stderr
        value = float(ok.stdout.split("):")[1].split()[0])
        assert 0 < value < 500
        fail = slo_check("--metric", "p95_latency_ms", "--slo", "0.00001", "--window", "1s", "--url", url)
        assert fail.returncode == 1 and "FAIL" in fail.stdout
        eps = slo_check("--metric", "throughput_eps", "--slo", "100", "--window", "2s", "--url", url)
        assert eps.returncode == 0, eps.stdout
        assert 140 < float(eps.stdout.split("):")[1].split()[0]) < 260  # generating 200/s
    finally:
        assert sd.stop() == 0
    bad = slo_check("--metric", "p95_latency_ms", "--slo", "1", "--window", "0", "--url", url)
    assert bad.returncode == 2  # nothing listening any more


def test_slo_check_on_a_report_and_push_to_a_real_pushgateway(tmp_path):
    report = tmp_path / "r.json"
    report.write_text(json.dumps({
        "latency_bucket_bounds_ms": [1, 10, 100],
        "runs": [{"throughput_eps": 500, "latency_ms": {"p50": 0.5, "p95": 5.0, "p99": 9.0},
                  "timeline": [{"t_s": 1, "events_out": 500, "latency_buckets": [450, 50, 0, 0]}]}]}))
    assert slo_check("--metric", "p95_latency_ms", "--slo", "120", "--report", str(report)).returncode == 0
    assert slo_check("--metric", "p95_latency_ms", "--slo", "4", "--report", str(report)).returncode == 1
    assert slo_check("--metric", "p95_ms", "--slo", "4", "--report", str(report)).returncode == 2
    assert slo_check("--metric", "p95_latency_ms", "--slo", "4").returncode == 2

    port = free_port()
    gw = subprocess.Popen([PUSHGATEWAY, f"--web.listen-address=127.0.0.1:{port}"],
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        assert wait_port(port), "pushgateway did not start"
        r = slo_check("--metric", "p95_latency_ms", "--slo", "120", "--report", str(report),
                      "--push", f"http://127.0.0.1:{port}", "--job", "gate")
        assert r.returncode == 0, r.stdout + r.stderr
        text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
        lines = [l for l in text.splitlines() if l.startswith("seedance_slo_")]
        assert any(l.startswith("seedance_slo_ok{") and 'job="gate"' in l and
                   'metric="p95_latency_ms"' in l and l.endswith(" 1") for l in lines), lines
        assert any(l.startswith("seedance_slo_value{") and l.endswith(" 5") for l in lines), lines
    finally:
        gw.terminate()
        gw.wait(10)
