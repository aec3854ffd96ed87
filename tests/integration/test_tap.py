"""`seedance tap` (issue 46): the events at named points of a running pipeline as NDJSON, over
the metrics listener. A tap never changes what is delivered; a client that stops reading has
its events dropped and counted for it alone; the number of taps is bounded; taps survive a
SIGHUP; beyond loopback a tap needs metrics.token (observe/http_listener.h, docs/operations.md)."""
import json
import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request

from testing.ports import free_port
from testing.seedance_process import BIN, Seedance, metric, scrape
from testing.waiting import wait_until

# seq % 10 == 0: a script error (the error output); seq % 5 == 0: filtered; the rest on main.
FILTER = """
function process(event)
  local seq = event.payload.seq
  if seq % 10 == 0 then error("tens are refused") end
  if seq % 5 == 0 then return nil end
  event.payload.seen = true
  return event
end
"""


def job(tmp_path, port, count, rate, listen="127.0.0.1", token=None, delay="0s"):
    token_line = f"\n  token: \"{token}\"" if token else ""
    return f"""
sources:
  - type: generate
    count: {count}
    rate: {rate}
    delay: {delay}
processors:
  - type: lua
    name: lua
    code: |
{''.join('      ' + l + chr(10) for l in FILTER.strip().splitlines())}
sinks:
  - type: file
    name: out
    path: {tmp_path}/out.ndjson
queue:
  data_dir: {tmp_path}/data
metrics:
  listen: "{listen}:{port}"{token_line}
"""


def tap(port, *args, timeout=20, env=None):
    p = subprocess.run([BIN, "tap", "--url", f"http://127.0.0.1:{port}", *args],
                       capture_output=True, text=True, timeout=timeout, env=env)
    return p.returncode, [json.loads(l) for l in p.stdout.splitlines()], p.stderr


def events(lines):
    return [l for l in lines if "event" in l]


def delivered(tmp_path):
    path = tmp_path / "out.ndjson"
    return path.read_text().count("\n") if path.exists() else 0


def test_each_point_shows_what_passes_it(tmp_path):
    port = free_port()
    sd = Seedance(job(tmp_path, port, count=0, rate=500)).start()
    try:
        code, lines, err = tap(port, "--component", "lua", "--limit", "20")
        assert code == 0, err
        assert lines[0] == {"tap": "open", "slot": 0}
        got = events(lines)
        assert len(got) == 20
        for line in got:
            assert line["point"] == "processor" and line["component"] == "lua"
            assert line["event"]["payload"]["seen"] is True
            assert line["event"]["payload"]["seq"] % 5 != 0

        code, lines, err = tap(port, "--output", "error", "--limit", "3")
        assert code == 0, err
        for line in events(lines):
            assert line["point"] == "output" and line["output"] == "error"
            assert line["event"]["payload"]["seq"] % 10 == 0
            assert "tens are refused" in line["event"]["headers"]["reason"]

        code, lines, err = tap(port, "--component", "out", "--limit", "5")
        assert code == 0, err
        assert all(l["point"] == "sink" and l["component"] == "out" for l in events(lines))

        # The source's output, every 10th event: consecutive sequence numbers 10 apart.
        code, lines, err = tap(port, "--component", "generate", "--sample", "10", "--limit", "4")
        assert code == 0, err
        seqs = [l["event"]["payload"]["seq"] for l in events(lines)]
        assert len(seqs) == 4 and all(b - a == 10 for a, b in zip(seqs, seqs[1:])), seqs

        # A topic filter that matches nothing: nothing comes (the tap is ended by its timeout).
        p = subprocess.Popen([BIN, "tap", "--url", f"http://127.0.0.1:{port}", "--topic",
                              "nothing/#"], stdout=subprocess.PIPE, text=True)
        time.sleep(1.0)
        p.terminate()
        out, _ = p.communicate(timeout=5)
        assert events([json.loads(l) for l in out.splitlines()]) == []

        # Bad requests are refused with why, exit 2.
        code, _, err = tap(port, "--topic", "a/#/b")
        assert code == 2 and "topic" in err, err
    finally:
        assert sd.stop() == 0, sd.stderr()[-3000:]


