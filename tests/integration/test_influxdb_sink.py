"""influxdb sink against a real influxd (Debian's influxdb 1.6, started on loopback): points
written through MQTT → watermark → influxdb and read back with InfluxQL, value for value; a
field type conflict found among the batch's points and routed to `rejected`; the v2 API's
request against a real HTTP receiver (influxd 1.6 has no v2 endpoint)."""
import json
import time

import pytest

from testing.influxd import Influxd
from testing.mqtt_publish import publish_all
from testing.seedance_process import Seedance, validate
from testing.waiting import wait_until

# An hour ago, in whole seconds: inside the watermark's allowed lateness.
BASE_NS = (int(time.time()) - 3600) * 1_000_000_000


@pytest.fixture
def influxd():
    server = Influxd().start()
    yield server
    server.stop()


def config(broker, influxd, tmp_path, sink_extra=""):
    return f"""
sources:
  - type: mqtt
    uri: "{broker.uri}"
    topic: "site/#"
    qos: 1
processors:
  - type: watermark
    time_field: ts
    time_format: ns
    allowed_lateness: 1000h
sinks:
  - type: influxdb
    endpoint: "{influxd.url}"
    database: edge
    measurement: "{{topic.3}}"
    tags:
      site: "{{topic.2}}"
      device: "{{payload.device}}"
    fields: [v, ok, label, n]
    batch_size: 1000
{sink_extra}
  - type: file
    name: rejected
    path: {tmp_path}/rejected.ndjson
    inputs: [rejected]
"""


def wait_count(influxd, q, n, timeout=60):
    deadline = time.time() + timeout
    got = None
    while time.time() < deadline:
        rows = influxd.rows(q, "edge")
        got = rows[0]["count"] if rows else 0
        if got >= n:
            return got
        time.sleep(0.2)
    return got


def test_50000_points_are_read_back_value_for_value(broker, influxd, tmp_path):
    influxd.query("CREATE DATABASE edge")
    sd = Seedance(config(broker, influxd, tmp_path)).start()
    try:
        assert sd.wait_log("connected to"), sd.stderr()
        time.sleep(0.3)
        n = 50_000
        msgs = [(f"site/north/climate",
                 json.dumps({"ts": BASE_NS + i * 1000, "n": i, "device": f"d {i % 10}",
                             "v": i * 0.25 - 100, "ok": i % 3 == 0,
                             "label": f"say \"{i}\", \\ok\n"}))
                for i in range(n)]
        publish_all(broker.port, msgs)
        got = wait_count(influxd, "SELECT count(n) FROM climate", n)
        assert got == n, sd.stderr()[-3000:]
        rows = influxd.rows("SELECT * FROM climate", "edge")
        assert len(rows) == n
        for row in rows:
            i = int(row["n"])
            assert row["time"] == BASE_NS + i * 1000
            assert row["site"] == "north"
            assert row["device"] == f"d {i % 10}"
            assert row["v"] == i * 0.25 - 100
            assert row["ok"] == (i % 3 == 0)
            assert row["label"] == f"say \"{i}\", \\ok\n"
        assert not (tmp_path / "rejected.ndjson").exists() or \
            (tmp_path / "rejected.ndjson").read_text() == ""
    finally:
        assert sd.stop() == 0


def test_a_field_type_conflict_sends_only_the_conflicting_points_to_rejected(broker, influxd,
                                                                              tmp_path):
    influxd.query("CREATE DATABASE edge")
    # v is a float in the shard the events go to (influxdb keeps field types per shard, so the
    # point must share their time range: at time 1 it would sit in a 1970 shard, and whichever
    # of the sink's concurrent batches reached the new shard first would decide v's type); then
    # one batch where four events carry a string v, and one event whose tag ends in a backslash
    # (the protocol cannot carry it: no request).
    urlopen_write(influxd, f"climate,device=d0,site=north v=1 {BASE_NS}")
    sd = Seedance(config(broker, influxd, tmp_path)).start()
    try:
        assert sd.wait_log("connected to"), sd.stderr()
        time.sleep(0.3)
        bad = {5, 17, 18, 60}
        msgs = []
        for i in range(100):
            p = {"ts": BASE_NS + i * 1000, "n": i, "device": "d1", "v": f"s{i}" if i in bad else i}
            if i == 70:
                p["device"] = "ends\\"
            msgs.append(("site/north/climate", json.dumps(p)))
        publish_all(broker.port, msgs)
        rejected_file = tmp_path / "rejected.ndjson"
        deadline = time.time() + 30
        lines = []
        while time.time() < deadline:
            lines = rejected_file.read_text().splitlines() if rejected_file.exists() else []
            if len(lines) >= 5:
                break
            time.sleep(0.1)
        got = wait_count(influxd, "SELECT count(n) FROM climate", 95, timeout=30)
        assert got == 95, sd.stderr()[-3000:]
        rejected = {json.loads(l)["payload"]["n"]: json.loads(l)["headers"]["reason"] for l in lines}
        assert set(rejected) == bad | {70}, rejected
        for i in bad:
            assert "field type conflict" in rejected[i], rejected[i]
        assert "ends in a backslash" in rejected[70], rejected[70]
        assert sd.wait_log(r"sending the batch of \d+ events as")
        written = sorted(int(r["n"]) for r in influxd.rows("SELECT n FROM climate", "edge"))
        assert written == sorted(set(range(100)) - bad - {70})
    finally:
        assert sd.stop() == 0


