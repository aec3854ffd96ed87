"""The http source (issue 19) with a real HTTP client (urllib) and a real receiver: JSON, arrays
and NDJSON in; 200 only once every event is stored (a kill -9 loses none of them); 503 with
Retry-After and nothing taken when the pipeline is full; auth, size and path refusals; a bad
body answered 400 and kept in the error output."""
import json
import socket
import threading
import time
import urllib.error
import urllib.request

from testing.ports import free_port
from testing.ndjson import complete_lines
from testing.seedance_process import Seedance, validate
from testing.waiting import wait_until

TOKEN = "s3cret-token"


def config(port, receiver_url, tmp_path, source_extra="", extra=""):
    return f"""
sources:
  - type: http
    listen: 127.0.0.1:{port}
    bearer_token: "{TOKEN}"
{source_extra}
sinks:
  - type: http
    endpoint: "{receiver_url}/in"
    encoding: envelope
    retry_initial: 20ms
    retry_max: 200ms
  - type: file
    name: errors
    path: {tmp_path / "errors.ndjson"}
    inputs: [error]
{extra}
"""


def post(port, path, body, token=TOKEN, content_type="application/json", method="POST",
         headers=None):
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=body, method=method,
                                 headers={"Content-Type": content_type, **(headers or {})})
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, r.read().decode(), dict(r.headers)
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(), dict(e.headers)


def test_a_requests_trace_context_goes_on_each_of_its_events(receiver, tmp_path):
    """docs/http-source.md: traceparent and tracestate (at most 512 characters) become the
    events' headers of the same name (docs/otlp.md, trace context end to end)."""
    parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
    port = free_port()
    sd = Seedance(config(port, receiver.url, tmp_path)).start()
    try:
        assert post(port, "/t/a", b'[{"n": 1}, {"n": 2}]',
                    headers={"traceparent": parent, "tracestate": "ro=1"})[0] == 200
        assert post(port, "/t/b", b'{"n": 3}',
                    headers={"traceparent": parent, "tracestate": "x" * 513})[0] == 200
        assert post(port, "/t/c", b'{"n": 4}')[0] == 200
        assert wait_until(lambda: len(receiver.accepted_events()) == 4, 10)
    finally:
        assert sd.stop() == 0
    headers = {e["payload"]["n"]: e.get("headers", {}) for e in receiver.accepted_events()}
    for n in (1, 2):
        assert headers[n]["traceparent"] == parent and headers[n]["tracestate"] == "ro=1"
    assert headers[3]["traceparent"] == parent and "tracestate" not in headers[3]
    assert "traceparent" not in headers[4]


def test_objects_arrays_and_ndjson_arrive_with_the_path_as_topic(receiver, tmp_path):
    port = free_port()
    sd = Seedance(config(port, receiver.url, tmp_path)).start()
    try:
        assert post(port, "/site/a", b'{"n": 1}')[:2] == (200, '{"accepted":1}\n')
        assert post(port, "/site/b", b'[{"n": 2}, {"n": 3}]')[:2] == (200, '{"accepted":2}\n')
        assert post(port, "/site/c", b'{"n": 4}\n{"n": 5}\n',
                    content_type="application/x-ndjson")[:2] == (200, '{"accepted":2}\n')
        assert receiver.wait_for_events(5, timeout=10)
        by_n = {e["payload"]["n"]: e for e in receiver.accepted_events()}
        assert sorted(by_n) == [1, 2, 3, 4, 5]
        topics = {n: e.get("topic") for n, e in by_n.items()}
        assert topics == {1: "site/a", 2: "site/b", 3: "site/b", 4: "site/c", 5: "site/c"}, topics
    finally:
        assert sd.stop() == 0, sd.stderr()[-2000:]