def test_a_stopped_client_loses_only_its_own_events_and_taps_survive_a_reload(tmp_path):
    port = free_port()
    total = 25000
    # The first event after 2 s: the taps are open before it.
    sd = Seedance(job(tmp_path, port, count=total, rate=5000, delay="2s")).start()
    url = f"http://127.0.0.1:{port}"
    out_files = [tmp_path / f"tap{i}.ndjson" for i in range(3)]
    taps = []
    try:
        for i in range(3):
            f = open(out_files[i], "w")
            # Every point: each event shows three or four times, about 10 MB in all, more
            # than a stopped client's ring (1 MiB) and socket buffers can hold.
            taps.append((subprocess.Popen([BIN, "tap", "--url", url], stdout=f), f))
        assert wait_until(lambda: metric(scrape(url + "/metrics"), "seedance_taps_open") == 3,
                          timeout=10)
        # Each client's first line names its slot (the label of its metrics).
        assert wait_until(lambda: all(f.stat().st_size > 0 for f in out_files), timeout=10)
        slots = [str(json.loads(f.read_text().splitlines()[0])["slot"]) for f in out_files]
        taps[2][0].send_signal(signal.SIGSTOP)
        # A fifth client beyond the four allowed is refused with 503 while a fourth is open.
        fourth = subprocess.Popen([BIN, "tap", "--url", url], stdout=subprocess.DEVNULL)
        assert wait_until(lambda: metric(scrape(url + "/metrics"), "seedance_taps_open") == 4,
                          timeout=10)
        code, _, err = tap(port)
        assert code == 1 and "HTTP 503" in err and "4 taps are open" in err, err
        fourth.terminate()
        fourth.wait(5)

        assert wait_until(lambda: delivered(tmp_path) > total // 4, timeout=30)
        before_hup = out_files[0].stat().st_size
        sd.proc.send_signal(signal.SIGHUP)
        assert sd.wait_log(r"reload done", timeout=10), sd.stderr()[-2000:]
        # The taps outlive the reload: the reading ones keep getting events.
        assert wait_until(lambda: out_files[0].stat().st_size > before_hup + 10000, timeout=10)
        expected = [s for s in range(total) if s % 5 != 0]  # the rest filtered or errors
        assert wait_until(lambda: delivered(tmp_path) == len(expected), timeout=60), \
            delivered(tmp_path)
        text = scrape(url + "/metrics")
        dropped_stopped = metric(text, "seedance_tap_dropped_total", slot=slots[2])
        assert dropped_stopped and dropped_stopped > 0, text
        for slot in slots[:2]:
            assert metric(text, "seedance_tap_dropped_total", slot=slot) == 0, text
        # The pipeline delivered every event once, as without taps.
        seqs = sorted(json.loads(l)["payload"]["seq"] for l in
                      (tmp_path / "out.ndjson").read_text().splitlines())
        assert seqs == expected
        time.sleep(0.5)  # the reading taps drain their rings
        # A reading tap saw every event at the sink's input.
        sink_seqs = set()
        for line in out_files[0].read_text().splitlines():
            l = json.loads(line)
            if l.get("point") == "sink":
                sink_seqs.add(l["event"]["payload"]["seq"])
        assert sink_seqs == set(expected)
        # Resumed, the stopped client reads its backlog and is told what it lost.
        taps[2][0].send_signal(signal.SIGCONT)

        def told():
            for line in out_files[2].read_text().splitlines():
                if '"dropped"' in line:
                    return True
            return False
        assert wait_until(told, timeout=10)
    finally:
        for p, f in taps:
            p.send_signal(signal.SIGCONT)
            p.terminate()
            p.wait(5)
            f.close()
        assert sd.stop() == 0, sd.stderr()[-3000:]


def test_beyond_loopback_a_tap_needs_the_token(tmp_path):
    port = free_port()
    sd = Seedance(job(tmp_path, port, count=0, rate=100, listen="0.0.0.0")).start()
    try:
        code, _, err = tap(port, "--limit", "1")
        assert code == 2 and "HTTP 403" in err and "metrics.token" in err, err
        assert "seedance_events_in_total" in scrape(f"http://127.0.0.1:{port}/metrics")
    finally:
        assert sd.stop() == 0
    port = free_port()
    sd = Seedance(job(tmp_path, port, count=0, rate=100, listen="0.0.0.0",
                      token="s3cret")).start()
    try:
        code, _, err = tap(port, "--limit", "1", "--token", "wrong")
        assert code == 2 and "HTTP 401" in err, err
        code, lines, err = tap(port, "--limit", "1", "--token", "s3cret")
        assert code == 0 and len(events(lines)) == 1, err
        env = dict(os.environ, SEEDANCE_TOKEN="s3cret")
        code, lines, err = tap(port, "--limit", "1", env=env)
        assert code == 0 and len(events(lines)) == 1, err
        # /metrics stays open.
        assert "seedance_events_in_total" in scrape(f"http://127.0.0.1:{port}/metrics")
        # A reload that changes the token alone keeps the listener and applies the new token.
        with open(sd.config, "w") as f:
            f.write(job(tmp_path, port, count=0, rate=100, listen="0.0.0.0", token="n3w"))
        sd.proc.send_signal(signal.SIGHUP)
        assert sd.wait_log(r"reload done: metrics"), sd.stderr()[-2000:]
        code, _, err = tap(port, "--limit", "1", "--token", "s3cret")
        assert code == 2 and "HTTP 401" in err, err
        code, lines, err = tap(port, "--limit", "1", "--token", "n3w")
        assert code == 0 and len(events(lines)) == 1, err
    finally:
        assert sd.stop() == 0


def test_a_quiet_tap_gets_an_empty_line_every_5_s(tmp_path):
    """Nothing passes the point: the stream still says it is alive, so a client that went away
    is noticed (the write fails) and a listening one knows the server is there."""
    port = free_port()
    sd = Seedance(job(tmp_path, port, count=1, rate=0, delay="1h")).start()
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/tap", timeout=10) as r:
            assert json.loads(r.readline()) == {"tap": "open", "slot": 0}
            opened = time.time()
            blank = []
            while len(blank) < 2 and time.time() - opened < 15:
                line = r.readline()
                assert line.strip() == b"", line
                blank.append(time.time() - opened)
        assert 4.0 <= blank[0] <= 7.0 and 9.0 <= blank[1] <= 12.0, blank
    finally:
        assert sd.stop() == 0


def test_a_busy_tap_writes_at_most_every_50_ms(tmp_path):
    """A tap collects what passes and writes it at most every 50 ms (unless 64 KiB wait), so a
    tapped stream of 1,000 events/s costs about 20 writes and client wake-ups a second, not
    1,000."""
    port = free_port()
    sd = Seedance(job(tmp_path, port, count=0, rate=1000)).start()
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=10) as c:
            c.sendall(b"GET /tap?component=generate HTTP/1.1\r\nHost: x\r\n\r\n")
            c.settimeout(0.005)
            arrivals, data = [], b""
            began = time.time()
            while time.time() - began < 3.0:
                try:
                    got = c.recv(1 << 20)
                except socket.timeout:
                    continue
                if not got:
                    break
                if not arrivals or time.time() - arrivals[-1] > 0.005:  # a new write
                    arrivals.append(time.time())
                else:
                    arrivals[-1] = time.time()
                data += got
        events = data.count(b'"event"')
        assert events >= 2000, events
        # 3 s at most every 50 ms: 60 writes; more than 80 means they are not batched.
        assert len(arrivals) <= 80, len(arrivals)
    finally:
        assert sd.stop() == 0


def test_a_refused_or_bad_request_gets_a_clear_answer(tmp_path):
    port = free_port()
    sd = Seedance(job(tmp_path, port, count=0, rate=10)).start()
    try:
        for query, status in (("?sample=0", 400), ("?sample=x", 400), ("?bogus=1", 400),
                              ("?topic=%zz", 400)):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/tap{query}", timeout=5)
                raise AssertionError(query + " was accepted")
            except urllib.error.HTTPError as e:
                assert e.code == status, query
                assert e.read(), query
        req = urllib.request.Request(f"http://127.0.0.1:{port}/tap", method="POST", data=b"")
        try:
            urllib.request.urlopen(req, timeout=5)
            raise AssertionError("POST was accepted")
        except urllib.error.HTTPError as e:
            assert e.code == 405
    finally:
        assert sd.stop() == 0
