"""Runs the real seedance binary with a config written by the test."""
import datetime
import os
import re
import signal
import subprocess
import tempfile
import threading
import time
import urllib.request

BIN = os.environ.get("SEEDANCE_BIN", os.path.join(os.path.dirname(__file__), "..", "..", "build", "seedance"))
SOURCE_DIR = os.environ.get("SEEDANCE_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))


class Seedance:
    def __init__(self, config_text, filter_path=None, extra_args=(), workdir=None,
                 preexec_fn=None):
        self.preexec_fn = preexec_fn
        self.dir = workdir or tempfile.mkdtemp(prefix="seedance-run-")
        os.makedirs(self.dir, exist_ok=True)
        self.config = os.path.join(self.dir, "config.yaml")
        with open(self.config, "w") as f:
            f.write(config_text)
        self.args = [BIN, "--config", self.config]
        if filter_path:
            self.args += ["--filter", filter_path]
        self.args += list(extra_args)
        self.proc = None
        self.stderr_lines = []
        self._ready = threading.Event()

    def start(self, wait_ready=True, timeout=10.0):
        self.proc = subprocess.Popen(self.args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     cwd=self.dir, preexec_fn=self.preexec_fn)
        threading.Thread(target=self._pump, daemon=True).start()
        threading.Thread(target=self._drain_stdout, daemon=True).start()
        if wait_ready and not self._ready.wait(timeout):
            self.stop()
            raise RuntimeError("seedance not ready:\n" + self.stderr())
        return self

    def _pump(self):
        for raw in self.proc.stderr:
            line = raw.decode(errors="replace")
            self.stderr_lines.append(line)
            if " ready in " in line:
                self._ready.set()

    def _drain_stdout(self):
        self.stdout_lines = []
        for raw in self.proc.stdout:
            self.stdout_lines.append(raw.decode(errors="replace"))

    def stderr(self):
        return "".join(self.stderr_lines)

    def log_times(self, text):
        """When each log line containing `text` was written (seconds since the epoch, from the
        line's UTC timestamp): for checking a message's rate limit."""
        return [datetime.datetime.strptime(line.split(" ", 1)[0], "%Y-%m-%dT%H:%M:%S.%fZ")
                .replace(tzinfo=datetime.timezone.utc).timestamp()
                for line in list(self.stderr_lines) if text in line]

    def logged_at_most_every(self, text, seconds):
        """Whether the log lines containing `text` are at least `seconds` apart (0.1 s of slack
        for the log's millisecond timestamps); true for none or one."""
        times = self.log_times(text)
        return all(b - a >= seconds - 0.1 for a, b in zip(times, times[1:]))

    def wait_log(self, pattern, timeout=10.0):
        rx = re.compile(pattern)
        deadline = time.time() + timeout
        while time.time() < deadline:
            if any(rx.search(l) for l in list(self.stderr_lines)):
                return True
            time.sleep(0.02)
        return False

    def stop(self, sig=signal.SIGTERM, timeout=15.0):
        if self.proc is None or self.proc.poll() is not None:
            return self.proc.returncode if self.proc else None
        self.proc.send_signal(sig)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise

    def kill(self):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def validate(config_path, env=None):
    """`seedance validate --config config_path`: the finished process (at most 30 s)."""
    return subprocess.run([BIN, "validate", "--config", str(config_path)], capture_output=True,
                          text=True, timeout=30, env=env)


def scrape(url):
    with urllib.request.urlopen(url, timeout=5) as r:
        return r.read().decode()


def metric(text, name, **labels):
    """Sum of the samples of `name` whose labels include `labels`."""
    total = 0.0
    found = False
    for line in text.splitlines():
        if line.startswith("#") or not line.startswith(name):
            continue
        m = re.match(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$', line)
        if not m or m.group(1) != name:
            continue
        got = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(3) or ""))
        if all(got.get(k) == v for k, v in labels.items()):
            total += float(m.group(4))
            found = True
    return total if found else None


def seed_job_config(broker, receiver, more_sinks="", rest=""):
    """The reference job (examples/seed/config.yaml) on a test's broker and receiver: MQTT
    `sensor/+/temperature` -> HTTP POST to /v1/metrics. `more_sinks` (YAML list items, indented
    like the HTTP sink) follow it under `sinks:`; `rest` (top-level YAML) ends the file."""
    return f"""
sources:
  - type: mqtt
    uri: "{broker.uri}"
    topic: "sensor/+/temperature"
sinks:
  - type: http
    endpoint: "{receiver.url}/v1/metrics"
    method: POST
{more_sinks}{rest}"""
