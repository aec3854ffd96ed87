"""The modbus source with the real binary against pymodbus's simulator on 127.0.0.1
(tests/testing/modbus_sim.py: a uint32 counter, float32 in ABCD and CDAB order, strings, 300
contiguous registers, a unit that answers with exceptions), over TCP and, through a socat pty
pair, RTU (cross-checked with mbpoll); a hostile device; the simulator stopped for 30 s; a
kill -9 with the sink down."""
import json
import os
import re
import shutil
import signal
import struct
import subprocess
import sys
import time

import pytest

from testing.ports import free_port
from testing.http_receiver import Receiver
from testing.seedance_process import Seedance, metric, scrape, validate
from testing import modbus_sim as sim
from testing.waiting import wait_until

TESTS_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class Simulator:
    """pymodbus's server in a process of its own (stopping it drops the connection)."""

    def __init__(self, tcp_port=None, rtu=None):
        self.args = [sys.executable, "-m", "testing.modbus_sim"]
        self.args += ["--tcp", f"127.0.0.1:{tcp_port}"] if tcp_port else ["--rtu", rtu]
        self.args += ["--tick", "0.5"]
        self.proc = None

    def start(self):
        self.proc = subprocess.Popen(self.args, cwd=TESTS_DIR, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, text=True)
        line = self.proc.stdout.readline()
        assert line.strip() == "ready", "simulator did not start"
        return self

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture
def device():
    port = free_port()
    s = Simulator(tcp_port=port).start()
    s.port = port
    yield s
    s.stop()


@pytest.fixture
def pty_pair(tmp_path):
    """Two ptys joined by socat: the serial line (master side, device side)."""
    assert shutil.which("socat"), "socat is needed (scripts/setup installs it)"
    a, b = tmp_path / "master", tmp_path / "device"
    socat = subprocess.Popen(["socat", f"pty,raw,echo=0,link={a}", f"pty,raw,echo=0,link={b}"],
                             stderr=subprocess.DEVNULL)
    wait_until(lambda: a.exists() and b.exists(), timeout=5)
    yield a, b
    socat.send_signal(signal.SIGTERM)
    socat.wait()


def lines(path):
    try:
        with open(path) as f:
            return [json.loads(l, object_pairs_hook=lambda kv: kv) for l in f if l.endswith("\n")]
    except FileNotFoundError:
        return []


def as_dict(pairs):
    return {k: (as_dict(v) if isinstance(v, list) and v and isinstance(v[0], tuple) else v)
            for k, v in pairs}


METER_TAGS = """          - {name: counter, address: 0, type: uint32}
          - {name: voltage, address: 2, type: float32}
          - {name: frequency, address: 4, type: float32, order: CDAB}
          - {name: serial, address: 6, type: string, length: 8}
          - {name: energy, address: 14, type: int64}
          - {name: balance, area: input, address: 0, type: int32, order: CDAB}
          - {name: breaker, area: coil, address: 0, type: bool}
          - {name: alarm, area: coil, address: 1, type: bool}
"""


# One register polled every 100 ms, for the fake devices below.
ONE_TAG = """      - name: meter
        interval: 100ms
        tags:
          - {name: v, address: 0}
"""


def listening_socket():
    """A socket listening on 127.0.0.1, for a fake device that misbehaves on purpose."""
    import socket
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)
    return srv


def span_tags():
    return "".join(f"          - {{name: r{i}, address: {i}}}\n"
                   for i in range(sim.SPAN_START, sim.SPAN_START + sim.SPAN_COUNT))


def config(url, groups, out, error_out=None, port=None, extra="", timeout="300ms"):
    errors = f"""  - type: file
    inputs: [error]
    path: {error_out}
""" if error_out else ""
    listen = f"metrics:\n  listen: 127.0.0.1:{port}\n" if port else ""
    return f"""
sources:
  - type: modbus
    url: {url}
    timeout: {timeout}
{extra}    groups:
{groups}
sinks:
  - type: file
    path: {out}
    encoding: payload
{errors}{listen}"""


