"""A real HTTP receiver on 127.0.0.1 for tests and the demo.

It records every request body and answers according to a programmable policy: a status for
the next N requests, a status for bodies matching a predicate, a service delay. Events are
decoded from JSON-array, NDJSON or single-object bodies.

Run standalone (the demo): python3 -m testing.http_receiver --port 8080 [--out FILE]
"""
import argparse
import gzip
import json
import ssl
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Receiver:
    def __init__(self, host="127.0.0.1", port=0, out=None, quiet=True, tls_dir=None, slots=None,
                 service_s=0.0):
        self.lock = threading.Lock()
        self.requests = []          # (path, content_type, body bytes, status answered)
        self.request_headers = []   # the header fields of each of those, in the same order
        self.fail_queue = []        # statuses to answer next, in order
        self.reject = None          # predicate(body bytes) -> status or None
        self.delay_s = 0.0
        self.retry_after = None
        self.out = out
        self.quiet = quiet
        # A server with `slots` service slots of `service_s` each, queueing beyond (benchmarks).
        self.slots = threading.Semaphore(slots) if slots else None
        self.service_s = service_s
        self.latencies = []  # (time answered, seconds from request to answer), with slots
        # Benchmarks: count events without decoding (bodies must hold "sent_ns"), and
        # optionally collect end-to-end latencies from that stamp.
        self.count_only = False
        self.collect_latency = False
        self.counted = 0
        self.posts = 0  # requests answered 200 in count_only mode
        self.last_at = 0.0
        self.e2e_ns = []
        self.wire_bytes = 0  # request bytes as sent (compressed or not)
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # Headers and body go out in two writes; without this, Nagle + delayed ACK add
            # ~40 ms to every keep-alive request.
            disable_nagle_algorithm = True

            def log_message(self, *args):  # noqa: N802 - stdlib name
                if not receiver.quiet:
                    super().log_message(*args)

            def do_POST(self):  # noqa: N802
                length = int(self.headers.get("Content-Length", "0"))
                body = self.rfile.read(length)
                with receiver.lock:
                    receiver.wire_bytes += length
                body = decode_content(body, self.headers.get("Content-Encoding"))
                if receiver.slots is not None:
                    t0 = time.perf_counter()
                    with receiver.slots:
                        time.sleep(receiver.service_s)
                    with receiver.lock:
                        receiver.latencies.append((time.perf_counter(), time.perf_counter() - t0))
                if receiver.delay_s:
                    time.sleep(receiver.delay_s)
                status = receiver._decide(body)
                if receiver.count_only and status == 200:
                    now_ns = time.time_ns()
                    with receiver.lock:
                        receiver.counted += body.count(b'"sent_ns"')
                        receiver.posts += 1
                        receiver.last_at = time.perf_counter()
                        if receiver.collect_latency:
                            receiver.e2e_ns.extend(now_ns - e["sent_ns"] for e in decode_events(body))
                    reply = b"ok\n"
                    self.send_response(200)
                    self.send_header("Content-Length", str(len(reply)))
                    self.end_headers()
                    self.wfile.write(reply)
                    return
                with receiver.lock:
                    receiver.requests.append((self.path, self.headers.get("Content-Type"), body, status))
                    receiver.request_headers.append(list(self.headers.items()))
                if status == 200 and receiver.out is not None:
                    for e in decode_events(body):
                        receiver.out.write(json.dumps(e) + "\n")
                    receiver.out.flush()
                reply = b"ok\n" if status < 300 else b"refused\n"
                self.send_response(status)
                if status in (429, 503) and receiver.retry_after is not None:
                    self.send_header("Retry-After", str(receiver.retry_after))
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            do_PUT = do_POST

        class Server(ThreadingHTTPServer):
            def handle_error(self, request, client_address):
                if isinstance(sys.exc_info()[1], ConnectionError):
                    return  # the client went away (tests kill seedance on purpose)
                super().handle_error(request, client_address)

        self.server = Server((host, port), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        if tls_dir is not None:  # https with the certificate made by testing.certs
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(f"{tls_dir}/server.crt", f"{tls_dir}/server.key")
            self.server.socket = ctx.wrap_socket(self.server.socket, server_side=True)
            self.url = f"https://localhost:{self.port}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def _decide(self, body):
        with self.lock:
            if self.fail_queue:
                return self.fail_queue.pop(0)
        if self.reject is not None:
            status = self.reject(body)
            if status:
                return status
        return 200

    def start(self):
        self.thread.start()
        return self

    def stop(self):
        self.server.shutdown()
        self.server.server_close()

    def fail_next(self, n, status=503):
        with self.lock:
            self.fail_queue.extend([status] * n)

    def accepted_bodies(self):
        with self.lock:
            return [b for (_, _, b, s) in self.requests if s == 200]

    def accepted_events(self):
        out = []
        for b in self.accepted_bodies():
            out.extend(decode_events(b))
        return out

    def count(self, status=None):
        with self.lock:
            return sum(1 for r in self.requests if status is None or r[3] == status)

    def wait_for_events(self, n, timeout=30.0):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if len(self.accepted_events()) >= n:
                return True
            time.sleep(0.05)
        return False


def decode_content(body, encoding):
    """The body with its Content-Encoding (gzip, zstd) undone."""
    if encoding in (None, "", "identity"):
        return body
    if encoding == "gzip":
        return gzip.decompress(body)
    if encoding == "zstd":
        import zstandard  # python3-zstandard (scripts/setup)
        return zstandard.ZstdDecompressor().decompressobj().decompress(body)
    raise ValueError(f"unknown Content-Encoding {encoding}")


def decode_events(body):
    text = body.decode("utf-8", errors="replace").strip()
    if not text:
        return []
    if text.startswith("["):
        return json.loads(text)
    if "\n" in text:
        return [json.loads(line) for line in text.splitlines() if line.strip()]
    return [json.loads(text)]


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--port", type=int, default=8080)
    ap.add_argument("--out", help="append received events to this file (default stdout)")
    args = ap.parse_args()
    out = open(args.out, "a") if args.out else sys.stdout
    r = Receiver(port=args.port, out=out, quiet=True).start()
    print(f"receiver listening on {r.url}", file=sys.stderr, flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        r.stop()


if __name__ == "__main__":
    main()