def urlopen_write(influxd, lines):
    import urllib.request
    req = urllib.request.Request(influxd.url + "/write?db=edge", data=lines.encode(), method="POST")
    with urllib.request.urlopen(req, timeout=10) as r:
        assert r.status == 204


def test_the_v2_api_sends_org_bucket_precision_and_token(broker, receiver, tmp_path):
    cfg = f"""
sources:
  - type: mqtt
    uri: "{broker.uri}"
    topic: "site/#"
sinks:
  - type: influxdb
    endpoint: "{receiver.url}/influx/"
    api: v2
    org: "my org"
    bucket: edge
    token: "secret-token"
    precision: ms
    measurement: m
    compression: gzip
"""
    sd = Seedance(cfg).start()
    try:
        assert sd.wait_log("connected to"), sd.stderr()
        time.sleep(0.3)
        publish_all(broker.port, [("site/a", json.dumps({"v": 1.5}))])
        deadline = time.time() + 10
        while time.time() < deadline and receiver.count() == 0:
            time.sleep(0.05)
        path, ctype, body, status = receiver.requests[0]
        assert path == "/influx/api/v2/write?org=my%20org&bucket=edge&precision=ms"
        fields = {k.lower(): v for k, v in receiver.request_headers[0]}
        assert fields["authorization"] == "Token secret-token"
        assert fields["content-encoding"] == "gzip"
        assert ctype.startswith("text/plain")
        line = body.decode()
        assert line.startswith("m v=1.5 ") and line.endswith("\n"), line
        assert abs(int(line.split()[-1]) - time.time() * 1000) < 60_000  # ms
    finally:
        assert sd.stop() == 0


@pytest.mark.parametrize("section,message", [
    ("api: v1", "api v1 needs database"),
    ("api: v2\n    database: x", "api v2 needs org, bucket and token"),
    ("database: x\n    measurement: \"{nope}\"", "unknown placeholder {nope}"),
])
def test_bad_sections_name_the_file_and_line(tmp_path, section, message):
    cfg = tmp_path / "c.yaml"
    measurement = "" if "measurement" in section else "\n    measurement: m"
    cfg.write_text("sources:\n  - {type: generate, payload: '{}'}\nsinks:\n  - type: influxdb\n"
                   f"    endpoint: http://127.0.0.1:9\n    {section}{measurement}\n")
    r = validate(cfg)
    assert r.returncode == 2, r.stderr
    assert "c.yaml:" in r.stderr and message in r.stderr, r.stderr


def test_v1_basic_authentication_and_a_retention_policy(broker, tmp_path):
    server = Influxd(auth=True).start()
    try:
        # The first user of a server with auth on may be made without credentials.
        server.query("CREATE USER admin WITH PASSWORD 'admin-secret' WITH ALL PRIVILEGES")
        server.query("CREATE DATABASE edge")
        server.query("CREATE RETENTION POLICY week ON edge DURATION 7d REPLICATION 1")
        server.query("CREATE USER gw WITH PASSWORD 'gw-secret'")
        server.query("GRANT WRITE ON edge TO gw")
        extra = "    username: gw\n    password: gw-secret\n    retention_policy: week\n"
        sd = Seedance(config(broker, server, tmp_path, extra)).start()
        try:
            assert sd.wait_log("connected to"), sd.stderr()
            time.sleep(0.3)
            publish_all(broker.port, [("site/north/climate",
                                       json.dumps({"ts": BASE_NS + i, "n": i, "device": "d"}))
                                      for i in range(100)])
            got = wait_count(server, 'SELECT count(n) FROM "edge"."week"."climate"', 100, timeout=30)
            assert got == 100, sd.stderr()[-3000:]
            # Nothing in the default policy: the points went where retention_policy said.
            assert server.rows('SELECT count(n) FROM "edge"."autogen"."climate"', "edge") == []
        finally:
            assert sd.stop() == 0
        # A wrong password: InfluxDB answers 401, the batch goes to `rejected` with that.
        wrong = config(broker, server, tmp_path, extra.replace("gw-secret", "nope"))
        sd = Seedance(wrong).start()
        try:
            assert sd.wait_log("connected to"), sd.stderr()
            time.sleep(0.3)
            publish_all(broker.port, [("site/north/climate", json.dumps({"ts": BASE_NS, "n": 1000}))])
            assert wait_until(lambda: any("HTTP 401" in l["headers"]["reason"]
                                          for l in rejected_lines(tmp_path)), 20), sd.stderr()[-3000:]
        finally:
            assert sd.stop() == 0
    finally:
        server.stop()


def rejected_lines(tmp_path):
    f = tmp_path / "rejected.ndjson"
    return [json.loads(l) for l in f.read_text().splitlines()] if f.exists() else []