def test_values_and_their_order_match_the_map_and_reads_split_at_125(tmp_path, device):
    out = tmp_path / "out.ndjson"
    groups = f"""      - name: meter
        unit: 1
        interval: 100ms
        tags:
{METER_TAGS}      - name: span
        unit: 1
        interval: 200ms
        tags:
{span_tags()}      - name: meter
        unit: 2
        interval: 100ms
        tags:
          - {{name: counter, address: 0, type: uint32}}
          - {{name: kwh, address: 14, type: int64, scale: 0.001, offset: -1}}
"""
    sd = Seedance(config(f"tcp://127.0.0.1:{device.port}", groups, out)).start()
    try:
        # The plan: 300 contiguous registers in 125 + 125 + 50; the meter's tags in 3 reads.
        assert sd.wait_log(r'group "span" \(unit 1\): 300 tags in 3 reads'), sd.stderr()
        assert sd.wait_log(r'group "meter" \(unit 1\): 8 tags in 3 reads'), sd.stderr()
        wait_until(lambda: len(lines(out)) >= 12, timeout=15)
    finally:
        assert sd.stop() == 0
    events = lines(out)
    by = {}
    for pairs in events:
        e = as_dict(pairs)
        by.setdefault((e["unit"], e["group"]), []).append((pairs, e))
    pairs, meter = by[(1, "meter")][0]
    # The values in the order the tags are declared.
    assert [k for k, _ in dict(pairs)["values"]] == [
        "counter", "voltage", "frequency", "serial", "energy", "balance", "breaker", "alarm"]
    v = meter["values"]
    assert v["counter"] == sim.COUNTER
    assert v["voltage"] == pytest.approx(sim.VOLTAGE)
    assert v["frequency"] == pytest.approx(sim.FREQUENCY)  # CDAB
    assert v["serial"] == sim.SERIAL
    assert v["energy"] == sim.ENERGY  # 64 bits, exact (not through a double)
    assert v["balance"] == sim.NEGATIVE
    assert v["breaker"] is True and v["alarm"] is False
    assert [e["seq"] for _, e in by[(1, "meter")]] == list(range(len(by[(1, "meter")])))
    span = by[(1, "span")][0][1]["values"]
    assert span == {f"r{i}": i for i in range(sim.SPAN_START, sim.SPAN_START + sim.SPAN_COUNT)}
    # Two units behind one gateway: unit 2's map is unit 1's plus one.
    assert by[(2, "meter")][0][1]["values"]["counter"] == sim.COUNTER + 1
    assert by[(2, "meter")][0][1]["values"]["kwh"] == pytest.approx((sim.ENERGY + 1) * 0.001 - 1)


def test_an_exception_answer_sends_the_poll_to_error_named_and_logged_once(tmp_path, device):
    out, err = tmp_path / "out.ndjson", tmp_path / "error.ndjson"
    port = free_port()
    groups = """      - name: small
        unit: 3
        interval: 100ms
        tags:
          - {name: a, address: 0}
          - {name: b, address: 15}
      - name: fine
        unit: 3
        interval: 100ms
        tags:
          - {name: a, address: 9}
"""
    sd = Seedance(config(f"tcp://127.0.0.1:{device.port}", groups, out, error_out=err,
                         port=port, extra="    max_gap: 20\n")).start()
    try:
        wait_until(lambda: len(lines(err)) >= 5 and len(lines(out)) >= 5, timeout=15)
        text = scrape(f"http://127.0.0.1:{port}/metrics")
    finally:
        assert sd.stop() == 0
    envelopes = [json.loads(l) for l in open(err)]
    assert all("ILLEGAL DATA ADDRESS" in e["headers"]["reason"] and
               e["headers"]["modbus_group"] == "small" for e in envelopes)
    bad = [e["payload"] for e in envelopes]
    assert all(b["exception"] == "ILLEGAL DATA ADDRESS" and b["code"] == 2 for b in bad)
    assert bad[0]["area"] == "holding_registers" and bad[0]["address"] == 0
    assert bad[0]["count"] == 16  # max_gap 20 let one read span the gap
    # The group that reads what the unit has is unaffected.
    assert all(as_dict(p)["values"] == {"a": 9} for p in lines(out))
    assert metric(text, "seedance_modbus_polls_total", group="small", result="exception") >= 5
    # Logged once (by the pipeline, routing it to error), not once per poll.
    warned = [l for l in sd.stderr_lines if "ILLEGAL DATA ADDRESS" in l]
    assert len(warned) == 1, warned