def test_refusals_say_why_and_a_bad_body_is_kept_in_the_error_output(receiver, tmp_path):
    port = free_port()
    sd = Seedance(config(port, receiver.url, tmp_path,
                         source_extra="    max_body: 1KiB\n    max_events: 3\n")).start()
    try:
        status, body, headers = post(port, "/x", b'{"n": 1}', token=None)
        assert status == 401 and headers.get("WWW-Authenticate") == "Bearer", (status, body)
        assert post(port, "/x", b'{"n": 1}', token="wrong-token")[0] == 401
        assert post(port, "/x", b'{"n": 1}', method="PUT")[0] == 405
        assert post(port, "/x", b'{"pad": "' + b"x" * 2000 + b'"}')[0] == 413
        big_header = urllib.request.Request(f"http://127.0.0.1:{port}/x", data=b'{"n": 1}',
                                            headers={"Authorization": f"Bearer {TOKEN}",
                                                     "X-Pad": "h" * 20000})
        try:
            urllib.request.urlopen(big_header, timeout=10)
            raise AssertionError("a 20 KB header was taken")
        except urllib.error.HTTPError as e:
            assert e.code == 413 and "header larger than 16 KiB" in e.read().decode()
        status, body, _ = post(port, "/x", b"[1, 2, 3, 4]")
        assert status == 413 and "more than 3 events" in body, body
        status, body, _ = post(port, "/x", b'{"n": 1, "broken": }')
        assert status == 400 and "invalid JSON at offset" in json.loads(body)["error"], body
        errors = tmp_path / "errors.ndjson"
        assert wait_until(lambda: errors.exists() and len(complete_lines(errors)) == 1, 10)
        line = complete_lines(errors)[0]
        assert "invalid JSON at offset" in line["headers"]["reason"], line
        assert "broken" in json.dumps(line), line
        assert post(port, "/x", b'{"n": 9}')[0] == 200  # the connection and source carry on
        assert receiver.wait_for_events(1, timeout=10)
        assert len(receiver.accepted_events()) == 1
    finally:
        assert sd.stop() == 0, sd.stderr()[-2000:]


def test_a_413_reaches_a_client_still_sending_and_the_close_is_bounded(receiver, tmp_path):
    """The answer to a body over max_body goes out before the body is read: the server half-
    closes and discards what the client still sends (lingering close), so the client reads its
    413 instead of a reset; and it closes within kLingerTime (2 s) however long the client goes
    on sending."""
    port = free_port()
    sd = Seedance(config(port, receiver.url, tmp_path, source_extra="    max_body: 1KiB\n")).start()
    try:
        head = (f"POST /x HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}\r\n"
                f"Content-Type: application/json\r\nContent-Length: 50000000\r\n\r\n").encode()
        chunk = b"x" * 65536
        for _ in range(3):
            with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
                s.sendall(head)
                try:
                    for _ in range(4):  # 256 KiB the server has not read when it answers
                        s.sendall(chunk)
                except OSError:
                    pass
                answer = b""
                while b"\r\n\r\n" not in answer:
                    data = s.recv(4096)
                    if not data:
                        break
                    answer += data
                assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
                assert b"body larger than max_body" in answer or b"\r\n\r\n" in answer
        # A client that never stops sending is cut off after the linger time.
        with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
            s.sendall(head)
            started = time.monotonic()
            cut_off = False
            while time.monotonic() - started < 8:
                try:
                    s.sendall(chunk)
                except OSError:
                    cut_off = True
                    break
                time.sleep(0.01)
            assert cut_off, "the server kept reading a refused body for 8 s"
            assert time.monotonic() - started < 4.5
    finally:
        assert sd.stop() == 0, sd.stderr()[-2000:]


def test_paths_restrict_and_name_topics(receiver, tmp_path):
    port = free_port()
    sd = Seedance(config(port, receiver.url, tmp_path,
                         source_extra='    paths: {"/v1/telemetry": "telemetry"}\n')).start()
    try:
        assert post(port, "/v1/other", b'{"n": 1}')[0] == 404
        assert post(port, "/v1/telemetry?x=1", b'{"n": 2}')[0] == 200
        assert receiver.wait_for_events(1, timeout=10)
        assert receiver.accepted_events()[0].get("topic") == "telemetry"
    finally:
        assert sd.stop() == 0, sd.stderr()[-2000:]


