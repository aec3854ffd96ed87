"""The modbus source's schedule against pymodbus's simulator on 127.0.0.1: polls at 100 ms
start on time, without drift. Run alone (RUN_SERIAL in CMakeLists.txt): it measures time."""
import json

from test_modbus_source import METER_TAGS, as_dict, config, device, lines  # noqa: F401
from testing.seedance_process import Seedance
from testing.waiting import wait_until

INTERVAL_MS = 100
POLLS = 201


def test_polls_are_on_schedule_p99_within_a_tenth_of_the_interval(tmp_path, device):  # noqa: F811
    out = tmp_path / "out.ndjson"
    groups = f"""      - name: meter
        interval: {INTERVAL_MS}ms
        tags:
{METER_TAGS}"""
    sd = Seedance(config(f"tcp://127.0.0.1:{device.port}", groups, out)).start()
    try:
        wait_until(lambda: len(lines(out)) >= POLLS, timeout=60)
    finally:
        assert sd.stop() == 0
    times = [as_dict(p)["time_ns"] / 1e6 for p in lines(out)][:POLLS]
    # Poll k is due at start + k x interval: its lateness is its time less that. The start is
    # not in the events; the earliest poll's offset stands for it (lateness >= 0 from there).
    # A schedule that drifted would show as lateness that grows.
    ks = [round((t - times[0]) / INTERVAL_MS) for t in times]
    offsets = [t - k * INTERVAL_MS for t, k in zip(times, ks)]
    lateness = sorted(o - min(offsets) for o in offsets)
    periods = sorted(abs(b - a - INTERVAL_MS) for a, b in zip(times, times[1:]))
    p99 = lateness[int(0.99 * (len(lateness) - 1))]
    summary = {"polls": len(times), "missed": ks[-1] + 1 - len(times),
               "lateness_p50_ms": round(lateness[len(lateness) // 2], 3),
               "lateness_p99_ms": round(p99, 3), "lateness_max_ms": round(lateness[-1], 3),
               "period_jitter_p99_ms": round(periods[int(0.99 * (len(periods) - 1))], 3),
               "drift_ms": round(sum(offsets[-20:]) / 20 - sum(offsets[:20]) / 20, 3)}
    print(json.dumps(summary))
    assert p99 < INTERVAL_MS / 10, summary
    assert summary["period_jitter_p99_ms"] < INTERVAL_MS / 10, summary  # the measure
    assert abs(summary["drift_ms"]) < INTERVAL_MS / 10, summary
