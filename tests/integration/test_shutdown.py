"""SIGTERM/SIGINT stop seedance cleanly: sources stop, in-flight batches are flushed within
pipeline.shutdown_timeout, and the exit code says whether everything got out."""
import json
import signal
import time

from testing.mqtt_publish import publish_all
from testing.seedance_process import Seedance


def cfg(broker, receiver, timeout, buffer="disk"):
    return f"""
sources:
  - type: mqtt
    uri: "{broker.uri}"
    topic: "s/#"
sinks:
  - type: http
    endpoint: "{receiver.url}/in"
    batch_size: 10
    concurrency: 1
pipeline:
  shutdown_timeout: {timeout}
queue:
  buffer: {buffer}
"""


def test_sigterm_flushes_in_flight_batches(broker, receiver):
    receiver.delay_s = 0.05  # 10 events per 50 ms: 300 events take ~1.5 s
    sd = Seedance(cfg(broker, receiver, "10s")).start()
    assert sd.wait_log("connected to")
    publish_all(broker.port, [("s/x", json.dumps({"n": i})) for i in range(300)])
    time.sleep(0.2)
    assert len(receiver.accepted_events()) < 300, "test needs events still queued at SIGTERM"
    t0 = time.time()
    assert sd.stop(signal.SIGTERM) == 0, sd.stderr()
    assert time.time() - t0 < 10
    assert sorted(e["n"] for e in receiver.accepted_events()) == list(range(300))
    assert "everything delivered" in sd.stderr()


def test_memory_buffer_shutdown_timeout_bounds_the_wait_and_exit_code_reports_loss(broker, receiver):
    receiver.fail_next(10_000, 503)  # the receiver never recovers
    sd = Seedance(cfg(broker, receiver, "500ms", buffer="memory")).start()
    assert sd.wait_log("connected to")
    publish_all(broker.port, [("s/x", json.dumps({"n": i})) for i in range(20)])
    assert sd.wait_log("failed: HTTP 503")
    t0 = time.time()
    rc = sd.stop(signal.SIGINT)
    assert time.time() - t0 < 5
    assert rc == 1, "undelivered events at exit must give exit code 1"
    assert "shutdown timeout" in sd.stderr()


def test_durable_queue_keeps_what_shutdown_could_not_deliver(broker, receiver, tmp_path):
    receiver.fail_next(10_000, 503)
    workdir = str(tmp_path)
    sd = Seedance(cfg(broker, receiver, "500ms"), workdir=workdir).start()
    assert sd.wait_log("connected to")
    publish_all(broker.port, [("s/x", json.dumps({"n": i})) for i in range(20)])
    assert sd.wait_log("failed: HTTP 503")
    assert sd.stop(signal.SIGTERM) == 0, "nothing is lost, so the exit code is 0"
    assert "stay in the durable queue" in sd.stderr()
    with receiver.lock:
        receiver.fail_queue.clear()
    sd = Seedance(cfg(broker, receiver, "5s"), workdir=workdir).start()
    try:
        assert receiver.wait_for_events(20, timeout=15), sd.stderr()
        assert sorted(e["n"] for e in receiver.accepted_events()) == list(range(20))
    finally:
        assert sd.stop() == 0


def test_shutdown_does_not_hang_while_the_pipeline_is_blocked(broker, tmp_path):
    from testing.http_receiver import Receiver
    for buffer in ("memory", "disk"):
        receiver = Receiver().start()
        receiver.fail_next(1_000_000, 503)
        text = cfg(broker, receiver, "1s", buffer)
        if buffer == "memory":
            text = text.replace("pipeline:\n", "pipeline:\n  queue_capacity: 50\n")
        else:
            text += "  max_disk: 256KiB\n"
        sd = Seedance(text, workdir=str(tmp_path / buffer)).start()
        try:
            assert sd.wait_log("connected to")
            publish_all(broker.port, [("s/x", json.dumps({"n": i, "pad": "p" * 200})) for i in range(3000)])
            blocked = "pausing reads from the broker" if buffer == "memory" else "disk limit .* reached"
            assert sd.wait_log(blocked, timeout=20), sd.stderr()
            t0 = time.time()
            rc = sd.stop(signal.SIGTERM, timeout=20)
            assert time.time() - t0 < 6, f"{buffer}: shutdown took {time.time() - t0:.1f} s"
            assert rc == (1 if buffer == "memory" else 0)
        finally:
            sd.kill()
            receiver.stop()
