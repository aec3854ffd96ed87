"""Whole-config reload (issue 46): under a steady 2k msg/s the HTTP sink's endpoint moves to a
second receiver, an MQTT sink is added and removed again, a broken file in between changes
nothing; every event is delivered where the configuration active at its time said, none
lost and none twice. Hostile configurations (validate's mutations) never crash or wedge the
process (core/pipeline_host.h, docs/operations.md)."""
import json
import os
import signal
import socket
import subprocess
import threading
import time
import urllib.request

import pytest

from testing.broker import Broker
from testing.ports import free_port
from testing.http_receiver import Receiver
from testing.mqtt_publish import connect
from testing.mqtt_subscribe import Subscriber
from testing.seedance_process import BIN, Seedance, metric, scrape
from testing.waiting import wait_until
from test_validate import BROKEN

RATE = 2000
SECONDS = 14


def config(broker, endpoint, port, tmp_path, mqtt_sink=False):
    extra = f"""  - type: mqtt
    name: copy
    uri: "{broker.uri}"
    topic: "copy/{{topic.2}}"
""" if mqtt_sink else ""
    return f"""
sources:
  - type: mqtt
    uri: "{broker.uri}"
    topic: "t/#"
sinks:
  - type: http
    name: api
    endpoint: "{endpoint}"
{extra}queue:
  data_dir: {tmp_path}/data
metrics:
  listen: "127.0.0.1:{port}"
"""


def seqs(receiver):
    return [json.loads(e)["seq"] if isinstance(e, (str, bytes)) else e["seq"]
            for e in receiver.accepted_events()]


def write(sd, text):
    tmp = sd.config + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, sd.config)


def reload_cli(port):
    p = subprocess.run([BIN, "reload", "--url", f"http://127.0.0.1:{port}"],
                       capture_output=True, text=True, timeout=60)
    return p.returncode, p.stdout + p.stderr


class Publisher(threading.Thread):
    """Publishes seq 0..n-1 on t/<seq % 10> at `rate` per second, QoS 1."""

    def __init__(self, port, n, rate):
        super().__init__(daemon=True)
        self.port, self.n, self.rate = port, n, rate
        self.sent = 0

    def run(self):
        c = connect(self.port)
        start = time.time()
        infos = []
        for i in range(self.n):
            infos.append(c.publish(f"t/{i % 10}", json.dumps({"seq": i}), qos=1))
            self.sent = i + 1
            ahead = start + (i + 1) / self.rate - time.time()
            if ahead > 0:
                time.sleep(ahead)
        for info in infos:
            info.wait_for_publish(timeout=30)
        c.loop_stop()
        c.disconnect()


