"""The gpu source and `seedance gpu sample` with the real binary, against a stand-in NVML
(tests/tools/nvml_stub.c, built as libnvidia-ml-stub.so and loaded by dlopen exactly as the
driver's library is) and Jetson sysfs fixtures (tests/data/jetson/): readings through the
pipeline, a missing driver, a GPU lost mid-run, the example pipelines (the window one through a
real influxd against a golden line-protocol file, the alert one through a real mosquitto), and
no memory growth over 10,000 readings."""
import calendar
import json
import os
import re
import subprocess
import time
import urllib.request

import pytest

from testing.broker import Broker
from testing.ports import free_port
from testing.influxd import Influxd
from testing.mqtt_subscribe import Subscriber
from testing.process_stats import status_kb
from testing.seedance_process import BIN, SOURCE_DIR, Seedance
from testing.waiting import wait_until

STUB = os.environ.get("SEEDANCE_NVML_STUB_LIB",
                      os.path.join(os.path.dirname(BIN), "libnvidia-ml-stub.so"))
JETSON = os.path.join(SOURCE_DIR, "tests", "data", "jetson")
GOLDEN = os.path.join(SOURCE_DIR, "tests", "integration", "golden", "gpu_window.lp")


@pytest.fixture
def stub(tmp_path, monkeypatch):
    """Writes the stub's script; the binary started afterwards reads it."""
    def write(text):
        path = tmp_path / "nvml_stub.txt"
        path.write_text(text)
        monkeypatch.setenv("SEEDANCE_NVML_STUB", str(path))
        return path
    return write


def lines(path):
    try:
        with open(path) as f:
            return [json.loads(l) for l in f if l.endswith("\n")]
    except FileNotFoundError:
        return []


def metrics(port):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
        return r.read().decode()


def metric(text, name, **labels):
    for line in text.splitlines():
        if not line.startswith(name + "{") and not line.startswith(name + " "):
            continue
        if all(f'{k}="{v}"' in line for k, v in labels.items()):
            return float(line.rsplit(" ", 1)[1])
    return None


def gpu_config(out, extra="", source_extra="", port=None):
    listen = f"metrics:\n  listen: 127.0.0.1:{port}\n" if port else ""
    return f"""
sources:
  - type: gpu
    interval: 200ms
    nvml_library: {STUB}
{source_extra}
{extra}
sinks:
  - type: file
    path: {out}
    encoding: payload
{listen}"""


