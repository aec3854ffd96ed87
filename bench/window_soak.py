"""Windows under 30+ SIGKILLs per source (mqtt, tail, http): every window counted exactly once."""
# For each source, readings stream into a keyed 1 s window while the process is killed with
# SIGKILL at random moments (0.2-0.6 s apart, restarted 0-0.3 s later) at least KILLS times,
# with the ack-delay fault injection on (SEEDANCE_TEST_ACK_DELAY_MS=20: kills land between a
# batch's commit and its acknowledgement). The final emission of every window is compared
# with the count and sum the readings sent make. Per source:
#   kills, windows, windows_wrong, over_counted, under_counted (windows above and below),
#   redeliveries_recognised: mqtt, messages the broker sent again that were recognised;
#   http, requests retried with their Idempotency-Key answered as repeats (wholly or in part);
#   tail, restarts that resumed a file from the position committed with the window state.
# Every loop is bounded in count and time; traffic goes to 127.0.0.1 only.
import collections
import json
import os
import random
import re
import shutil
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

from common import RELEASE_BIN, ROOT, free_port

os.environ.setdefault("SEEDANCE_BIN", RELEASE_BIN)
from testing.broker import Broker  # noqa: E402
from testing.mqtt_publish import publish_all  # noqa: E402
from testing.seedance_process import Seedance  # noqa: E402
from testing.windows import BASE_MS, PROCESSORS, final_windows  # noqa: E402

KILLS = int(os.environ.get("SOAK_KILLS", "30"))
N = 30_000  # readings per source: 5 devices, 10 ms apart in event time: 300 windows
DEVICES = 5
ACK_DELAY_MS = "20"

WINDOW = PROCESSORS + """
sinks:
  - type: file
    path: {work}/windows.ndjson
    encoding: payload
queue:
  data_dir: {work}/data
metrics:
  listen: 127.0.0.1:{metrics_port}
"""


def reading(i):
    d = f"d{i % DEVICES}"
    return d, json.dumps({"device": d, "ts": BASE_MS + i * 10, "v": i % 97})


