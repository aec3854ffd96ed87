"""limits.memory: a stalled sink (hung, or refusing) while 100 MB of events arrive. RSS stays under the budget plus
the runtime's own resident size, nothing is lost, everything is delivered once the sink returns. Real
mosquitto, a real HTTP receiver on loopback (down during the stall), the real binary."""
import os
import re
import socket
import subprocess
import time

from testing.broker import Broker
from testing.ports import free_port
from testing.http_receiver import Receiver
from testing.process_stats import status_kb
from testing.seedance_process import BIN, Seedance, metric, scrape, validate
from testing.waiting import wait_until

MQTT_LOAD = os.path.join(os.path.dirname(BIN), "mqtt_load")
MiB = 1024 * 1024


def config(broker, port, metrics_port, limits):
    return f"""
sources:
  - type: mqtt
    uri: "{broker.uri}"
    topic: "sensor/+/temperature"
    client_id: seedance-budget
    persistent_session: true
sinks:
  - type: http
    endpoint: "http://127.0.0.1:{port}/in"
    retry_initial: 20ms
    retry_max: 200ms
    timeout: 2s
    concurrency: 32
queue:
  segment_size: 8MiB
  max_disk: 1GiB
metrics:
  listen: 127.0.0.1:{metrics_port}
{limits}
"""


def stall_then_recover(tmp_path, limits, count=100_000, pad=1000, stall_s=1.0, stall="hung"):
    """Runs the scenario; returns (runtime_kb, peak_kb, delivered ids, metrics during the stall,
    metrics at the end). `stall`: "hung" — a socket that listens but never accepts (connections
    complete in the kernel, requests are sent, no answer ever comes: the sink times out and
    retries); "refusing" — a receiver that answers 503 to everything until it recovers."""
    broker = Broker(extra="max_queued_messages 1000000\n").start()
    port, metrics_port = free_port(), free_port()
    black_hole = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    receiver = None
    if stall == "hung":
        black_hole.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        black_hole.bind(("127.0.0.1", port))
        black_hole.listen(128)
    else:
        receiver = Receiver(port=port)
        receiver.reject = lambda body: 503
        receiver.start()
    sd = Seedance(config(broker, port, metrics_port, limits), workdir=str(tmp_path)).start()
    try:
        assert sd.wait_log("connected to")
        # The runtime's own resident size: what it had mapped once started, before the pages
        # start-up touched were released (the code a load runs faults back in; idle RSS after
        # the release is smaller than what the runtime needs under load).
        released = r"start-up pages released: resident (\d+) -> (\d+) KiB"
        assert sd.wait_log(released), sd.stderr()
        runtime_kb = int(re.search(released, sd.stderr()).group(1))
        load = subprocess.run([MQTT_LOAD, "127.0.0.1", str(broker.port), str(count), "0", "1000",
                               str(pad)], capture_output=True, text=True, timeout=300)
        assert load.returncode == 0, load.stderr
        url = f"http://127.0.0.1:{metrics_port}/metrics"
        assert wait_until(lambda: metric(scrape(url), "seedance_queue_appended_total") >= count,
                          240, 0.5), metric(scrape(url), "seedance_queue_appended_total")
        # Stall on: the sink's batches wait in retries; the governor evicts them once idle.
        time.sleep(stall_s)
        during = scrape(url)
        if stall == "hung":
            black_hole.close()
            receiver = Receiver(port=port).start()
        else:
            receiver.reject = None
        assert wait_until(lambda: len({e["id"] for e in receiver.accepted_events()}) >= count,
                          300, 1.0), len(receiver.accepted_events())
        peak_kb = status_kb(sd.proc.pid, "VmHWM")
        ids = {e["id"] for e in receiver.accepted_events()}
        return runtime_kb, peak_kb, ids, during, scrape(url)
    finally:
        black_hole.close()
        sd.stop()
        if receiver:
            receiver.stop()
        broker.stop()


def run_and_check_bound(tmp_path, stall):
    count, pad = 100_000, 1000
    # idle_steps 20 (2 s): batches the stalled sink holds in its retries count as idle sooner.
    runtime_kb, peak_kb, ids, during, after = stall_then_recover(
        tmp_path, "limits:\n  memory: 16MiB\n  idle_steps: 20\n", count, pad, stall_s=6.0,
        stall=stall)
    assert ids == set(range(count)), f"{count - len(ids)} ids missing"
    bound_kb = 16 * 1024 + runtime_kb
    print(f"limits.memory 16MiB, {stall} sink: runtime RSS {runtime_kb} kB, peak RSS (VmHWM) "
          f"{peak_kb} kB, bound {bound_kb} kB; {count} x ~{pad + 80} B events; "
          f"evictions {metric(after, 'seedance_memory_evictions_total')}, "
          f"moved to disk {metric(after, 'seedance_memory_moved_bytes_total', to='disk'):.0f} B, "
          f"back {metric(after, 'seedance_memory_moved_bytes_total', to='memory'):.0f} B")
    assert peak_kb < bound_kb
    assert metric(during, "seedance_memory_budget_bytes") == 16 * MiB
    return during, after


def test_hung_sink_100mb_stays_in_budget_and_loses_nothing(tmp_path):
    # Requests on the wire to a server that never answers cannot be evicted (they are being
    # sent); the budget's admission and the timeout bound the memory.
    run_and_check_bound(tmp_path, "hung")


def test_refusing_sink_100mb_stays_in_budget_batches_go_to_disk_and_come_back(tmp_path):
    during, after = run_and_check_bound(tmp_path, "refusing")
    # The batches the sink only held between retries were moved down to the disk tier and the
    # runner went on with a single probe instead of 32 requests in flight. What it held before
    # is the queued share of the budget (about 9 MB), in however many batches the timing made
    # (14 to 32 were seen: a slow machine takes fewer, bigger ones), so the check is on bytes:
    # what is left in memory is the probe (one batch, charged at most about 1.2 MB), a quarter
    # of the queued share at most.
    queued_capacity = 0.6 * 16 * MiB
    assert metric(during, "seedance_memory_trims_total", reason="idle_share") >= 1
    assert metric(during, "seedance_memory_moved_bytes_total", to="disk") > 0
    assert metric(during, "seedance_memory_bytes", tier="memory") <= queued_capacity / 4
    assert metric(during, "seedance_sink_in_flight") <= 2
    # They were read back from disk once the sink returned.
    assert metric(after, "seedance_memory_moved_bytes_total", to="memory") > 0


def test_limits_memory_needs_the_disk_tier(tmp_path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text("sources:\n  - type: generate\n    payload: '{}'\nsinks:\n  - type: stdout\n"
                   "queue:\n  buffer: memory\nlimits:\n  memory: 16MiB\n")
    r = validate(cfg)
    assert r.returncode != 0
    assert "c.yaml:9:11: limits.memory: needs the disk tier" in r.stderr, r.stderr