def test_readings_go_through_the_pipeline_as_scripted(tmp_path, stub):
    stub("""count 2
name 0 NVIDIA H200
uuid 0 GPU-aaaa
series 0 mem_total 1000000
series 0 mem_used 100000 200000 300000
series 0 util_gpu 10 20 30
series 0 power_mw 250000
series 0 energy_mj 1000 2000 3000
series 0 temp 40
series 0 sm_clock 1980
series 0 mem_clock 3200
series 0 pcie_tx_kb 10
series 0 pcie_rx_kb 20
gpm 0 1
series 0 gpm_sm_util 75
series 0 gpm_sm_occ 30
series 0 gpm_dram_bw 12
series 0 gpm_pcie_tx 1000
series 0 gpm_pcie_rx 2000
process 0 4242 65536
series 1 util_gpu NS
""")
    out = tmp_path / "out.ndjson"
    port = free_port()
    s = Seedance(gpu_config(out, port=port)).start()
    try:
        assert wait_until(lambda: len(lines(out)) >= 20, 15), s.stderr()
        text = metrics(port)
    finally:
        assert s.stop() == 0
    got = lines(out)
    d0 = [e for e in got if e["device"] == 0]
    d1 = [e for e in got if e["device"] == 1]
    assert len(d0) >= 10 and len(d1) >= 10
    first = d0[0]
    assert first["name"] == "NVIDIA H200" and first["uuid"] == "GPU-aaaa"
    assert first["backend"] == "nvml" and first["state"] == "ok"
    # The scripted series, in order (each reading advances it once).
    used = [e["memory_used_bytes"] for e in d0[:6]]
    assert used == [100000, 200000, 300000] * 2, used
    assert [e["gpu_util_pct"] for e in d0[:3]] == [10, 20, 30]
    assert first["memory_total_bytes"] == 1000000 and first["memory_free_bytes"] == 900000
    assert first["memory_used_pct"] == 10
    assert first["power_w"] == 250 and first["temperature_c"] == 40
    assert first["sm_clock_mhz"] == 1980 and first["memory_clock_mhz"] == 3200
    assert first["pcie_tx_bytes_per_s"] == 10240 and first["pcie_rx_bytes_per_s"] == 20480
    assert [e["energy_j"] for e in d0[:3]] == [1, 2, 3]
    assert first["processes"] == [{"pid": 4242, "name": first["processes"][0]["name"],
                                   "used_memory_bytes": 65536}]
    assert "gpm_sm_util_pct" not in first  # GPM compares two readings
    assert d0[1]["gpm_sm_util_pct"] == 75 and d0[1]["gpm_sm_occupancy_pct"] == 30
    assert d0[1]["gpm_dram_bw_util_pct"] == 12 and d0[1]["gpm_pcie_rx_bytes_per_s"] == 2000
    assert "gpu_util_pct" not in d1[0]  # not supported there: absent, not 0
    # One line per device for what it lacks, not one per reading.
    log = s.stderr()
    assert len(re.findall(r"device 1: not available \(Not Supported \(3\)\): .*gpu_util_pct",
                          log)) == 1, log
    assert metric(text, "seedance_gpu_available", component="gpu") == 1
    assert metric(text, "seedance_gpu_device_lost", component="gpu", device="0") == 0


def test_event_time_is_the_reading_time_and_periods_hold(tmp_path, stub):
    stub("count 1\nseries 0 temp 40\n")
    out = tmp_path / "out.ndjson"
    cfg = gpu_config(out).replace("encoding: payload", "encoding: envelope")
    s = Seedance(cfg).start()
    try:
        assert wait_until(lambda: len(lines(out)) >= 16, 15), s.stderr()
    finally:
        s.stop()
    events = lines(out)[:16]
    assert all(e["topic"] == "gpu/0" for e in events)
    stamps = [e["time"] for e in events]

    def ns(t):  # 2026-12-04T20:41:42.786252Z
        whole, frac = t.rstrip("Z").split(".")
        return calendar.timegm(time.strptime(whole, "%Y-%m-%dT%H:%M:%S")) * 1e9 + int(
            frac.ljust(9, "0"))
    periods = [(ns(b) - ns(a)) / 1e6 for a, b in zip(stamps, stamps[1:])]
    # Paced by absolute deadlines: the mean period is the interval, whatever one reading took.
    assert abs(sum(periods) / len(periods) - 200) < 20, periods


def test_no_driver_marks_the_source_unavailable_and_the_rest_runs(tmp_path):
    out = tmp_path / "out.ndjson"
    port = free_port()
    cfg = f"""
sources:
  - type: gpu
    backend: nvml
    nvml_library: /nonexistent/libnvidia-ml.so.1
  - type: generate
    rate: 50
    count: 20
sinks:
  - type: file
    path: {out}
    encoding: payload
metrics:
  listen: 127.0.0.1:{port}
"""
    s = Seedance(cfg).start()
    try:
        assert wait_until(lambda: len(lines(out)) >= 20, 15), s.stderr()
        time.sleep(0.5)
        text = metrics(port)
    finally:
        assert s.stop() == 0
    log = s.stderr()
    assert len(re.findall(r"no GPU to read \(nvml: cannot load /nonexistent/libnvidia-ml.so.1",
                          log)) == 1, log
    assert "the rest of the pipeline runs" in log
    assert metric(text, "seedance_gpu_available", component="gpu") == 0