def test_the_device_stopped_for_30s_is_reconnected_and_missed_polls_are_counted(tmp_path,
                                                                                device):
    out = tmp_path / "out.ndjson"
    port = free_port()
    groups = """      - name: meter
        interval: 100ms
        tags:
          - {name: counter, address: 0, type: uint32}
"""
    sd = Seedance(config(f"tcp://127.0.0.1:{device.port}", groups, out, port=port,
                         extra="    reconnect_max: 1s\n")).start()
    url = f"http://127.0.0.1:{port}/metrics"
    try:
        wait_until(lambda: len(lines(out)) >= 5, timeout=15)
        device.stop()
        stopped = time.time()
        wait_until(lambda: metric(scrape(url), "seedance_modbus_connected") == 0, timeout=5)
        before = len(lines(out))
        time.sleep(max(0.0, 30 - (time.time() - stopped)))
        assert len(lines(out)) == before  # nothing invented while it was away
        device.start()
        wait_until(lambda: len(lines(out)) >= before + 10, timeout=10)
        text = scrape(url)
    finally:
        assert sd.stop() == 0
    missed = (metric(text, "seedance_modbus_polls_missed_total", reason="unreachable") +
              metric(text, "seedance_modbus_polls_missed_total", reason="failed"))
    # 30 s at 10 polls a second: about 300 polls could not be taken, each counted.
    assert 250 <= missed <= 360, text
    assert metric(text, "seedance_modbus_connected") == 1
    assert metric(text, "seedance_modbus_request_errors_total", kind="unreachable") >= 20
    assert sum(1 for l in sd.stderr_lines if "poll failed" in l) == 1, sd.stderr()
    assert sd.wait_log("polls answered again")


def test_every_poll_committed_before_a_kill_9_with_the_sink_down_is_delivered(tmp_path,
                                                                              device):
    data = tmp_path / "run"
    sink_port, port = free_port(), free_port()
    groups = """      - name: meter
        interval: 100ms
        tags:
          - {name: counter, address: 0, type: uint32}
"""

    def job(url):
        return f"""
sources:
  - type: modbus
    url: {url}
    timeout: 300ms
    groups:
{groups}
sinks:
  - type: http
    endpoint: http://127.0.0.1:{sink_port}/in
    retry_initial: 50ms
    retry_max: 200ms
metrics:
  listen: 127.0.0.1:{port}
"""
    sd = Seedance(job(f"tcp://127.0.0.1:{device.port}"), workdir=str(data)).start()
    murl = f"http://127.0.0.1:{port}/metrics"
    wait_until(lambda: (metric(scrape(murl), "seedance_modbus_polls_committed_total") or 0) >= 30,
               timeout=20)
    committed = metric(scrape(murl), "seedance_modbus_polls_committed_total")
    sd.kill()
    device.stop()  # the restarted job takes no new polls: what arrives is what was taken
    receiver = Receiver(port=sink_port).start()
    try:
        sd2 = Seedance(job(f"tcp://127.0.0.1:{device.port}"), workdir=str(data)).start()
        try:
            wait_until(lambda: len(receiver.accepted_events()) >= committed, timeout=20)
            time.sleep(0.5)
        finally:
            sd2.stop()
    finally:
        receiver.stop()
    seqs = sorted({e["seq"] for e in receiver.accepted_events()})
    assert seqs[:int(committed)] == list(range(int(committed))), seqs[:40]
    # Polls are taken in order and each one committed: no gap anywhere.
    assert seqs == list(range(len(seqs)))


def test_report_by_exception_sends_changes_and_a_heartbeat(tmp_path, device):
    out = tmp_path / "out.ndjson"
    groups = """      - name: meter
        interval: 100ms
        report: changes
        heartbeat: 2s
        tags:
          - {name: tick, address: 50}
          - {name: voltage, address: 2, type: float32}
"""
    sd = Seedance(config(f"tcp://127.0.0.1:{device.port}", groups, out)).start()
    try:
        time.sleep(5.2)
    finally:
        assert sd.stop() == 0
    events = [as_dict(p) for p in lines(out)]
    full = [e for e in events if "voltage" in e["values"]]
    changes = [e for e in events if "voltage" not in e["values"]]
    # The first poll and one heartbeat per 2 s carry every tag; the rest only the tick, which
    # the simulator moves every 0.5 s: far fewer events than the 50 polls.
    assert 2 <= len(full) <= 4, events
    assert all(e["values"].keys() == {"tick"} for e in changes)
    assert 6 <= len(changes) <= 12, events
    # A change event is sent because the tick moved since the event before it.
    tick = None
    for e in events:
        if "voltage" not in e["values"]:
            assert e["values"]["tick"] != tick, events
        tick = e["values"]["tick"]
    gaps = [(b["time_ns"] - a["time_ns"]) / 1e9 for a, b in zip(full, full[1:])]
    assert all(1.9 <= g <= 2.3 for g in gaps), gaps


