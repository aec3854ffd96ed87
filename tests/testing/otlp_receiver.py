"""An OTLP/HTTP receiver on loopback for the tests: it decodes each request with Debian's
python3-protobuf (otlp_proto.py), keeps it, and answers as it is told."""
import gzip
import http.server
import threading

from testing import otlp_proto


class OtlpReceiver:
    """Records each request (path, headers, decoded message) and answers from `answers`
    (status, content type, body) while any are left, then 200 with an empty response."""

    def __init__(self):
        self.requests = []
        self.answers = []
        self.lock = threading.Lock()
        outer = self

        class H(http.server.BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_POST(self):  # noqa: N802
                body = self.rfile.read(int(self.headers["Content-Length"]))
                if self.headers.get("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
                cls = (otlp_proto.ExportLogsServiceRequest if self.path.endswith("/logs")
                       else otlp_proto.ExportTraceServiceRequest
                       if self.path.endswith("/traces")
                       else otlp_proto.ExportMetricsServiceRequest)
                with outer.lock:
                    answer = outer.answers.pop(0) if outer.answers else None
                    outer.requests.append((self.path, dict(self.headers.items()),
                                           cls.FromString(body), answer))
                status, ctype, out = answer or (200, "application/x-protobuf", b"")
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(out)))
                if status == 503:
                    self.send_header("Retry-After", "0")
                self.end_headers()
                self.wfile.write(out)

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def records(self):
        """(resource attributes, scope, record) of every log record of every 200 answer."""
        out = []
        with self.lock:
            for _, _, msg, answer in self.requests:
                if answer is not None and answer[0] != 200:
                    continue
                for rl in getattr(msg, "resource_logs", []):
                    for sl in rl.scope_logs:
                        for r in sl.log_records:
                            out.append((otlp_proto.attributes(rl.resource.attributes), sl.scope,
                                        r))
        return out

    def stop(self):
        self.server.shutdown()

    def spans(self):
        """(resource attributes, scope, span) of every span of every 200 answer."""
        out = []
        with self.lock:
            for _, _, msg, answer in self.requests:
                if answer is not None and answer[0] != 200:
                    continue
                for rs in getattr(msg, "resource_spans", []):
                    for ss in rs.scope_spans:
                        for span in ss.spans:
                            out.append((otlp_proto.attributes(rs.resource.attributes), ss.scope,
                                        span))
        return out
