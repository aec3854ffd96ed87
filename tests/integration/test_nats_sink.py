"""nats sink against a real 3-node nats-server cluster (JetStream, a stream of 3 replicas):
100,000 events relayed from MQTT while one NATS server is killed with SIGKILL and restarted,
and while Seedance itself is killed with SIGKILL and restarted: the stream holds every event,
and the re-sends carry the same Nats-Msg-Id, which the stream's duplicate window drops."""
import json
import signal
import threading
import time

import pytest

from testing.mqtt_publish import publish_all
from testing.nats_ack_dropper import NatsAckDropper
from testing.nats_cluster import NatsCluster
from testing.seedance_process import Seedance, validate
from testing.waiting import wait_until


def stream_msgs(cluster, stream, node=0):
    """The stream's message count; 0 while it does not exist or the node is busy."""
    try:
        return cluster.count(stream, "telemetry.>", node=node, timeout=5, info_only=True)["stream_msgs"]
    except RuntimeError:
        return 0


@pytest.fixture
def cluster():
    c = NatsCluster().start()
    yield c
    c.stop()


def config(broker, cluster, create=True, stream="TELEMETRY"):
    create_stream = """
    create_stream:
      subjects: ["telemetry.>"]
      replicas: 3
      duplicate_window: 5m""" if create else ""
    return f"""
sources:
  - type: mqtt
    uri: "{broker.uri}"
    topic: "site/#"
    qos: 1
    client_id: nats-relay
sinks:
  - type: nats
    servers: {json.dumps(cluster.urls)}
    subject: "telemetry.{{topic.2}}"
    stream: {stream}{create_stream}
    reconnect_wait: 100ms
"""


def one_server_config(broker, server, stream, extra):
    """MQTT in, one nats-server out, the stream made by the sink; `extra`: more sink keys."""
    return f"""
sources:
  - type: mqtt
    uri: "{broker.uri}"
    topic: "site/#"
sinks:
  - type: nats
    servers: [{server.urls[0]}]
    subject: "telemetry.{{topic.2}}"
    stream: {stream}
    create_stream: {{subjects: ["telemetry.>"]}}
    {extra}
"""