def test_a_full_pipeline_answers_503_and_takes_nothing_of_that_request(receiver, tmp_path):
    """The sink is down and the queue small. First requests are taken but cannot be stored
    (the queue is full): 503 after ack_timeout, "send them again" (they may still arrive: at
    least once). Then the pipeline is full: 503 with Retry-After at once, and nothing of such a
    request is taken. Every request answered 200 is delivered once the sink is back."""
    port = free_port()
    receiver.fail_next(100000, 503)
    sd = Seedance(config(port, receiver.url, tmp_path,
                         source_extra="    ack_timeout: 1s\n",
                         extra="pipeline:\n  queue_capacity: 20\nqueue:\n  max_disk: 64KiB\n"
                               "  segment_size: 16KiB\n  when_full: block\n")).start()
    accepted, full, not_stored = [], [], []
    try:
        for i in range(400):
            body = json.dumps([{"req": i, "k": k, "pad": "p" * 100} for k in range(5)]).encode()
            t0 = time.time()
            status, text, headers = post(port, "/load", body)
            if status == 200:
                accepted.append(i)
                continue
            assert status == 503 and headers.get("Retry-After") == "1", (status, headers)
            if "nothing of this request was taken" in text:
                assert time.time() - t0 < 0.5, "a full pipeline must answer at once"
                full.append(i)
                if len(full) >= 3:
                    break
            else:
                assert "send them again" in text, text
                assert 0.9 < time.time() - t0 < 5, "answered before or long after ack_timeout"
                not_stored.append(i)
        assert full, f"the pipeline never filled up ({len(accepted)} taken, {len(not_stored)} unstored)"
        with receiver.lock:
            receiver.fail_queue.clear()
        want = {(i, k) for i in accepted for k in range(5)}
        assert wait_until(lambda: want <= {(e["payload"]["req"], e["payload"]["k"])
                                           for e in receiver.accepted_events()}, 30)
        time.sleep(1.0)  # whatever else was taken has arrived too
        got = {e["payload"]["req"] for e in receiver.accepted_events()}
        assert not got & set(full), "parts of a request answered 'nothing taken' were delivered"
    finally:
        sd.stop()