def test_on_unavailable_fail_stops_the_start_with_file_and_line(tmp_path):
    cfg = f"""
sources:
  - type: gpu
    backend: jetson
    sysfs_root: {tmp_path}
    on_unavailable: fail
sinks:
  - type: stdout
queue:
  data_dir: {tmp_path}/data
"""
    path = tmp_path / "c.yaml"
    path.write_text(cfg)
    r = subprocess.run([BIN, "--config", str(path)], capture_output=True, text=True, timeout=30)
    assert r.returncode == 1, r.stderr
    assert re.search(r"c\.yaml:3:5: source \"gpu\": no GPU to read: jetson: no Jetson GPU",
                     r.stderr), r.stderr


def test_a_lost_gpu_is_reported_and_the_others_go_on(tmp_path, stub):
    stub("count 2\nseries 0 temp 40\nseries 1 temp 41\nlost_after 1 3\nxid 1 79 3\n")
    out = tmp_path / "out.ndjson"
    port = free_port()
    s = Seedance(gpu_config(out, port=port)).start()
    try:
        assert wait_until(lambda: sum(e["device"] == 1 and e["state"] == "lost"
                                      for e in lines(out)) >= 5, 15), s.stderr()
        text = metrics(port)
    finally:
        assert s.stop() == 0
    got = lines(out)
    d0, d1 = [e for e in got if e["device"] == 0], [e for e in got if e["device"] == 1]
    assert all(e["state"] == "ok" and e["temperature_c"] == 40 for e in d0)
    assert [e["state"] for e in d1[:5]] == ["ok", "ok", "ok", "lost", "lost"]
    assert d1[3]["error"] == "GPU is lost (15)"
    assert any(e.get("xids") == [79] for e in d1), d1[:5]
    log = s.stderr()
    assert len(re.findall(r"WARN .*device 1 \(GPU-00000000-stub-1\) lost: GPU is lost", log)) == 1
    assert len(re.findall(r"WARN .*device 1: Xid 79", log)) == 1
    assert metric(text, "seedance_gpu_device_lost", component="gpu", device="1") == 1
    assert metric(text, "seedance_gpu_device_lost", component="gpu", device="0") == 0


def test_a_wedged_driver_call_is_reported_and_cannot_hang_shutdown(tmp_path, stub):
    """NVML can block for minutes on a wedged GPU: the source says so, the pipeline runs on,
    readings resume when the call returns, and a stop during the block is not held by it."""
    stub("count 1\nseries 0 temp 40\nhang 0 5 6\n")  # the 5th reading blocks 6 s
    out = tmp_path / "out.ndjson"
    port = free_port()
    s = Seedance(gpu_config(out, port=port)).start()
    try:
        assert s.wait_log(r"WARN .*no GPU reading for \d+ s: a driver call has not returned",
                          10), s.stderr()
        assert metric(metrics(port), "seedance_gpu_stalled", component="gpu") == 1
        n = len(lines(out))
        assert s.wait_log(r"GPU readings resumed", 10), s.stderr()
        assert wait_until(lambda: len(lines(out)) >= n + 5, 10)
        assert metric(metrics(port), "seedance_gpu_stalled", component="gpu") == 0
    finally:
        assert s.stop() == 0

    stub("count 1\nseries 0 temp 40\nhang 0 3 60\n")  # blocks for a minute
    s = Seedance(gpu_config(tmp_path / "out2.ndjson")).start()
    try:
        assert s.wait_log(r"no GPU reading for", 10), s.stderr()
        t0 = time.time()
        assert s.stop(timeout=20) == 0
        assert time.time() - t0 < 10, "shutdown waited for the driver"
    finally:
        s.kill()
    assert "its thread is left to end on its own" in s.stderr()


@pytest.mark.parametrize("fixture,uuid", [("orin", "jetson-17000000.gpu"),
                                          ("xavier-nx", "jetson-17000000.gv11b")])
