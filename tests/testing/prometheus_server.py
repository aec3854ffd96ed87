"""A real Prometheus (Debian's prometheus package, 2.42) on a free loopback port with its own
data folder and its remote-write receiver on; optionally an out-of-order window. Stops and
starts again on the same data (an outage); query helpers read back what was written."""
import json
import os
import shutil
import subprocess
import tempfile
import urllib.parse
import urllib.request

from testing.ports import free_port
from testing.waiting import wait_answering

PROMETHEUS = shutil.which("prometheus") or "/usr/bin/prometheus"
NODE_EXPORTER = shutil.which("prometheus-node-exporter") or "/usr/bin/prometheus-node-exporter"


class Prometheus:
    def __init__(self, out_of_order_window=None):
        self.dir = tempfile.mkdtemp(prefix="seedance-prometheus-")
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.write_url = self.url + "/api/v1/write"
        self.conf = os.path.join(self.dir, "prometheus.yml")
        with open(self.conf, "w") as f:
            f.write("global:\n  scrape_interval: 1m\n")  # it scrapes nothing: writes only
            if out_of_order_window:
                f.write(f"storage:\n  tsdb:\n    out_of_order_time_window: {out_of_order_window}\n")
        self.proc = None
        self.log_path = os.path.join(self.dir, "prometheus.log")

    def start(self):
        log = open(self.log_path, "a")
        self.proc = subprocess.Popen(
            [PROMETHEUS, f"--config.file={self.conf}", f"--storage.tsdb.path={self.dir}/data",
             f"--web.listen-address=127.0.0.1:{self.port}", "--web.enable-remote-write-receiver",
             "--log.level=warn"],
            stdout=log, stderr=subprocess.STDOUT)
        log.close()
        if wait_answering(self.url + "/-/ready", self.proc, 60):
            return self
        self.stop()
        raise RuntimeError(f"prometheus did not start: {self.log()[-2000:]}")

    def stop(self):
        """Stops the server, keeping its data (start() again: an outage)."""
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def remove(self):
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)

    def log(self):
        with open(self.log_path, errors="replace") as f:
            return f.read()

    def api(self, path, **params):
        url = f"{self.url}/api/v1/{path}?" + urllib.parse.urlencode(params)
        with urllib.request.urlopen(url, timeout=10) as r:
            body = json.load(r)
        assert body["status"] == "success", body
        return body["data"]

    def raw_samples(self, selector, at, window="1h"):
        """{frozenset(labels): [(t_ms, value), ...]}: every sample of `selector` within `window`
        before `at` (seconds), as written (a range vector, not evaluated steps)."""
        data = self.api("query", query=f"{selector}[{window}]", time=f"{at:.3f}")
        out = {}
        for series in data["result"]:
            key = frozenset(series["metric"].items())
            out[key] = [(round(float(t) * 1000), float(v)) for t, v in series["values"]]
        return out


class NodeExporter:
    """Debian's prometheus-node-exporter on a free loopback port, a few collectors on."""

    def __init__(self):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/metrics"
        self.proc = None

    def start(self):
        self.proc = subprocess.Popen(
            [NODE_EXPORTER, f"--web.listen-address=127.0.0.1:{self.port}",
             "--collector.disable-defaults", "--collector.loadavg", "--collector.meminfo",
             "--collector.time", "--collector.stat", "--log.level=warn"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if wait_answering(self.url, self.proc, 30):
            return self
        self.stop()
        raise RuntimeError("prometheus-node-exporter did not start")

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=10)
