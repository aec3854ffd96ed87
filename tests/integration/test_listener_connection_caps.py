"""Connections held open and silent delay nobody (issue 50, findings 4 and 5): the http source
and the metrics listener close the connection idle longest when a new client needs room, and
bound the connections of one client address. Real sockets on 127.0.0.1 and 127.0.0.2 (the
whole of 127/8 is loopback on Linux). Before: 1,000 idle connections held a good request for
44.5 s at idle_timeout 3 s, and /healthz was unreachable for up to 30 s."""
import resource
import socket
import time

from testing.ports import free_port
from testing.seedance_process import Seedance, metric, scrape
from testing.waiting import wait_until

IDLE = 1000


def raise_fd_limit(n):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < n:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(n, hard), hard))


def hold_idle(port, count):
    held = []
    for _ in range(count):
        held.append(socket.create_connection(("127.0.0.1", port), timeout=5))
    return held


def request(port, raw, source="127.0.0.1", timeout=5.0):
    """Sends `raw` from `source`; the answer's status line, and the seconds it took."""
    t0 = time.time()
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout, source_address=(source, 0))
    try:
        s.sendall(raw)
        data = b""
        while b"\r\n" not in data:
            chunk = s.recv(4096)
            if not chunk:
                break
            data += chunk
        return data.split(b"\r\n")[0].decode(), time.time() - t0
    finally:
        s.close()


def post_raw(body):
    return (b"POST /m HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            + f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode() + body)


def source_job(port, metrics_port, tmp_path, extra=""):
    return f"""
sources:
  - type: http
    listen: 127.0.0.1:{port}
{extra}
sinks:
  - type: file
    path: {tmp_path}/out.ndjson
queue:
  data_dir: {tmp_path}/data
metrics:
  listen: 127.0.0.1:{metrics_port}
"""


def test_idle_connections_held_by_one_client_do_not_delay_the_http_source(tmp_path):
    raise_fd_limit(IDLE + 256)
    port, metrics_port = free_port(), free_port()
    sd = Seedance(source_job(port, metrics_port, tmp_path)).start()  # idle_timeout 30 s
    held = []
    try:
        assert sd.wait_log("listening on"), sd.stderr()
        held = hold_idle(port, IDLE)
        for source in ("127.0.0.2", "127.0.0.1"):  # another client, and the same one
            status, took = request(port, post_raw(b'{"n": 1}'), source=source, timeout=10)
            assert status == "HTTP/1.1 200 OK", (source, status)
            assert took < 3.0, f"served after {took:.1f} s from {source}"
        text = scrape(f"http://127.0.0.1:{metrics_port}/metrics")
        shed = metric(text, "seedance_connections_shed_total", component="http", reason="idle")
        assert shed >= IDLE - 32, shed  # 32 per client: the rest made room by closing idle ones
        # What one client holds is bounded: at most max_connections_per_client are open.
        open_fds = len([1 for s in held if _still_open(s)])
        assert open_fds <= 33, open_fds
    finally:
        for s in held:
            s.close()
        assert sd.stop() == 0, sd.stderr()[-3000:]


def _still_open(sock):
    sock.setblocking(False)
    try:
        return sock.recv(1) != b""
    except BlockingIOError:
        return True
    except OSError:
        return False


def test_a_client_at_its_share_with_every_connection_busy_is_refused_others_are_served(tmp_path):
    port, metrics_port = free_port(), free_port()
    sd = Seedance(source_job(port, metrics_port, tmp_path,
                             "    max_connections_per_client: 2\n    idle_timeout: 20s\n")).start()
    busy = []
    try:
        assert sd.wait_log("listening on"), sd.stderr()
        for _ in range(2):  # a whole header, then a body that does not come: busy, not idle
            s = socket.create_connection(("127.0.0.1", port), timeout=5)
            s.sendall(b"POST /m HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n")
            busy.append(s)
        time.sleep(0.3)
        refused = socket.create_connection(("127.0.0.1", port), timeout=5)
        refused.settimeout(3)
        refused.sendall(post_raw(b'{"n": 1}'))
        try:
            got = refused.recv(100)
        except ConnectionResetError:
            got = b""
        assert got == b"", f"a third connection from the same address was served: {got!r}"
        refused.close()
        status, _ = request(port, post_raw(b'{"n": 2}'), source="127.0.0.2")
        assert status == "HTTP/1.1 200 OK", status
        assert sd.wait_log("refused a connection from 127.0.0.1"), sd.stderr()
        text = scrape(f"http://127.0.0.1:{metrics_port}/metrics")
        assert metric(text, "seedance_connections_shed_total", component="http",
                      reason="client_limit") == 1
    finally:
        for s in busy:
            s.close()
        assert sd.stop() == 0, sd.stderr()[-3000:]


def test_idle_connections_do_not_keep_healthz_from_a_supervisor(tmp_path):
    port, metrics_port = free_port(), free_port()
    sd = Seedance(source_job(port, metrics_port, tmp_path)).start()
    held = []
    try:
        assert sd.wait_log("listening on"), sd.stderr()
        held = hold_idle(metrics_port, 64)  # 16 served at most, 8 per client: all idle
        time.sleep(0.3)
        for source in ("127.0.0.2", "127.0.0.1"):
            status, took = request(metrics_port, b"GET /healthz HTTP/1.1\r\nHost: x\r\n"
                                                 b"Connection: close\r\n\r\n", source=source)
            assert status == "HTTP/1.1 200 OK", (source, status)
            assert took < 2.0, f"/healthz answered after {took:.1f} s from {source}"
        text = scrape(f"http://127.0.0.1:{metrics_port}/metrics")
        assert metric(text, "seedance_connections_shed_total", component="metrics",
                      reason="idle") >= 64 - 8
    finally:
        for s in held:
            s.close()
        assert sd.stop() == 0, sd.stderr()[-3000:]
