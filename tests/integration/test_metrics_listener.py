"""The metrics listener against hostile local clients (issue 13, finding 12): idle
connections cannot take the descriptors the durable queue needs, nor spin the accept loop;
large bodies are refused without buffering them; HEAD has no body; a silent client is
disconnected after the idle limit (10 s, src/observe/http_listener.h)."""
import json
import os
import resource
import socket
import time

from testing.ports import free_port
from testing.process_stats import rss_kb
from testing.seedance_process import Seedance, scrape
from testing.waiting import wait_until


def low_fd_limit():
    resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def job(tmp_path, port, count, rate):
    return f"""
sources:
  - type: generate
    count: {count}
    rate: {rate}
sinks:
  - type: file
    path: {tmp_path}/out.ndjson
queue:
  data_dir: {tmp_path}/data
  segment_size: 16KiB
metrics:
  listen: "127.0.0.1:{port}"
"""


def lines(path):
    return path.read_text().splitlines() if path.exists() else []


def test_idle_connections_cannot_starve_the_queue_or_spin(tmp_path):
    port = free_port()
    out = tmp_path / "out.ndjson"
    sd = Seedance(job(tmp_path, port, count=3000, rate=500), preexec_fn=low_fd_limit).start()
    clients = []
    try:
        for _ in range(128):  # twice the process's descriptor limit
            c = socket.create_connection(("127.0.0.1", port), timeout=5)
            clients.append(c)
        # Many small queue segments are opened while the connections are held.
        assert wait_until(lambda: len(lines(out)) == 3000, timeout=30), sd.stderr()[-3000:]
        seqs = sorted(json.loads(l)["payload"]["seq"] for l in lines(out))
        assert seqs == list(range(3000))
        before = cpu_seconds(sd.proc.pid)
        time.sleep(2.0)
        used = cpu_seconds(sd.proc.pid) - before
        assert used < 0.2, f"{used:.2f} s of CPU in 2 s with idle clients: the accept loop spins"
    finally:
        for c in clients:
            c.close()
        assert sd.stop() == 0, sd.stderr()[-3000:]
    # With the clients gone the listener answers again.


def test_large_bodies_are_refused_without_being_buffered(tmp_path):
    port = free_port()
    sd = Seedance(job(tmp_path, port, count=1, rate=1)).start()
    try:
        base = rss_kb(sd.proc.pid)
        body = b"x" * (1 << 20)
        for _ in range(100):
            c = socket.create_connection(("127.0.0.1", port), timeout=5)
            try:
                c.sendall(b"POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n"
                          % len(body))
                try:
                    c.sendall(body)
                except OSError:
                    pass  # closed on us after the 413: that is the point
                answer = c.recv(200)
                assert answer.startswith(b"HTTP/1.1 413"), answer
            finally:
                c.close()
        # Beast 1.74 reserved an announced length before checking the limit: this one threw
        # bad_alloc and ended the process.
        c = socket.create_connection(("127.0.0.1", port), timeout=5)
        c.sendall(b"POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 66666666666666666\r\n\r\n")
        assert c.recv(200).startswith(b"HTTP/1.1 413")
        c.close()
        assert sd.proc.poll() is None, "the process died"
        grown_mb = (rss_kb(sd.proc.pid) - base) / 1024
        assert grown_mb < 16, f"RSS grew {grown_mb:.1f} MB for 100 refused 1 MiB bodies"
        assert b"seedance_" in scrape(f"http://127.0.0.1:{port}/metrics").encode()
    finally:
        assert sd.stop() == 0, sd.stderr()[-3000:]


def read_response(c, buf):
    """One response (header and Content-Length body, unless `head`) off a raw socket."""
    while b"\r\n\r\n" not in buf:
        chunk = c.recv(65536)
        assert chunk, "connection closed"
        buf += chunk
    head, rest = buf.split(b"\r\n\r\n", 1)
    return head, rest