def test_a_hostile_device_is_cut_off_and_counted_not_trusted(tmp_path):
    """A device that answers with another transaction id, then a header that is not Modbus,
    then a byte count larger than asked: each is counted garbled and the connection closed."""
    import threading
    srv = listening_socket()
    connections = []

    def serve():
        answers = [
            lambda tid: struct.pack(">HHHBBBH", tid ^ 0x5555, 0, 5, 1, 3, 2, 7),  # wrong tid
            lambda tid: struct.pack(">HHHB", tid, 0, 60000, 1) + b"x" * 100,     # not Modbus
            lambda tid: struct.pack(">HHHBBB", tid, 0, 7, 1, 3, 4) + b"\0" * 4,  # 2 regs asked? 1
        ]
        n = 0
        srv.settimeout(15)
        while n < 9:
            try:
                c, _ = srv.accept()
            except OSError:
                return
            connections.append(c)
            try:
                req = c.recv(64)
                if len(req) >= 12:
                    tid = struct.unpack(">H", req[:2])[0]
                    c.sendall(answers[n % 3](tid))
                    time.sleep(0.05)
            except OSError:
                pass
            n += 1
            c.close()

    threading.Thread(target=serve, daemon=True).start()
    out = tmp_path / "out.ndjson"
    port = free_port()
    groups = """      - name: meter
        interval: 100ms
        tags:
          - {name: counter, address: 0}
"""
    sd = Seedance(config(f"tcp://127.0.0.1:{srv.getsockname()[1]}", groups, out, port=port,
                         extra="    retries: 0\n")).start()
    try:
        url = f"http://127.0.0.1:{port}/metrics"
        wait_until(lambda: (metric(scrape(url), "seedance_modbus_request_errors_total",
                                   kind="garbled") or 0) >= 6, timeout=15)
        assert sd.proc.poll() is None
        text = scrape(url)
    finally:
        assert sd.stop() == 0
        srv.close()
    assert lines(out) == []
    # Every hostile answer ended its connection: one connection per request.
    assert len(connections) >= 6
    # Each was judged on the bytes it sent: none (the 60,000-byte length above all) was read
    # on, waiting for more, until its request timed out.
    assert metric(text, "seedance_modbus_request_errors_total", kind="timeout") == 0, text


def test_a_device_that_drips_or_goes_silent_costs_each_request_its_timeout(tmp_path):
    """docs/modbus.md, Hostile answers: a device that accepts and says nothing, or sends a
    valid answer one byte every 100 ms (it would take 1.1 s), costs each request its timeout
    (300 ms), never more: the request fails as `timeout`, its connection is closed (a late
    answer must not be taken for the next request's), and polling goes on."""
    import socket
    import threading
    srv = listening_socket()
    held = []  # (seconds from the request to the close seen, what the device did)
    stop = threading.Event()

    def handle(c, n):
        c.settimeout(5)
        try:
            req = c.recv(64)
        except OSError:
            return
        asked = time.monotonic()
        if len(req) < 12:
            return
        tid = struct.unpack(">H", req[:2])[0]
        answer = struct.pack(">HHHBBBH", tid, 0, 5, 1, 3, 2, 7)
        closed = False
        if n % 2 == 0:  # drips
            for b in answer:
                if stop.is_set():
                    break
                try:
                    c.sendall(bytes([b]))
                except OSError:
                    closed = True
                    break
                time.sleep(0.1)
                try:
                    c.settimeout(0.001)
                    closed = c.recv(1) == b""
                except socket.timeout:
                    pass
                except OSError:
                    closed = True
                if closed:
                    break
        else:  # silent
            try:
                closed = c.recv(1) == b""
            except OSError:
                closed = True
        if closed:
            held.append((time.monotonic() - asked, "drip" if n % 2 == 0 else "silent"))
        c.close()

    def serve():
        srv.settimeout(0.2)
        n = 0
        while not stop.is_set() and n < 8:
            try:
                c, _ = srv.accept()
            except OSError:
                continue
            threading.Thread(target=handle, args=(c, n), daemon=True).start()
            n += 1

    threading.Thread(target=serve, daemon=True).start()
    out, port = tmp_path / "out.ndjson", free_port()
    sd = Seedance(config(f"tcp://127.0.0.1:{srv.getsockname()[1]}", ONE_TAG, out, port=port,
                         extra="    retries: 0\n")).start()
    try:
        url = f"http://127.0.0.1:{port}/metrics"
        assert wait_until(lambda: len(held) >= 6, timeout=20), (held, sd.stderr()[-2000:])
        assert sd.proc.poll() is None
        text = scrape(url)
    finally:
        assert sd.stop() == 0
        stop.set()
        srv.close()
    assert lines(out) == []
    assert {what for _, what in held} == {"drip", "silent"}, held
    # Closed at the timeout (300 ms), not when the drip would have ended (1.1 s) or never.
    assert all(0.25 <= took <= 0.9 for took, _ in held), held
    assert metric(text, "seedance_modbus_request_errors_total", kind="timeout") >= 6, text
    assert (metric(text, "seedance_modbus_request_errors_total", kind="garbled") or 0) == 0, text