def test_jetson_sysfs(tmp_path, fixture, uuid):
    out = tmp_path / "out.ndjson"
    cfg = gpu_config(out, source_extra=f"    backend: jetson\n    sysfs_root: {JETSON}/{fixture}")
    s = Seedance(cfg).start()
    try:
        assert wait_until(lambda: len(lines(out)) >= 3, 15), s.stderr()
    finally:
        s.stop()
    e = lines(out)[0]
    assert e["backend"] == "jetson" and e["uuid"] == uuid and "processes" not in e
    assert e["memory_total_bytes"] > 0 and 0 <= e["gpu_util_pct"] <= 100
    assert e["temperature_c"] > 0 and e["sm_clock_mhz"] > 0
    assert ("power_w" in e) == (fixture == "orin")


def test_example_window_pipeline_into_influxd_matches_the_golden_lines(tmp_path, stub,
                                                                      monkeypatch):
    """examples/gpu/window-influxdb.yaml verbatim: constant readings, so every window's avg, max
    and P99 are known; the points influxd holds, without their times, are the golden file."""
    stub("""count 2
uuid 0 GPU-aaaa
series 0 mem_total 85899345920
series 0 mem_used 21474836480
series 0 util_gpu 97
series 0 util_mem 41
series 0 power_mw 612500
series 0 temp 55
series 0 sm_clock 1980
series 0 pcie_tx_kb 1024
series 0 pcie_rx_kb 4096
gpm 0 1
series 0 gpm_sm_util 88.5
series 0 gpm_dram_bw 12.25
uuid 1 GPU-bbbb
series 1 util_gpu 3
series 1 temp 31
""")
    influxd = Influxd().start()
    try:
        influxd.query("CREATE DATABASE gpu")
        for k, v in {"GPU_INTERVAL": "200ms", "GPU_WINDOW": "1s", "INFLUX_URL": influxd.url,
                     "INFLUX_DB": "gpu", "NVML_LIBRARY": STUB,
                     "SEEDANCE_DATA_DIR": str(tmp_path / "data")}.items():
            monkeypatch.setenv(k, v)
        with open(os.path.join(SOURCE_DIR, "examples", "gpu", "window-influxdb.yaml")) as f:
            s = Seedance(f.read(), workdir=str(tmp_path / "run")).start()

        def points():
            series = influxd.query("SELECT * FROM gpu_window GROUP BY *", db="gpu")
            out = set()
            for ser in series:
                tags = ",".join(f"{k}={v}" for k, v in sorted(ser["tags"].items()))
                cols = ser["columns"]
                for row in ser["values"]:
                    f = dict(zip(cols, row))
                    out.add(f"gpu_window,{tags} avg={f['avg']!r},max={f['max']!r},"
                            f"p99={f['p99']!r}")
            return out
        try:
            # A window of each of the 16 series (11 figures of device 0, 5 of device 1), then
            # more: the first window may be partial, but constant readings give every window
            # the same figures.
            assert wait_until(lambda: len(influxd.query(
                "SELECT count(avg) FROM gpu_window GROUP BY *", db="gpu")) >= 16, 30), s.stderr()
            time.sleep(1.5)
            got = points()
        finally:
            assert s.stop() == 0
    finally:
        influxd.stop()
    with open(GOLDEN) as f:
        golden = {l.strip() for l in f if l.strip() and not l.startswith("#")}
    assert got == golden, "\n".join(sorted(got ^ golden))