def test_head_has_no_body_and_a_silent_client_is_disconnected(tmp_path):
    port = free_port()
    sd = Seedance(job(tmp_path, port, count=1, rate=1)).start()
    try:
        c = socket.create_connection(("127.0.0.1", port), timeout=5)
        c.sendall(b"HEAD /healthz HTTP/1.1\r\nHost: x\r\n\r\nGET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        head, rest = read_response(c, b"")
        assert head.startswith(b"HTTP/1.1 200") and b"Content-Length: 3" in head, head
        # The next bytes are the GET's response, not a body for the HEAD.
        head2, rest2 = read_response(c, rest)
        assert head2.startswith(b"HTTP/1.1 200"), (head, rest)
        while len(rest2) < 3:
            rest2 += c.recv(100)
        assert rest2 == b"ok\n"
        c.close()

        silent = socket.create_connection(("127.0.0.1", port), timeout=20)
        t0 = time.time()
        assert silent.recv(100) == b""  # closed by the server
        waited = time.time() - t0
        assert 8 < waited < 15, waited
        silent.close()
    finally:
        assert sd.stop() == 0, sd.stderr()[-3000:]


def http_get(sock, path="/healthz"):
    sock.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode())


def test_at_most_16_connections_the_idle_one_goes_and_busy_ones_make_the_next_wait(tmp_path):
    port = free_port()
    sd = Seedance(job(tmp_path, port, count=10, rate=100)).start()
    held = []
    try:
        # 16 (kMaxListenerConnections) busy from 8 addresses, 2 each (8 per client at most): a
        # request header begun and never ended is idle, so each sends a whole header of a
        # request whose body never comes.
        for i in range(16):
            s = socket.create_connection(("127.0.0.1", port), timeout=5,
                                         source_address=(f"127.0.0.{2 + i // 2}", 0))
            s.sendall(b"POST /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n")
            held.append(s)
        time.sleep(0.3)
        extra = socket.create_connection(("127.0.0.1", port), timeout=5)  # the kernel's backlog
        http_get(extra)
        extra.settimeout(1.0)
        try:
            got = extra.recv(100)
        except socket.timeout:
            got = b""
        assert got == b"", f"a 17th connection was served: {got!r}"
        held.pop().close()  # a slot frees: the waiting connection is accepted and answered
        extra.settimeout(5.0)
        assert extra.recv(100).startswith(b"HTTP/1.1 200"), "not served once a slot was free"
        extra.close()
    finally:
        for c in held:
            c.close()
        assert sd.stop() == 0, sd.stderr()[-3000:]


def test_accept_failures_pause_the_listener_and_are_logged_once(tmp_path):
    port = free_port()
    sd = Seedance(job(tmp_path, port, count=10, rate=100)).start()
    clients = []
    try:
        time.sleep(0.5)  # the job is done: its descriptors stay as they are
        in_use = len(os.listdir(f"/proc/{sd.proc.pid}/fd"))
        soft, hard = resource.prlimit(sd.proc.pid, resource.RLIMIT_NOFILE)
        resource.prlimit(sd.proc.pid, resource.RLIMIT_NOFILE, (in_use + 3, hard))
        for _ in range(10):  # 3 are accepted, then accept() fails with EMFILE
            clients.append(socket.create_connection(("127.0.0.1", port), timeout=5))
        before = cpu_seconds(sd.proc.pid)
        time.sleep(2.0)
        used = cpu_seconds(sd.proc.pid) - before
        assert used < 0.2, f"{used:.2f} s of CPU in 2 s: the accept loop spins on EMFILE"
        warnings = [l for l in sd.stderr_lines if "cannot accept a connection" in l]
        assert len(warnings) == 1, warnings  # 20 failed attempts, one line (at most one a minute)
        assert "Too many open files; pausing 100 ms" in warnings[0], warnings[0]
        for c in clients:
            c.close()
        clients = []
        resource.prlimit(sd.proc.pid, resource.RLIMIT_NOFILE, (soft, hard))
        assert wait_until(lambda: scrape(f"http://127.0.0.1:{port}/healthz") == "ok\n", 5)
    finally:
        for c in clients:
            c.close()
        assert sd.stop() == 0, sd.stderr()[-3000:]