def test_a_kill_9_loses_no_event_of_a_request_answered_200(receiver, tmp_path):
    """100,000 events in 1,000 NDJSON requests; Seedance is killed with SIGKILL half way and
    started again while the client keeps sending (a request that got no answer is sent
    again). Every event of every request answered 200 is delivered."""
    port = free_port()
    work = str(tmp_path / "run")
    text = config(port, receiver.url, tmp_path)
    sd = Seedance(text, workdir=work).start()
    requests, per_request = 1000, 100
    answered = []

    def client():
        for i in range(requests):
            body = "".join(json.dumps({"req": i, "k": k}) + "\n"
                           for k in range(per_request)).encode()
            deadline = time.time() + 60
            while time.time() < deadline:
                try:
                    status, _, _ = post(port, "/load", body, content_type="application/x-ndjson")
                except OSError:
                    time.sleep(0.05)  # down: send it again once it is back
                    continue
                if status == 200:
                    answered.append(i)
                    break
                time.sleep(0.05)

    t = threading.Thread(target=client)
    t.start()
    try:
        assert wait_until(lambda: len(answered) >= requests // 2, 60), "no progress"
        sd.kill()
        killed_at = len(answered)
        sd = Seedance(text, workdir=work).start()
        t.join(180)
        assert len(answered) == requests, f"{len(answered)} of {requests} answered"
        want = {(i, k) for i in range(requests) for k in range(per_request)}
        assert wait_until(lambda: want <= {(e["payload"]["req"], e["payload"]["k"])
                                           for e in receiver.accepted_events()}, 120), \
            f"{len(want)} answered events, delivered {len(receiver.accepted_events())}"
        print(f"{requests * per_request} events, kill -9 after {killed_at} requests answered: "
              f"all delivered, {len(receiver.accepted_events()) - len(want)} twice")
    finally:
        sd.stop()


def test_pipelined_requests_are_answered_in_order(receiver, tmp_path):
    """Two requests in one write (HTTP/1.1 pipelining): two answers, in order, each for its
    own request."""
    import socket
    port = free_port()
    sd = Seedance(config(port, receiver.url, tmp_path)).start()
    try:
        def request(body):
            return (f"POST /p HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}\r\n"
                    f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
                    ).encode() + body
        with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
            s.sendall(request(b'[{"n": 1}, {"n": 2}]') + request(b'{"n": 3'))
            data = b""
            while data.count(b"HTTP/1.1 ") < 2 or not data.endswith(b"}\n"):
                chunk = s.recv(4096)
                if not chunk:
                    break
                data += chunk
        first, second = data.split(b"HTTP/1.1 ")[1:3]
        assert first.startswith(b"200") and b'{"accepted":2}' in first, data
        assert second.startswith(b"400") and b"invalid JSON" in second, data
        assert receiver.wait_for_events(2, timeout=10)
    finally:
        assert sd.stop() == 0, sd.stderr()[-2000:]


def test_validate_names_a_bad_listen_address_with_its_line(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("sources:\n  - type: http\n    listen: \"abc\"\nsinks:\n  - type: stdout\n")
    r = validate(path)
    assert r.returncode == 2
    assert f"{path}:3:13: sources[0].listen: expected host:port" in r.stderr, r.stderr


def test_gzip_and_zstd_bodies_are_inflated_within_max_body(receiver, tmp_path):
    import gzip
    port = free_port()
    sd = Seedance(config(port, receiver.url, tmp_path, source_extra="    max_body: 64KiB\n")).start()
    try:
        def post_gzip(data, coding="gzip"):
            req = urllib.request.Request(
                f"http://127.0.0.1:{port}/z", data=data, method="POST",
                headers={"Content-Type": "application/x-ndjson", "Content-Encoding": coding,
                         "Authorization": f"Bearer {TOKEN}"})
            try:
                with urllib.request.urlopen(req, timeout=30) as r:
                    return r.status, r.read().decode()
            except urllib.error.HTTPError as e:
                return e.code, e.read().decode()

        lines = "".join(json.dumps({"n": i}) + "\n" for i in range(100)).encode()
        assert post_gzip(gzip.compress(lines)) == (200, '{"accepted":100}\n')
        bomb = gzip.compress(b" " * (10 << 20))  # 10 MiB of spaces in ~10 KiB
        assert len(bomb) < 64 * 1024
        status, body = post_gzip(bomb)
        assert status == 413 and "inflates to more than" in body, (status, body)
        assert post_gzip(b"not gzip at all")[0] == 400
        assert post_gzip(gzip.compress(lines), coding="br")[0] == 415
        import subprocess
        zstd = subprocess.run(["zstd", "-q", "-c"], input=lines, capture_output=True, check=True)
        assert post_gzip(zstd.stdout, coding="zstd") == (200, '{"accepted":100}\n')
        zbomb = subprocess.run(["zstd", "-q", "-c"], input=b" " * (10 << 20), capture_output=True,
                               check=True).stdout
        assert post_gzip(zbomb, coding="zstd")[0] == 413
        assert receiver.wait_for_events(200, timeout=10)
        assert sorted(e["payload"]["n"] for e in receiver.accepted_events()) == \
            sorted(list(range(100)) * 2)
        assert sd.proc.poll() is None
    finally:
        assert sd.stop() == 0, sd.stderr()[-2000:]


def test_basic_auth(receiver, tmp_path):
    import base64
    port = free_port()
    text = config(port, receiver.url, tmp_path).replace(
        f'    bearer_token: "{TOKEN}"\n',
        "    basic_auth:\n      user: device\n      password: pa55\n")
    sd = Seedance(text).start()
    try:
        def post_basic(user, password):
            cred = base64.b64encode(f"{user}:{password}".encode()).decode()
            req = urllib.request.Request(f"http://127.0.0.1:{port}/b", data=b'{"n": 1}',
                                         method="POST",
                                         headers={"Authorization": f"Basic {cred}"})
            try:
                with urllib.request.urlopen(req, timeout=10) as r:
                    return r.status, dict(r.headers)
            except urllib.error.HTTPError as e:
                return e.code, dict(e.headers)

        status, headers = post_basic("device", "wrong")
        assert status == 401 and headers["WWW-Authenticate"].startswith("Basic"), headers
        assert post_basic("device", "pa55")[0] == 200
        assert post(port, "/b", b'{"n": 2}', token=None)[0] == 401
    finally:
        assert sd.stop() == 0, sd.stderr()[-2000:]


def test_tls_and_client_certificates(receiver, tmp_path):
    import ssl
    from testing.certs import make_certs, make_client_cert
    certs = tmp_path / "certs"
    certs.mkdir()
    make_certs(certs)
    make_client_cert(certs)
    port = free_port()
    text = config(port, receiver.url, tmp_path, source_extra=(
        f"    tls:\n      cert_file: {certs}/server.crt\n      key_file: {certs}/server.key\n"
        f"      client_ca_file: {certs}/ca.crt\n"))
    sd = Seedance(text).start()
    try:
        def post_tls(client_cert):
            ctx = ssl.create_default_context(cafile=str(certs / "ca.crt"))
            if client_cert:
                ctx.load_cert_chain(str(certs / "client.crt"), str(certs / "client.key"))
            req = urllib.request.Request(f"https://127.0.0.1:{port}/t", data=b'{"n": 1}',
                                         method="POST",
                                         headers={"Authorization": f"Bearer {TOKEN}"})
            with urllib.request.urlopen(req, timeout=10, context=ctx) as r:
                return r.status

        assert post_tls(client_cert=True) == 200
        for attempt in (lambda: post_tls(client_cert=False),  # no client certificate
                        lambda: post(port, "/t", b'{"n": 2}')):  # plain HTTP
            try:
                attempt()
                raise AssertionError("a connection without a trusted certificate was served")
            except (ssl.SSLError, urllib.error.URLError, ConnectionError, OSError) as e:
                assert not isinstance(e, AssertionError)
        assert sd.wait_log(r"refused a TLS connection"), sd.stderr()
        assert receiver.wait_for_events(1, timeout=10)
        time.sleep(0.3)
        assert len(receiver.accepted_events()) == 1
        # Two handshakes refused within a second, logged once per 10 s (docs/http-source.md).
        assert len(sd.log_times("refused a TLS connection")) == 1, sd.stderr()[-2000:]
    finally:
        assert sd.stop() == 0, sd.stderr()[-2000:]


def test_validate_names_a_missing_certificate_file(tmp_path):
    path = tmp_path / "tls.yaml"
    path.write_text("sources:\n  - type: http\n    listen: 127.0.0.1:8443\n    tls:\n"
                    "      cert_file: /nonexistent/server.crt\n      key_file: /nonexistent/k\n"
                    "sinks:\n  - type: stdout\n")
    r = validate(path)
    assert r.returncode == 2
    assert "/nonexistent/server.crt: No such file or directory" in r.stderr, r.stderr
    assert f"{path}:5:" in r.stderr, r.stderr


def test_connection_cap_idle_timeout_metrics_and_the_memory_buffer(receiver, tmp_path):
    """max_connections: a new client is served at once, the connection idle longest closed for
    it (tests/integration/test_listener_connection_caps.py); idle_timeout closes the other
    silent one; requests, bytes and events are counted; with
    queue.buffer: memory the answer comes once the pipeline took the events."""
    import socket
    from testing.seedance_process import metric, scrape
    port, metrics_port = free_port(), free_port()
    sd = Seedance(config(port, receiver.url, tmp_path,
                         source_extra="    max_connections: 2\n    idle_timeout: 1s\n",
                         extra=f"queue:\n  buffer: memory\nmetrics:\n  listen: 127.0.0.1:{metrics_port}\n")
                  ).start()
    try:
        idle = [socket.create_connection(("127.0.0.1", port), timeout=5) for _ in range(2)]
        t0 = time.time()
        status, _, _ = post(port, "/m", b'{"n": 1}')  # the silent one idle longest makes room
        waited = time.time() - t0
        assert status == 200
        assert waited < 0.7, f"served after {waited:.2f} s"
        for s in idle:
            s.settimeout(3)
            assert s.recv(1) == b"", "an idle connection was not closed"
            s.close()
        text = scrape(f"http://127.0.0.1:{metrics_port}/metrics")
        assert metric(text, "seedance_http_source_requests_total", status="200") == 1
        assert metric(text, "seedance_http_source_bytes_total") == len(b'{"n": 1}')
        assert metric(text, "seedance_events_in_total", component="http", kind="source") == 1
        assert receiver.wait_for_events(1, timeout=10)
    finally:
        assert sd.stop() == 0, sd.stderr()[-2000:]