def test_example_alert_pipeline_raises_and_clears_through_mosquitto(tmp_path, stub, monkeypatch):
    """examples/gpu/alert-mqtt.yaml verbatim: memory at 95% for 4 readings raises one alert after
    the third, and clears it once it falls back."""
    stub("count 1\nseries 0 mem_total 1000\nseries 0 mem_used 500 500 950 950 950 950 500 500\n")
    broker = Broker().start()
    try:
        sub = Subscriber(broker.port, topic="alerts/#")
        for k, v in {"GPU_INTERVAL": "200ms", "BROKER_URI": broker.uri, "NVML_LIBRARY": STUB,
                     "SEEDANCE_DATA_DIR": str(tmp_path / "data")}.items():
            monkeypatch.setenv(k, v)
        with open(os.path.join(SOURCE_DIR, "examples", "gpu", "alert-mqtt.yaml")) as f:
            s = Seedance(f.read(), workdir=str(tmp_path / "run")).start()
        try:
            assert sub.wait_for(4, 20), s.stderr()  # two cycles of 8 readings
        finally:
            assert s.stop() == 0
    finally:
        broker.stop()
    got = [(t, json.loads(p)) for t, p, _ in sub.received()[:4]]
    assert [t for t, _ in got] == ["alerts/gpu/0"] * 4
    assert [a["state"] for _, a in got] == ["raised", "cleared", "raised", "cleared"]
    assert got[0][1]["memory_used_pct"] == 95 and got[0][1]["samples"] == 3
    assert got[1][1]["memory_used_pct"] == 50


def test_no_memory_growth_over_ten_thousand_readings(tmp_path, stub):
    stub("count 64\n" + "".join(f"series {d} temp 40 41\nprocess {d} {1000 + d} 4096\n"
                                  for d in range(64)))
    out = tmp_path / "out.ndjson"
    s = Seedance(gpu_config(out)).start()
    try:
        def count():
            with open(out, "rb") as f:
                return f.read().count(b"\n")
        assert wait_until(lambda: os.path.exists(out) and count() >= 1500, 30), s.stderr()
        before = status_kb(s.proc.pid, "RssAnon")
        assert wait_until(lambda: count() >= 11500, 60), s.stderr()
        after = status_kb(s.proc.pid, "RssAnon")
    finally:
        assert s.stop() == 0
    assert after - before < 512, f"anonymous RSS {before} -> {after} KiB over 10,000 readings"


def test_gpu_sample_writes_ndjson_svg_and_a_summary(tmp_path, stub):
    stub("count 2\nseries 0 mem_used 1073741824 2147483648\nseries 0 util_gpu 50\n"
         "series 0 pcie_rx_kb 1000\nprocess 0 4242 1048576\nprocess 0 4343 2097152\n")
    out, svg, summary = tmp_path / "s.ndjson", tmp_path / "m.svg", tmp_path / "sum.json"
    r = subprocess.run([BIN, "gpu", "sample", "--interval", "200ms", "--duration", "2s",
                        "--pid", "4242", "--nvml-library", STUB, "--out", str(out), "--svg",
                        str(svg), "--summary", str(summary)],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    got = lines(out)
    assert 16 <= len(got) <= 24, len(got)
    assert all("time_ns" in e for e in got)
    d0 = [e for e in got if e["device"] == 0]
    assert all([p["pid"] for p in e["processes"]] == [4242] for e in d0)  # --pid
    assert [e["memory_used_bytes"] for e in d0[:2]] == [1073741824, 2147483648]
    text = svg.read_text()
    assert text.startswith("<svg") and "memory (MiB)" in text and "4242" in text
    assert "4343" not in text
    s = json.loads(summary.read_text())
    assert 8 <= s["rounds"] <= 12 and s["readings"] == len(got)
    assert abs(s["period_ms"]["p50"] - 200) < 20


def test_gpu_sample_without_a_gpu_says_why(tmp_path):
    r = subprocess.run([BIN, "gpu", "sample", "--duration", "1s", "--backend", "jetson",
                        "--sysfs-root", str(tmp_path)], capture_output=True, text=True,
                       timeout=30)
    assert r.returncode == 1
    assert "no GPU to read: jetson: no Jetson GPU" in r.stderr
    r = subprocess.run([BIN, "gpu", "sample", "--pid", "x"], capture_output=True, text=True,
                       timeout=30)
    assert r.returncode == 2 and '--pid "x" is not a process id' in r.stderr