def test_sinks_change_under_load_exactly_where_the_config_says(broker, tmp_path):
    first, second = Receiver().start(), Receiver().start()
    port = free_port()
    copies = Subscriber(broker.port, "copy/#")
    sd = Seedance(config(broker, first.url + "/in", port, tmp_path)).start()
    total = RATE * SECONDS
    pub = Publisher(broker.port, total, RATE)
    tap_out = open(tmp_path / "tap.ndjson", "w")
    tap = None
    try:
        assert sd.wait_log(r"connected to"), sd.stderr()
        # A tap on the HTTP sink's input, open through every reload.
        tap = subprocess.Popen([BIN, "tap", "--url", f"http://127.0.0.1:{port}", "--component",
                                "api"], stdout=tap_out)
        pub.start()
        assert wait_until(lambda: len(first.accepted_events()) > RATE, timeout=20)

        # 1. The endpoint moves to the second receiver (seedance reload).
        write(sd, config(broker, second.url + "/in", port, tmp_path))
        code, out = reload_cli(port)
        assert code == 0 and 'sink "api" changed' in out, out + sd.stderr()[-3000:]
        at_move = len(first.accepted_events())
        assert wait_until(lambda: len(second.accepted_events()) > RATE, timeout=20)

        # 2. An MQTT sink is added (SIGHUP): it takes what comes from now on.
        write(sd, config(broker, second.url + "/in", port, tmp_path, mqtt_sink=True))
        sd.proc.send_signal(signal.SIGHUP)
        assert wait_until(lambda: len(copies.received()) > RATE, timeout=20), sd.stderr()[-3000:]
        generation = metric(scrape(f"http://127.0.0.1:{port}/metrics"),
                            "seedance_config_generation")
        assert generation == 3

        # 3. A broken file changes nothing: refused, the copies keep flowing.
        write(sd, "sources: [unclosed\n")
        code, out = reload_cli(port)
        assert code == 1 and "reload refused" in out and "invalid YAML" in out, out
        text = scrape(f"http://127.0.0.1:{port}/metrics")
        assert metric(text, "seedance_config_generation") == 3
        assert metric(text, "seedance_reloads_total", result="failed") == 1
        n = len(copies.received())
        assert wait_until(lambda: len(copies.received()) > n + RATE // 2, timeout=10)

        # 4. The MQTT sink is removed again.
        write(sd, config(broker, second.url + "/in", port, tmp_path))
        code, out = reload_cli(port)
        assert code == 0 and 'sink "copy" removed' in out, out
        assert sd.wait_log(r"copy.*position in the durable queue is dropped"), sd.stderr()
        # What the MQTT sink delivered before it went (the broker may still be passing it on).
        copied_by_sink = metric(scrape(f"http://127.0.0.1:{port}/metrics"),
                                "seedance_events_out_total", component="copy", kind="sink")

        pub.join(SECONDS + 30)
        assert wait_until(lambda: len(set(seqs(first)) | set(seqs(second))) == total,
                          timeout=60), (len(set(seqs(first)) | set(seqs(second))), total)
        time.sleep(1.0)
        # Every event reached the HTTP sink's endpoint of its time once: the first receiver
        # got nothing after the move, and between them nothing is missing or doubled.
        assert len(first.accepted_events()) == at_move
        got = seqs(first) + seqs(second)
        assert sorted(got) == list(range(total)), (len(got), total)
        # The MQTT sink: an unbroken run of the stream from its addition to its removal,
        # each once, and nothing after it was removed.
        copied = sorted(json.loads(p)["seq"] for _, p, _ in copies.received())
        assert len(copied) == len(set(copied))
        assert copied == list(range(copied[0], copied[-1] + 1))
        assert len(copied) == copied_by_sink
        text = scrape(f"http://127.0.0.1:{port}/metrics")
        assert metric(text, "seedance_reloads_total", result="ok") == 3
        assert metric(text, "seedance_config_generation") == 4
        # The tap outlived three rebuilds: it saw the sink's input to the very end.
        assert tap.poll() is None
        tapped = [json.loads(l) for l in (tmp_path / "tap.ndjson").read_text().splitlines()]
        assert max(l["event"]["payload"]["seq"] for l in tapped if "event" in l) == total - 1
    finally:
        if tap:
            tap.terminate()
            tap.wait(5)
        tap_out.close()
        sd.stop()
        first.stop()
        second.stop()


def partial_config(broker, topic, endpoint, port, tmp_path):
    return f"""
sources:
  - type: generate
    name: gen
    rate: 400
    topic: gen
    payload: '{{"n":{{n}}}}'
  - type: mqtt
    name: in
    uri: "{broker.uri}"
    topic: "{topic}"
sinks:
  - type: file
    name: keep
    path: {tmp_path}/keep.ndjson
    encoding: payload
  - type: http
    name: api
    endpoint: "{endpoint}"
queue:
  data_dir: {tmp_path}/data
metrics:
  listen: "127.0.0.1:{port}"
"""


def test_only_the_changed_components_are_built_again(broker, tmp_path):
    """A changed sink or source is built again alone: the generate source runs on through both
    reloads (a rebuild would start its count at 0 again), the file sink never stops, the MQTT
    source connects again only when it changed, and the moved HTTP sink loses and repeats
    nothing."""
    first, second = Receiver().start(), Receiver().start()
    port = free_port()
    keep = tmp_path / "keep.ndjson"
    sd = Seedance(partial_config(broker, "t/#", first.url + "/in", port, tmp_path)).start()

    def gen(lines):
        return [json.loads(l)["n"] for l in lines if '"n"' in l]

    def connects():
        return metric(scrape(f"http://127.0.0.1:{port}/metrics"), "seedance_mqtt_connects_total",
                      component="in", kind="source")
    try:
        assert sd.wait_log(r"\[in\] connected to"), sd.stderr()
        assert wait_until(lambda: len(first.accepted_events()) > 200, timeout=20)

        # The HTTP sink moves: only it is built again.
        write(sd, partial_config(broker, "t/#", second.url + "/in", port, tmp_path))
        code, out = reload_cli(port)
        assert code == 0 and 'sink "api" changed' in out, out + sd.stderr()[-3000:]
        assert sd.wait_log(r"building again only what changed"), sd.stderr()[-3000:]
        assert wait_until(lambda: len(second.accepted_events()) > 200, timeout=20)
        assert connects() == 1

        # The MQTT source subscribes to another filter: it alone connects again.
        write(sd, partial_config(broker, "u/#", second.url + "/in", port, tmp_path))
        code, out = reload_cli(port)
        assert code == 0 and 'source "in" changed' in out, out + sd.stderr()[-3000:]
        assert wait_until(lambda: connects() == 2, timeout=10)
        time.sleep(0.5)  # the subscription is made right after the connection
        c = connect(broker.port)
        c.publish("u/1", json.dumps({"via": "u"}), qos=1).wait_for_publish(timeout=10)
        c.publish("t/1", json.dumps({"via": "t"}), qos=1).wait_for_publish(timeout=10)
        c.loop_stop()
        c.disconnect()
        assert wait_until(lambda: '"via":"u"' in keep.read_text().replace(" ", ""), timeout=10)
        time.sleep(1.0)
        assert '"via":"t"' not in keep.read_text().replace(" ", "")

        text = scrape(f"http://127.0.0.1:{port}/metrics")
        assert metric(text, "seedance_reloads_total", result="ok") == 2
        assert "shutting down" not in sd.stderr() and "rebuilding the pipeline" not in sd.stderr()
    finally:
        sd.stop()
        first.stop()
        second.stop()
    # The generate source never started again, and the unchanged file sink took every event.
    got = gen(keep.read_text().splitlines())
    assert got == list(range(len(got))), "the generate source was rebuilt or the sink lost events"
    # The moved sink: each event once, at one endpoint or the other.
    api = [json.loads(e)["n"] if isinstance(e, (str, bytes)) else e.get("n")
           for e in first.accepted_events() + second.accepted_events()]
    api = sorted(n for n in api if n is not None)
    assert api == list(range(len(api))), (len(api), len(set(api)))
    assert len(api) >= len(got) - 50


def mqtt_to_file(broker, topics, out, tmp_path):
    """A persistent MQTT source `in` on `topics` (a filter or a list) into a file of payloads."""
    return f"""
sources:
  - type: mqtt
    name: in
    uri: "{broker.uri}"
    topic: {json.dumps(topics)}
sinks:
  - type: file
    path: {out}
    encoding: payload
queue:
  data_dir: {tmp_path}/data
"""


def test_a_topic_dropped_across_a_restart_is_unsubscribed_from_the_session(broker, tmp_path):
    """The broker keeps a persistent session's subscriptions: the filter an earlier
    configuration gave it is removed when the session resumes, so its messages stop."""
    out = tmp_path / "out.ndjson"

    def cfg(topic):
        return mqtt_to_file(broker, topic, out, tmp_path)
    sd = Seedance(cfg("old/#")).start()
    try:
        assert sd.wait_log(r"\[in\] connected to .*session new"), sd.stderr()
    finally:
        sd.stop()
    sd = Seedance(cfg("new/#")).start()
    try:
        assert sd.wait_log(r"\[in\] connected to .*session resumed"), sd.stderr()
        time.sleep(0.5)  # the UNSUBACK follows the SUBACK
        c = connect(broker.port)
        c.publish("old/1", json.dumps({"via": "old"}), qos=1).wait_for_publish(timeout=10)
        c.publish("new/1", json.dumps({"via": "new"}), qos=1).wait_for_publish(timeout=10)
        c.loop_stop()
        c.disconnect()
        assert wait_until(lambda: out.exists() and "new" in out.read_text(), timeout=10)
        time.sleep(1.0)
        assert "old" not in out.read_text()
        assert (tmp_path / "data/mqtt/in.subscriptions").read_text() == "new/#\n"
    finally:
        sd.stop()


def test_a_damaged_or_huge_subscriptions_file_does_not_wedge_the_session(broker, tmp_path):
    """What the subscriptions file names goes into the UNSUBSCRIBE sent on every resumed
    session, and a broker ends the connection on a malformed filter: damaged lines are dropped,
    and at most 64 KiB of filters are sent, so the source connects, stays connected and gets
    its messages; once the broker confirmed, the file names the current filter only."""
    out = tmp_path / "out.ndjson"
    config = mqtt_to_file(broker, "new/#", out, tmp_path)
    sd = Seedance(config).start()
    try:
        assert sd.wait_log(r"\[in\] connected to .*session new"), sd.stderr()
    finally:
        sd.stop()
    state = tmp_path / "data/mqtt/in.subscriptions"
    state.write_bytes(b"new/#\nbad/+x/#\n\xff\xfe/#\na/#/b\n" +
                      b"".join(b"old/%d/#\n" % i for i in range(40_000)))  # 440 KB
    sd = Seedance(config).start()
    try:
        assert sd.wait_log(r"\[in\] connected to .*session resumed"), sd.stderr()
        # The same rule: a filter goes while the filters so far (each with its 2-byte length)
        # stay within 64 KiB; later ones are counted.
        sent = over = 0
        for i in range(40_000):
            if sent + len(f"old/{i}/#") + 2 > 64 * 1024:
                over += 1
            else:
                sent += len(f"old/{i}/#") + 2
        assert f"3 line(s) that are not valid topic filters and {over} filter(s) past 64 KiB" \
            in sd.stderr(), sd.stderr()
        time.sleep(1.0)  # the UNSUBACK follows the SUBACK
        c = connect(broker.port)
        c.publish("new/1", json.dumps({"via": "new"}), qos=1).wait_for_publish(timeout=10)
        c.publish("old/7/x", json.dumps({"via": "old"}), qos=1).wait_for_publish(timeout=10)
        c.loop_stop()
        c.disconnect()
        assert wait_until(lambda: out.exists() and "new" in out.read_text(), timeout=10)
        time.sleep(0.5)
        assert "old" not in out.read_text()  # old/7/# was within the 64 KiB: unsubscribed
        assert sd.stderr().count("connected to") == 1, sd.stderr()[-2000:]
        assert state.read_text() == "new/#\n"
    finally:
        sd.stop()


@pytest.mark.parametrize("protocol,limit", [("5", 2048), ("3.1.1", 5000)])
def test_unsubscribes_fit_the_brokers_maximum_packet_size(tmp_path, protocol, limit):
    """A broker ends the connection on a packet over its max_packet_size, on every connect: the
    filters a resumed session drops are sent in UNSUBSCRIBEs of at most 4 KiB and the size an
    MQTT 5 broker announces (MQTT 3.1.1 cannot announce one), each confirmed before the next,
    and all are removed; a filter too long for a packet alone is forgotten with one warning."""
    broker = Broker(extra=f"max_packet_size {limit}\n").start()
    out = tmp_path / "out.ndjson"

    def cfg(topics):
        return mqtt_to_file(broker, topics, out, tmp_path).replace(
            "    name: in\n", f"    name: in\n    protocol: \"{protocol}\"\n")
    try:
        # The session subscribes the first and the last of the filters that will be dropped.
        sd = Seedance(cfg(["new/#", "old/0/#", "old/2999/#"])).start()
        try:
            assert sd.wait_log(r"\[in\] connected to .*session new"), sd.stderr()
        finally:
            sd.stop()
        state = tmp_path / "data/mqtt/in.subscriptions"
        old = [f"old/{i}/#" for i in range(3000)]  # 34 KB of filters: 17 packets or more
        too_long = "long/" + "x" * 4500 + "/#"
        state.write_text("new/#\n" + "".join(f + "\n" for f in old) + too_long + "\n")
        sd = Seedance(cfg(["new/#"])).start()
        try:
            assert sd.wait_log(r"\[in\] connected to .*session resumed"), sd.stderr()
            assert wait_until(lambda: state.read_text() == "new/#\n", timeout=10), \
                state.read_text()[:200]
            c = connect(broker.port)
            for topic in ("old/0/x", "old/2999/x", "new/1"):
                c.publish(topic, json.dumps({"via": topic}), qos=1).wait_for_publish(timeout=10)
            c.loop_stop()
            c.disconnect()
            assert wait_until(lambda: out.exists() and "new/1" in out.read_text(), timeout=10)
            time.sleep(0.5)
            assert "old" not in out.read_text()
            assert sd.stderr().count("connected to") == 1, sd.stderr()[-2000:]
            assert "oversize packet" not in broker.log_text(), broker.log_text()[-2000:]
            assert sd.stderr().count('cannot remove 1 subscription(s) the configuration no '
                                     'longer names, "long/xxx') == 1, sd.stderr()[-2000:]
        finally:
            sd.stop()
    finally:
        broker.stop()


def test_a_rebuild_that_cannot_stop_ends_the_process_for_its_supervisor(tmp_path):
    """A whole rebuild stops the running pipeline as shutdown does, bounded: a script with its
    limits off that never returns makes the process exit 1 shutdown_timeout + 3 s later
    instead of wedging it."""
    def cfg(max_disk):
        return f"""
sources:
  - type: generate
    count: 1
processors:
  - type: lua
    instruction_limit: 0
    max_time: 0
    code: |
      function process(event)
        while true do end
      end
sinks:
  - type: file
    path: {tmp_path}/out.ndjson
queue:
  data_dir: {tmp_path}/data
  max_disk: {max_disk}
pipeline:
  shutdown_timeout: 1s
"""
    sd = Seedance(cfg("1GiB")).start()
    time.sleep(0.5)  # the script took the event and never returns
    write(sd, cfg("2GiB"))
    began = time.time()
    sd.proc.send_signal(signal.SIGHUP)
    code = sd.proc.wait(timeout=20)
    took = time.time() - began
    assert code == 1, sd.stderr()[-2000:]
    assert 3.5 <= took <= 8, took
    assert "did not stop within pipeline.shutdown_timeout + 3 s; exiting" in sd.stderr()


def test_a_changed_source_that_cannot_start_brings_the_previous_configuration_back(tmp_path):
    """The new HTTP source's port is taken: the reload is refused, the pipeline is rebuilt as it
    was, and the old source takes requests again."""
    port, taken, metrics_port = free_port(), free_port(), free_port()
    blocker = socket.socket()
    blocker.bind(("127.0.0.1", taken))
    blocker.listen(1)

    def cfg(listen):
        return f"""
sources:
  - type: http
    name: push
    listen: "127.0.0.1:{listen}"
sinks:
  - type: file
    path: {tmp_path}/out.ndjson
    encoding: payload
queue:
  data_dir: {tmp_path}/data
metrics:
  listen: "127.0.0.1:{metrics_port}"
"""

    def push(n):
        req = urllib.request.Request(f"http://127.0.0.1:{port}/", data=json.dumps({"n": n}).encode(),
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status

    sd = Seedance(cfg(port)).start()
    try:
        assert sd.wait_log(r"listening on"), sd.stderr()
        assert push(1) == 200
        write(sd, cfg(taken))
        code, out = reload_cli(metrics_port)
        assert code == 1 and "reload refused" in out, out + sd.stderr()[-3000:]
        assert sd.wait_log(r"starting the previous configuration again"), sd.stderr()[-3000:]
        text = scrape(f"http://127.0.0.1:{metrics_port}/metrics")
        assert metric(text, "seedance_reloads_total", result="failed") == 1
        assert metric(text, "seedance_config_generation") == 1
        assert wait_until(lambda: _ok(lambda: push(2) == 200), timeout=10)
        assert wait_until(lambda: (tmp_path / "out.ndjson").read_text().count("\n") == 2,
                          timeout=10)
    finally:
        blocker.close()
        sd.stop()


def _ok(f):
    try:
        return f()
    except OSError:
        return False


def test_after_32_replaced_components_a_reload_rebuilds_whole_and_lets_them_go(tmp_path):
    """Replaced components stay allocated (stopped) until the pipeline ends: the bound is 32,
    and the reload after that rebuilds the pipeline whole."""
    port = free_port()

    def cfg(rate):
        return f"""
sources:
  - type: generate
    rate: {rate}
sinks:
  - type: file
    path: {tmp_path}/out.ndjson
queue:
  data_dir: {tmp_path}/data
metrics:
  listen: "127.0.0.1:{port}"
"""
    sd = Seedance(cfg(100)).start()
    try:
        for i in range(33):
            write(sd, cfg(101 + i))
            code, out = reload_cli(port)
            assert code == 0, out + sd.stderr()[-2000:]
            log = sd.stderr()
            if i < 32:
                assert log.count("building again only what changed") == i + 1, i
                assert "rebuilding the pipeline" not in log, i
        assert sd.stderr().count("rebuilding the pipeline") == 1
        assert metric(scrape(f"http://127.0.0.1:{port}/metrics"),
                      "seedance_config_generation") == 34
    finally:
        assert sd.stop() == 0


def test_hostile_configs_are_refused_and_the_pipeline_runs_on(broker, tmp_path):
    receiver = Receiver().start()
    port = free_port()
    good = config(broker, receiver.url + "/in", port, tmp_path)
    sd = Seedance(good).start()
    pub = None
    try:
        assert sd.wait_log(r"connected to"), sd.stderr()
        pub = Publisher(broker.port, 200 * (len(BROKEN) + 2), 200)
        pub.start()
        for i, name in enumerate(sorted(BROKEN)):
            write(sd, BROKEN[name][0])
            sd.proc.send_signal(signal.SIGHUP)
            assert wait_until(
                lambda: metric(scrape(f"http://127.0.0.1:{port}/metrics"),
                               "seedance_reloads_total", result="failed") == i + 1,
                timeout=10), (name, sd.stderr()[-2000:])
            assert sd.proc.poll() is None, name
        # Still the first configuration, still delivering.
        assert metric(scrape(f"http://127.0.0.1:{port}/metrics"),
                      "seedance_config_generation") == 1
        n = len(receiver.accepted_events())
        assert wait_until(lambda: len(receiver.accepted_events()) > n + 100, timeout=10)
        write(sd, good)
        code, out = reload_cli(port)
        assert code == 0 and "nothing changed" in out, out
    finally:
        if pub:
            pub.join(60)
        assert sd.stop() == 0, sd.stderr()[-3000:]
        receiver.stop()