def test_a_slow_device_makes_polls_missed_not_bunched(tmp_path):
    """A device that takes 250 ms to answer, polled every 100 ms: the polls that fall due while
    one is out are counted (overrun) and skipped; the next poll starts on the schedule, never
    as a burst to catch up."""
    import socket
    import threading
    srv = listening_socket()
    stop = threading.Event()

    def serve():
        srv.settimeout(0.2)
        while not stop.is_set():
            try:
                c, _ = srv.accept()
            except OSError:
                continue
            c.settimeout(0.2)
            while not stop.is_set():
                try:
                    req = c.recv(12)
                except socket.timeout:
                    continue
                except OSError:
                    break
                if len(req) < 12:
                    break
                tid = struct.unpack(">H", req[:2])[0]
                time.sleep(0.25)
                c.sendall(struct.pack(">HHHBBBH", tid, 0, 5, 1, 3, 2, 42))
            c.close()

    threading.Thread(target=serve, daemon=True).start()
    out, port = tmp_path / "out.ndjson", free_port()
    sd = Seedance(config(f"tcp://127.0.0.1:{srv.getsockname()[1]}", ONE_TAG, out, port=port,
                         timeout="1s")).start()
    try:
        wait_until(lambda: len(lines(out)) >= 10, timeout=20)
        text = scrape(f"http://127.0.0.1:{port}/metrics")
    finally:
        assert sd.stop() == 0
        stop.set()
        srv.close()
    events = [as_dict(p) for p in lines(out)]
    assert all(e["values"] == {"v": 42} for e in events)
    times = [e["time_ns"] / 1e6 for e in events]
    gaps = [b - a for a, b in zip(times, times[1:])]
    # Each poll takes 250 ms: the next starts at the first due time after it, 300 ms on; never
    # sooner than one interval after the last (no catch-up burst).
    assert min(gaps) > 250, gaps
    assert sum(1 for g in gaps if 280 <= g <= 330) >= len(gaps) * 0.7, gaps
    missed = metric(text, "seedance_modbus_polls_missed_total", reason="overrun")
    ok = metric(text, "seedance_modbus_polls_total", result="ok")
    assert missed >= 1.5 * ok, (missed, ok)  # two of every three due times


def test_rtu_over_a_pty_pair_matches_mbpoll(tmp_path, pty_pair):
    assert shutil.which("mbpoll"), "mbpoll is needed (scripts/setup installs it)"
    a, b = pty_pair
    dev = Simulator(rtu=str(b)).start()
    try:
        # mbpoll first (one master on the line at a time): the raw registers.
        r = subprocess.run(["mbpoll", "-m", "rtu", "-b", "19200", "-P", "none", "-s", "2",
                            "-a", "1", "-r", "1", "-c", "6", "-t", "4", "-1", "-q", str(a)],
                           capture_output=True, text=True, timeout=10)
        regs = [int(x) & 0xFFFF for x in re.findall(r"^\[\d+\]:\s+(-?\d+)", r.stdout, re.M)]
        assert len(regs) == 6, r.stdout + r.stderr
        out = tmp_path / "out.ndjson"
        groups = f"""      - name: meter
        interval: 100ms
        tags:
{METER_TAGS}"""
        sd = Seedance(config(f"rtu:{a}", groups, out,
                             extra="    baud: 19200\n    parity: none\n    stop_bits: 2\n"))
        sd.start()
        try:
            wait_until(lambda: len(lines(out)) >= 5, timeout=15)
        finally:
            assert sd.stop() == 0
    finally:
        dev.stop()
    v = as_dict(lines(out)[0])["values"]
    assert v["counter"] == (regs[0] << 16 | regs[1]) == sim.COUNTER
    assert v["voltage"] == pytest.approx(
        struct.unpack(">f", struct.pack(">HH", regs[2], regs[3]))[0])
    assert v["frequency"] == pytest.approx(
        struct.unpack(">f", struct.pack(">HH", regs[5], regs[4]))[0])  # CDAB
    assert v["serial"] == sim.SERIAL and v["energy"] == sim.ENERGY


