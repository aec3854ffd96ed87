"""Spreading one topic over several Seedance processes with an MQTT shared subscription
($share/<group>/<filter>): three processes on one real mosquitto, one killed with SIGKILL
mid-stream and restarted. With the default persistent sessions nothing acknowledged is lost;
duplicates are counted."""
import collections
import json
import threading
import time

from testing.broker import Broker
from testing.ports import free_port
from testing.http_receiver import Receiver
from testing.mqtt_publish import publish_all
from testing.seedance_process import Seedance, metric, scrape
from testing.waiting import wait_until


def test_three_processes_share_a_topic_and_a_kill_loses_nothing(tmp_path):
    n = 30_000
    broker = Broker().start()
    receiver = Receiver().start()
    metrics_ports = [free_port() for _ in range(3)]
    base = f"""
sources:
  - type: mqtt
    uri: "{broker.uri}"
    topic: "$share/gateways/sensor/#"
sinks:
  - type: http
    endpoint: "{receiver.url}/in"
"""

    def cfg(i):
        return base + f"metrics:\n  listen: 127.0.0.1:{metrics_ports[i]}\n"
    dirs = [tmp_path / f"p{i}" for i in range(3)]
    for d in dirs:
        d.mkdir()
    procs = [Seedance(cfg(i), workdir=str(d)).start() for i, d in enumerate(dirs)]
    try:
        for sd in procs:
            assert sd.wait_log("connected to"), sd.stderr()
        msgs = [(f"sensor/{i % 30}", json.dumps({"id": i})) for i in range(n)]
        publisher = threading.Thread(target=publish_all, args=(broker.port, msgs),
                                     kwargs={"timeout": 120})
        publisher.start()
        assert wait_until(lambda: len(receiver.accepted_events()) >= n // 4, 60)
        procs[1].kill()  # SIGKILL, mid-stream
        time.sleep(0.5)
        procs[1] = Seedance(cfg(1), workdir=str(dirs[1])).start()
        publisher.join()
        got = collections.Counter()

        def all_arrived():
            got.clear()
            got.update(e["id"] for e in receiver.accepted_events())
            return len(got) == n
        assert wait_until(all_arrived, 120, 0.5), f"{n - len(got)} of {n} ids missing"
        duplicates = sum(c - 1 for c in got.values())
        # The survivors each took a share of the stream (the restarted one counts anew).
        shares = [metric(scrape(f"http://127.0.0.1:{p}/metrics"), "seedance_events_in_total",
                         component="mqtt") for p in metrics_ports]
        print(f"$share over 3 processes, one kill -9: {n} ids delivered, {duplicates} "
              f"duplicates; events taken per process {shares}")
        assert shares[0] > n / 10 and shares[2] > n / 10, shares
    finally:
        for sd in procs:
            sd.stop()
        receiver.stop()
        broker.stop()