def expected():
    want = collections.defaultdict(lambda: [0, 0])
    for i in range(N):
        d, _ = reading(i)
        w = want[(d, (BASE_MS + i * 10) // 1000 * 1000)]
        w[0] += 1
        w[1] += i % 97
    return want


FLUSH = json.dumps({"device": "flush", "ts": BASE_MS + 3_600_000 + N * 10, "v": 0})


def scrape(port, metric):
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=1) as r:
            text = r.read().decode()
    except OSError:
        return 0
    return sum(float(m.group(1)) for m in re.finditer(rf"^{metric}{{[^}}]*}} (\S+)$", text,
                                                       re.M))


class Killer:
    """Starts the job, then kills and restarts it at random moments while `feeding` runs."""

    def __init__(self, config, work, metrics_port, metric=None):
        self.config, self.work, self.metrics_port, self.metric = config, work, metrics_port, metric
        self.rng = random.Random(40)
        self.kills = 0
        self.recognised = 0
        self.logs = []
        self.sd = self.start()

    def start(self):
        return Seedance(self.config, workdir=self.work).start(timeout=20)

    def run(self, feeding, deadline_s=240):
        deadline = time.time() + deadline_s
        while (feeding.is_alive() or self.kills < KILLS) and time.time() < deadline:
            time.sleep(self.rng.uniform(0.2, 0.6))
            if self.metric:
                self.recognised += scrape(self.metrics_port, self.metric)
            self.sd.kill()
            self.kills += 1
            self.logs += self.sd.stderr_lines
            time.sleep(self.rng.uniform(0.0, 0.3))
            self.sd = self.start()

    def finish(self):
        if self.metric:
            self.recognised += scrape(self.metrics_port, self.metric)
        self.logs += self.sd.stderr_lines
        self.sd.stop()


def judge(work, killer, seconds):
    want = expected()
    path = os.path.join(work, "windows.ndjson")
    deadline = time.time() + 120
    while time.time() < deadline:
        got = final_windows(path)
        if len(got) >= len(want) and all(got.get(k, {}).get("count", 0) >= v[0]
                                         for k, v in want.items()):
            break
        time.sleep(0.5)
    time.sleep(1.0)
    got = final_windows(path)
    over = sum(1 for k, v in want.items() if k in got and got[k]["count"] > v[0])
    under = sum(1 for k, v in want.items() if k not in got or got[k]["count"] < v[0])
    wrong = sum(1 for k, v in want.items()
                if k not in got or (got[k]["count"], got[k]["sum"]) != tuple(v))
    return {"kills": killer.kills, "windows": len(want), "windows_wrong": wrong,
            "over_counted": over, "under_counted": under,
            "redeliveries_recognised": int(killer.recognised), "seconds": round(seconds, 1)}


def soak_mqtt():
    work = tempfile.mkdtemp(prefix="seedance-soak-mqtt-")
    broker = Broker().start()
    mport = free_port()
    config = f"""
sources:
  - type: mqtt
    uri: "{broker.uri}"
    topic: "meter/#"
    client_id: seedance-window-soak
    persistent_session: true
""" + WINDOW.format(work=work, metrics_port=mport)
    t0 = time.time()
    try:
        killer = Killer(config, work, mport, "seedance_source_redeliveries_recognised_total")
        msgs = [(f"meter/{d}", p) for d, p in (reading(i) for i in range(N))]
        msgs.append(("meter/flush", FLUSH))

        def pace(i):
            if i % 100 == 99:
                time.sleep(0.05)  # about 2,000 messages a second
        feeder = threading.Thread(target=publish_all, args=(broker.port, msgs),
                                  kwargs={"timeout": 240, "pace": pace})
        feeder.start()
        killer.run(feeder)
        feeder.join(240)
        result = judge(work, killer, time.time() - t0)
        killer.finish()
        return result
    finally:
        broker.stop()
        shutil.rmtree(work, ignore_errors=True)


def soak_tail():
    work = tempfile.mkdtemp(prefix="seedance-soak-tail-")
    logs = os.path.join(work, "logs")
    os.makedirs(logs)
    mport = free_port()
    config = f"""
sources:
  - type: tail
    path: "{logs}/app.log*"
    read_from: beginning
    poll_interval: 200ms
    rotate_wait: 1s
""" + WINDOW.format(work=work, metrics_port=mport)
    t0 = time.time()
    try:
        killer = Killer(config, work, mport)

        def write():
            log = os.path.join(logs, "app.log")
            for i in range(N):
                if i and i % 10_000 == 0:  # rotation by rename, within the glob
                    os.rename(log, os.path.join(logs, f"app.log.{i // 10_000}"))
                with open(log, "a") as f:
                    f.write(reading(i)[1] + "\n")
                if i % 100 == 99:
                    time.sleep(0.05)
            with open(log, "a") as f:
                f.write(FLUSH + "\n")
        feeder = threading.Thread(target=write)
        feeder.start()
        killer.run(feeder)
        feeder.join(240)
        result = judge(work, killer, time.time() - t0)
        killer.finish()
        result["redeliveries_recognised"] = sum(
            1 for l in killer.logs if re.search(r"following .* from byte [1-9]", l))
        return result
    finally:
        shutil.rmtree(work, ignore_errors=True)


def soak_http():
    work = tempfile.mkdtemp(prefix="seedance-soak-http-")
    port, mport = free_port(), free_port()
    config = f"""
sources:
  - type: http
    listen: 127.0.0.1:{port}
""" + WINDOW.format(work=work, metrics_port=mport)
    t0 = time.time()
    try:
        killer = Killer(config, work, mport, "seedance_http_source_repeats_total")
        batch = 20

        def post(body, key):
            req = urllib.request.Request(f"http://127.0.0.1:{port}/meter", data=body,
                                         method="POST",
                                         headers={"Content-Type": "application/x-ndjson",
                                                  "Idempotency-Key": key})
            with urllib.request.urlopen(req, timeout=10) as r:
                return r.status

        def client(c, clients):
            starts = range(c * batch, N, batch * clients)
            for n, first in enumerate(starts):
                body = "".join(reading(i)[1] + "\n"
                               for i in range(first, min(first + batch, N))).encode()
                deadline = time.time() + 120
                while time.time() < deadline:  # until answered 200, with the same key
                    try:
                        if post(body, f"c{c}-{n}") == 200:
                            break
                    except (OSError, urllib.error.HTTPError):
                        pass
                    time.sleep(0.05)

        def feed():
            clients = [threading.Thread(target=client, args=(c, 4)) for c in range(4)]
            for t in clients:
                t.start()
            for t in clients:
                t.join(240)
            deadline = time.time() + 60
            while time.time() < deadline:
                try:
                    if post((FLUSH + "\n").encode(), "flush") == 200:
                        break
                except (OSError, urllib.error.HTTPError):
                    time.sleep(0.05)
        feeder = threading.Thread(target=feed)
        feeder.start()
        killer.run(feeder)
        feeder.join(240)
        result = judge(work, killer, time.time() - t0)
        killer.finish()
        return result
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main():
    os.environ["SEEDANCE_TEST_ACK_DELAY_MS"] = ACK_DELAY_MS
    sources = {}
    for name, soak in (("mqtt", soak_mqtt), ("tail", soak_tail), ("http", soak_http)):
        sources[name] = soak()
        print(f"{name}: {sources[name]}", file=sys.stderr, flush=True)
    print(json.dumps({"sources": sources, "ack_delay_ms": int(ACK_DELAY_MS),
                      "readings_per_source": N}))
    return 0 if all(s["windows_wrong"] == 0 for s in sources.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