def crc16(data):
    crc = 0xFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ 0xA001 if crc & 1 else crc >> 1
    return crc


def bad_crc_device(path, stop, answered):
    """Answers every 8-byte request on the serial line `path` with a frame whose CRC is off."""
    import select
    import tty
    fd = os.open(str(path), os.O_RDWR | os.O_NOCTTY)
    tty.setraw(fd)
    buf = b""
    while not stop.is_set():
        if not select.select([fd], [], [], 0.1)[0]:
            continue
        buf += os.read(fd, 64)
        while len(buf) >= 8:
            req, buf = buf[:8], buf[8:]
            frame = bytes([req[0], 3, 4, 0x12, 0x34, 0x56, 0x78])
            c = crc16(frame) ^ 0x0101
            os.write(fd, frame + bytes([c & 0xFF, c >> 8]))
            answered.append(req)
    os.close(fd)


def test_rtu_a_silent_line_and_bad_crcs_are_retried_and_counted(tmp_path, pty_pair):
    """First nothing answers on the line (timeouts), then a device answers every request with
    a frame whose CRC is wrong: both are retried and counted, nothing is emitted."""
    import threading
    a, b = pty_pair
    stop = threading.Event()
    answered = []
    out, port = tmp_path / "out.ndjson", free_port()
    groups = """      - name: meter
        interval: 200ms
        tags:
          - {name: counter, address: 0, type: uint32}
"""
    sd = Seedance(config(f"rtu:{a}", groups, out, port=port,
                         extra="    baud: 19200\n    parity: none\n    retries: 1\n"
                               "    retry_backoff: 10ms\n")).start()
    url = f"http://127.0.0.1:{port}/metrics"
    try:
        wait_until(lambda: (metric(scrape(url), "seedance_modbus_request_errors_total",
                                   kind="timeout") or 0) >= 4, timeout=15)
        threading.Thread(target=bad_crc_device, args=(b, stop, answered), daemon=True).start()
        wait_until(lambda: (metric(scrape(url), "seedance_modbus_request_errors_total",
                                   kind="crc") or 0) >= 4, timeout=15)
        text = scrape(url)
    finally:
        stop.set()
        assert sd.stop() == 0
    assert lines(out) == []
    assert metric(text, "seedance_modbus_retries_total") >= 4
    assert metric(text, "seedance_modbus_polls_missed_total", reason="failed") >= 4
    # Each request was a well-formed read of holding 0, 2 registers, to unit 1.
    assert answered and all(r[:6] == bytes([1, 3, 0, 0, 0, 2]) and
                            crc16(r[:6]) == (r[6] | r[7] << 8) for r in answered)


@pytest.mark.parametrize("tags,extra,why", [
    ("          - {name: a, address: 0, type: float32}\n          - {name: b, address: 1}\n",
     "", r'tags "a" \(holding_registers 0-1\) and "b" \(holding_registers 1\) overlap'),
    ("          - {name: a, address: 65535, type: uint32}\n", "",
     "run past the last address"),
    ("          - {name: s, address: 0, type: string}\n", "", "a string needs a length"),
    ("          - {name: c, area: coil, address: 0, type: float32}\n", "",
     "coils hold bits: its type must be bool"),
    ("          - {name: a, address: 0, type: float32}\n", "    max_registers: 1\n",
     "more than one read may ask for"),
])
def test_validate_names_the_impossible_tag_with_its_line(tmp_path, tags, extra, why):
    path = tmp_path / "modbus.yaml"
    path.write_text(f"""sources:
  - type: modbus
    url: tcp://127.0.0.1:502
{extra}    groups:
      - name: g
        tags:
          - {{name: ok, address: 100}}
{tags}sinks:
  - type: stdout
""")
    r = validate(path)
    assert r.returncode != 0
    # The culprit is the last tag: line 8, one more for each line above it.
    line = 8 + (1 if extra else 0) + (1 if "b, address: 1" in tags else 0)
    assert re.search(rf"modbus\.yaml:{line}:\d+: .*{why}", r.stderr), r.stderr
