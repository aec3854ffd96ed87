"""One set of behaviours every source must show (issue 19), through the real binary, a real
receiver and each source's real upstream (a mosquitto broker, an HTTP client, files):

- backpressure: with the sink down and the queue full, the source stops taking (the broker
  keeps the messages, HTTP clients get 503, files wait on disk) and loses nothing: once the
  sink is back, every event arrives;
- acknowledgement only after the durable append: a kill -9 in the middle loses nothing that
  upstream was told is safe (the broker's redelivery, the client's retry of an unanswered
  request and the file positions bring the rest back);
- a clean stop: SIGTERM exits 0 with everything taken delivered, and a restart carries on.

Add a driver for each new source."""
import json
import os
import threading
import time
import urllib.error
import urllib.request

import pytest

from testing.broker import Broker
from testing.ports import free_port
from testing.mqtt_publish import publish_all
from testing.seedance_process import Seedance
from testing.waiting import wait_until


class MqttDriver:
    name = "mqtt"

    def __init__(self, tmp_path):
        self.broker = Broker().start()

    def source(self):
        return f"""  - type: mqtt
    uri: "{self.broker.uri}"
    topic: "conf/#"
    qos: 1
    client_id: conformance
"""

    def ready(self, sd):
        """Subscribed: a message published before would have no subscriber yet."""
        assert sd.wait_log(r"connected to 127\.0\.0\.1"), sd.stderr()

    def produce(self, ids):
        publish_all(self.broker.port, [("conf/x", json.dumps({"id": i})) for i in ids], qos=1)

    def close(self):
        self.broker.stop()


class HttpDriver:
    def ready(self, sd):
        pass

    name = "http"

    def __init__(self, tmp_path):
        self.port = free_port()

    def source(self):
        return f"""  - type: http
    listen: 127.0.0.1:{self.port}
    max_events: 100
    ack_timeout: 1s
"""

    def produce(self, ids):
        """Like a well-behaved client: a request that is refused (503) or not answered (the
        process is gone) is sent again."""
        ids = list(ids)
        for start in range(0, len(ids), 50):
            body = "".join(json.dumps({"id": i}) + "\n" for i in ids[start:start + 50]).encode()
            deadline = time.time() + 120
            while True:
                assert time.time() < deadline, "a request never got a 200"
                req = urllib.request.Request(f"http://127.0.0.1:{self.port}/conf", data=body,
                                             headers={"Content-Type": "application/x-ndjson"})
                try:
                    with urllib.request.urlopen(req, timeout=30) as r:
                        if r.status == 200:
                            break
                except (urllib.error.URLError, OSError):
                    pass
                time.sleep(0.1)

    def close(self):
        pass


class TailDriver:
    def ready(self, sd):
        pass

    name = "tail"

    def __init__(self, tmp_path):
        self.log = tmp_path / "conf.log"
        self.log.touch()

    def source(self):
        return f"""  - type: tail
    path: "{self.log}"
    read_from: beginning
    poll_interval: 200ms
"""

    def produce(self, ids):
        with open(self.log, "a") as f:
            for i in ids:
                f.write(json.dumps({"id": i}) + "\n")

    def close(self):
        pass


DRIVERS = [MqttDriver, HttpDriver, TailDriver]


@pytest.fixture(params=DRIVERS, ids=lambda d: d.name)
def driver(request, tmp_path):
    d = request.param(tmp_path)
    yield d
    d.close()


def config(driver, receiver, tmp_path, extra=""):
    return f"""
sources:
{driver.source()}
sinks:
  - type: http
    endpoint: "{receiver.url}/in"
    retry_initial: 20ms
    retry_max: 200ms
queue:
  data_dir: {tmp_path / "data"}
{extra}"""


def delivered_ids(receiver):
    return {e["id"] for e in receiver.accepted_events()}


def test_backpressure_pauses_the_source_and_loses_nothing(driver, receiver, tmp_path):
    receiver.fail_next(10 ** 6, 503)
    extra = ("  max_disk: 64KiB\n  segment_size: 16KiB\n  when_full: block\n"
             "pipeline:\n  queue_capacity: 50\n")
    sd = Seedance(config(driver, receiver, tmp_path, extra)).start()
    driver.ready(sd)
    try:
        producer = threading.Thread(target=driver.produce, args=(range(3000),))
        producer.start()
        time.sleep(3.0)  # the queue fills up; the source must stop taking, not fail
        assert sd.proc.poll() is None
        assert not receiver.accepted_events()
        with receiver.lock:
            receiver.fail_queue.clear()
        producer.join(120)
        assert wait_until(lambda: delivered_ids(receiver) == set(range(3000)), 60), \
            f"{len(delivered_ids(receiver))} of 3000 delivered"
    finally:
        assert sd.stop() == 0, sd.stderr()[-2000:]


def test_a_kill_9_loses_nothing_upstream_was_told_is_safe(driver, receiver, tmp_path):
    work = str(tmp_path / "run")
    text = config(driver, receiver, tmp_path)
    sd = Seedance(text, workdir=work).start()
    driver.ready(sd)
    try:
        producer = threading.Thread(target=driver.produce, args=(range(5000),))
        producer.start()
        assert wait_until(lambda: len(delivered_ids(receiver)) >= 1000, 60)
        sd.kill()
        time.sleep(0.3)
        sd = Seedance(text, workdir=work).start()
        producer.join(120)
        assert wait_until(lambda: delivered_ids(receiver) == set(range(5000)), 60), \
            f"{len(delivered_ids(receiver))} of 5000 delivered"
    finally:
        sd.stop()


def test_a_clean_stop_delivers_what_was_taken_and_a_restart_carries_on(driver, receiver,
                                                                      tmp_path):
    work = str(tmp_path / "run")
    text = config(driver, receiver, tmp_path)
    sd = Seedance(text, workdir=work).start()
    driver.ready(sd)
    try:
        driver.produce(range(1000))
        assert wait_until(lambda: delivered_ids(receiver) == set(range(1000)), 30)
        assert sd.stop() == 0, sd.stderr()[-2000:]
        assert "stopped; everything delivered" in sd.stderr(), sd.stderr()[-2000:]
        before = len(receiver.accepted_events())
        sd = Seedance(text, workdir=work).start()
        driver.produce(range(1000, 1500))
        assert wait_until(lambda: delivered_ids(receiver) == set(range(1500)), 30)
        time.sleep(0.5)
        repeats = len(receiver.accepted_events()) - before - 500
        assert repeats == 0, f"{repeats} events delivered again after a clean stop"
    finally:
        assert sd.stop() == 0, sd.stderr()[-2000:]