def test_100000_events_survive_a_nats_server_kill_and_a_seedance_kill(broker, cluster, tmp_path):
    n = 100_000
    work = tmp_path / "sd"
    work.mkdir()
    sd = Seedance(config(broker, cluster), workdir=str(work)).start(timeout=30)
    try:
        assert sd.wait_log("connected to"), sd.stderr()
        time.sleep(0.3)
        msgs = [(f"site/s{i % 7}/climate", json.dumps({"n": i, "v": i * 0.5})) for i in range(n)]

        def publish():  # in parts: paho queues at most 65,535 messages awaiting their PUBACK
            for part in range(0, n, 25_000):
                publish_all(broker.port, msgs[part:part + 25_000], timeout=300)
        publisher = threading.Thread(target=publish)
        publisher.start()

        def in_stream():
            try:
                return cluster.count("TELEMETRY", "telemetry.>", node=0, timeout=5,
                                     info_only=True)["stream_msgs"]
            except RuntimeError:  # the node is busy or electing a leader: ask again
                return 0
        # A NATS server down while the stream takes events, then back.
        assert wait_until(lambda: in_stream() >= n // 5, 120, 0.2), sd.stderr()[-3000:]
        cluster.kill_node(1)
        time.sleep(1.0)
        cluster.start_node(1)
        # Seedance down (kill -9) mid-stream, then back on the same data directory.
        assert wait_until(lambda: in_stream() >= n // 2, 120, 0.2), sd.stderr()[-3000:]
        sd.kill()
        time.sleep(0.5)
        sd = Seedance(config(broker, cluster), workdir=str(work)).start(timeout=30)
        publisher.join()
        assert wait_until(lambda: in_stream() >= n, 180, 0.5), sd.stderr()[-3000:]
        time.sleep(1.0)  # anything still on its way
        counted = cluster.count("TELEMETRY", "telemetry.>", node=2, timeout=120)
        print(f"nats: {counted} after killing a server and seedance")
        assert counted["unique"] == n, counted          # every event is in the stream
        assert counted["consumed"] == counted["stream_msgs"], counted
        # Re-sent batches carried the same Nats-Msg-Id: the stream dropped them. What is left
        # are messages the broker re-delivered to the restarted Seedance, which it had stored
        # but not yet acknowledged: new events to it (counted, as the MQTT sink's test does).
        assert counted["repeats"] <= n // 100, counted
    finally:
        sd.stop()


def test_a_stream_that_does_not_exist_is_an_error_at_start(broker, cluster, tmp_path):
    sd = Seedance(config(broker, cluster, create=False, stream="MISSING"))
    sd.start(wait_ready=False)
    assert sd.proc.wait(30) != 0
    assert "stream MISSING does not exist on the server" in sd.stderr(), sd.stderr()


def test_bad_subjects_are_refused_with_file_and_line(tmp_path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text("sources:\n  - {type: generate, payload: '{}'}\nsinks:\n  - type: nats\n"
                   "    servers: [nats://127.0.0.1:4222]\n    stream: S\n"
                   "    subject: \"telemetry.*\"\n")
    r = validate(cfg)
    assert r.returncode == 2, r.stderr
    assert "c.yaml:7:14" in r.stderr and "wildcard" in r.stderr, r.stderr


def test_events_a_script_makes_from_one_message_are_each_kept(broker, cluster, tmp_path):
    # A filter that returns three events for one message: they share the message's id and
    # ingest time, so an idempotency key made of those would make the stream drop two of
    # them. The key is the event's place in the durable queue.
    cfg = config(broker, cluster).replace("sinks:", """processors:
  - type: lua
    code: |
      function process(event)
        local out = {}
        for k = 1, 3 do
          local e = {topic = event.topic, payload = {n = event.payload.n * 3 + k - 1}}
          out[k] = e
        end
        return out
      end
sinks:""")
    sd = Seedance(cfg).start(timeout=30)
    try:
        assert sd.wait_log("connected to"), sd.stderr()
        time.sleep(0.3)
        publish_all(broker.port, [("site/a/b", json.dumps({"n": i})) for i in range(100)])
        assert wait_until(lambda: cluster.count("TELEMETRY", "telemetry.>", timeout=5,
                                                info_only=True)["stream_msgs"] >= 300, 30, 0.2), \
            sd.stderr()[-3000:]
        counted = cluster.count("TELEMETRY", "telemetry.>", timeout=30)
        assert counted["unique"] == 300 and counted["repeats"] == 0, counted
    finally:
        assert sd.stop() == 0


@pytest.mark.parametrize("auth,server_side", [
    ("username: gw\n    password: s3cret", 'authorization { user: gw, password: s3cret }'),
    ("token: t0ken", 'authorization { token: t0ken }'),
])
def test_user_password_and_token_authentication(broker, tmp_path, auth, server_side):
    server = NatsCluster(nodes=1, extra=server_side).start()
    try:
        cfg = one_server_config(broker, server, "AUTH", auth)
        sd = Seedance(cfg).start(timeout=30)
        try:
            assert sd.wait_log("connected to"), sd.stderr()
            time.sleep(0.3)
            publish_all(broker.port, [("site/a/b", json.dumps({"n": i})) for i in range(50)])
            creds = server_side.split("{")[1].split("}")[0].strip()
            user_url = server.urls[0].replace("nats://", "nats://gw:s3cret@") \
                if "user" in creds else server.urls[0].replace("nats://", "nats://t0ken@")
            assert wait_until(lambda: server.count("AUTH", "telemetry.>", timeout=5, info_only=True,
                                                   url=user_url)["stream_msgs"] >= 50, 20, 0.2), \
                sd.stderr()[-3000:]
        finally:
            assert sd.stop() == 0
        # The wrong secret: refused by the server, said so, nothing sent. libnats gives up
        # after the second refusal and closes the connection, and that is said with the
        # reason even when the first attempt's reason was lost (its reconnect thread clears
        # it; under load that came first, and the warning said "No server available").
        wrong = cfg.replace("s3cret", "wrong").replace("t0ken", "wrong")
        sd = Seedance(wrong)
        sd.start(wait_ready=False)
        try:
            assert sd.wait_log(r"(?i)connection to NATS closed: authori[sz]ation violation",
                               20), sd.stderr()
        finally:
            sd.stop()
    finally:
        server.stop()


def test_a_server_down_at_start_is_waited_for_and_the_stream_made_then(broker, tmp_path):
    server = NatsCluster(nodes=1)  # configured, not started yet
    try:
        cfg = one_server_config(broker, server, "LATE", "reconnect_wait: 100ms\n    retry_max: 200ms")
        sd = Seedance(cfg).start(timeout=10)  # ready at once: it does not wait for the server
        try:
            assert sd.wait_log("could not connect to"), sd.stderr()
            assert sd.wait_log(r"mqtt\] connected to"), sd.stderr()
            time.sleep(0.3)
            publish_all(broker.port, [("site/a/b", json.dumps({"n": i})) for i in range(100)])
            assert sd.wait_log("delivery failed: nats: not connected"), sd.stderr()
            server.start()
            assert wait_until(lambda: stream_msgs(server, "LATE") >= 100, 30, 0.2), \
                sd.stderr()[-3000:]
            assert sd.wait_log("created stream LATE"), sd.stderr()
            counted = server.count("LATE", "telemetry.>", timeout=30)
            assert counted["unique"] == 100 and counted["repeats"] == 0, counted
        finally:
            assert sd.stop() == 0
    finally:
        server.stop()


def test_nkey_authentication(broker, tmp_path):
    from testing.nkeys import user_key_pair
    public, seed = user_key_pair()
    other_public, other_seed = user_key_pair()
    seed_file = tmp_path / "gw.nk"
    seed_file.write_text(seed + "\n")
    other_seed_file = tmp_path / "other.nk"
    other_seed_file.write_text(other_seed + "\n")
    # The gateway's key is known to the server; a second user reads the stream back.
    server = NatsCluster(nodes=1, extra=f"authorization {{ users: [ {{nkey: {public}}}, "
                                        "{user: reader, password: r} ] }").start()
    reader_url = server.urls[0].replace("nats://", "nats://reader:r@")
    try:
        def cfg(key, file):
            return one_server_config(broker, server, "NKEY",
                                     f"nkey: {{public_key: {key}, seed_file: {file}}}")
        sd = Seedance(cfg(public, seed_file)).start(timeout=30)
        try:
            assert sd.wait_log("connected to"), sd.stderr()
            time.sleep(0.3)
            publish_all(broker.port, [("site/a/b", json.dumps({"n": i})) for i in range(20)])
            assert wait_until(lambda: server.count("NKEY", "telemetry.>", timeout=5, info_only=True,
                                                   url=reader_url)["stream_msgs"] >= 20, 20, 0.2), \
                sd.stderr()[-3000:]
        finally:
            assert sd.stop() == 0
        # A key the server does not know: refused, and said so.
        sd = Seedance(cfg(other_public, other_seed_file))
        sd.start(wait_ready=False)
        try:
            assert sd.wait_log(r"(?i)authori[sz]ation", 20), sd.stderr()
        finally:
            sd.stop()
    finally:
        server.stop()


def generated_config(url, n, subject, stream, extra=""):
    """n generated events at 100/s into one server's stream, max_pending 5, a 1 s timeout."""
    return f"""
sources:
  - type: generate
    payload: '{{"n":{{n}}}}'
    topic: site/a/b
    count: {n}
    rate: 100
sinks:
  - type: nats
    servers: [{url}]
    subject: "{subject}"
    stream: {stream}
    create_stream: {{subjects: ["telemetry.>"]}}
    max_pending: 5
    timeout: 1s
    retry_initial: 50ms
    retry_max: 200ms
    {extra}
"""


def test_a_server_that_hangs_then_dies_with_batches_in_flight_loses_and_repeats_nothing():
    # The server stops answering (SIGSTOP) while batches are in flight: attempts time out and
    # are retried into the silence, beyond max_pending messages. Then it is killed and
    # restarted: the PubAcks of what it had taken never come. Every event arrives, once.
    server = NatsCluster(nodes=1).start()
    n = 400
    cfg = generated_config(server.urls[0], n, "telemetry.hang", "HANG",
                           "reconnect_wait: 100ms")
    sd = Seedance(cfg).start(timeout=30)
    try:
        assert wait_until(lambda: stream_msgs(server, "HANG") >= 50, 20, 0.1), sd.stderr()[-3000:]
        server.procs[0].send_signal(signal.SIGSTOP)
        time.sleep(4)  # several attempts time out and are retried
        server.procs[0].send_signal(signal.SIGKILL)
        server.procs[0].wait()
        server.start_node(0)
        assert wait_until(lambda: stream_msgs(server, "HANG") >= n, 30, 0.2), \
            f"{stream_msgs(server, 'HANG')} of {n} in the stream\n" + sd.stderr()[-3000:]
        counted = server.count("HANG", "telemetry.>", timeout=30)
        assert counted["unique"] == n and counted["repeats"] == 0, counted
        assert "no answer within the timeout" in sd.stderr(), sd.stderr()[-3000:]
    finally:
        assert sd.stop() == 0
        server.stop()


def test_lost_pubacks_are_taken_back_from_the_client_and_do_not_wedge_the_sink():
    # The server stores each message but its PubAck never arrives (the proxy leaves out the
    # next 12): libnats kept such a message among its max_pending for good, and past
    # max_pending every publish waited 200 ms and failed. Now the sink takes them back at the
    # next attempt: every event arrives, once (the retry's copies are dropped by msg id).
    server = NatsCluster(nodes=1).start()
    proxy = NatsAckDropper(server.ports[0])
    n = 300
    cfg = generated_config(proxy.url, n, "telemetry.lost", "LOST")
    sd = Seedance(cfg).start(timeout=30)
    try:
        assert wait_until(lambda: stream_msgs(server, "LOST") >= 30, 20, 0.1), sd.stderr()[-3000:]
        proxy.drop_acks(12)
        assert wait_until(lambda: proxy.dropped == 12, 20, 0.1), proxy.dropped
        assert wait_until(lambda: stream_msgs(server, "LOST") >= n, 30, 0.2), \
            f"{stream_msgs(server, 'LOST')} of {n} in the stream\n" + sd.stderr()[-3000:]
        counted = server.count("LOST", "telemetry.>", timeout=30)
        assert counted["unique"] == n and counted["repeats"] == 0, counted
        # Logged at most every 10 s (docs/nats-sink.md): the 12 lost PubAcks take about as
        # many timed-out attempts, each followed by a take-back, within a few seconds.
        said = "had no PubAck within the timeout and are sent again"
        assert sd.log_times(said), sd.stderr()[-3000:]
        assert sd.logged_at_most_every(said, 10), sd.stderr()[-3000:]
    finally:
        assert sd.stop() == 0
        proxy.stop()
        server.stop()
