"""What tracing: costs: the http_in job (http source -> file sink) with tracing off, on with no event traced, and on with every event traced (a sampled traceparent on each request), its spans exported to an OTLP/HTTP receiver on loopback."""
import http.server
import json
import statistics
import sys
import threading
import os

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
from testing import otlp_proto  # noqa: E402

import http_in  # noqa: E402

ROUNDS = 3
TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


class Receiver:
    """Answers 200 at once and keeps the bodies; they are decoded after the run, so the
    receiver's Python does not compete with Seedance for the CPU while it is measured."""

    def __init__(self):
        self.bodies = []
        outer = self

        class H(http.server.BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_POST(self):  # noqa: N802
                outer.bodies.append(self.rfile.read(int(self.headers["Content-Length"])))
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1/traces"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def spans(self):
        return sum(len(ss.spans)
                   for b in self.bodies
                   for rs in otlp_proto.ExportTraceServiceRequest.FromString(b).resource_spans
                   for ss in rs.scope_spans)

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


def main():
    bodies = http_in.make_bodies()
    med = statistics.median
    out = {"benchmark": "tracing",
           "job": "the http_in job: http source -> file sink, durable queue (fsync 100ms); "
                  f"{http_in.CLIENTS} keep-alive clients posting NDJSON requests of "
                  f"{http_in.PER_REQUEST} events",
           "events": http_in.N, "rounds": ROUNDS}
    cases = [("off", None, None), ("on_none_traced", "sample_ratio: 0", None),
             ("on_all_traced", "sample_ratio: 0", {"traceparent": TRACEPARENT})]
    for name, tracing, headers in cases:
        runs, spans = [], []
        for _ in range(ROUNDS):
            receiver = Receiver()
            extra = f"tracing:\n  url: {receiver.url}\n  {tracing}\n" if tracing else ""
            try:
                runs.append(http_in.run_once(bodies, extra, headers))
            finally:
                receiver.stop()
            spans.append(receiver.spans())
        out[name] = {"delivered_eps": round(med(r[0] for r in runs)),
                     "cpu_s_per_100k": round(med(r[2] for r in runs), 3),
                     "request_p50_ms": round(med(r[3] for r in runs), 2)}
        if headers:
            # A process span and a deliver span per event; what did not arrive was dropped.
            out[name]["spans_exported_per_event"] = round(med(spans) / http_in.N, 3)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
