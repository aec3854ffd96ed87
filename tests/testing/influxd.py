"""A real influxd (Debian's influxdb package, 1.6) on free loopback ports, with its own data
directory; /query helpers to read back what was written."""
import json
import os
import shutil
import subprocess
import tempfile
import urllib.parse
import urllib.request

from testing.ports import free_port
from testing.waiting import wait_answering

INFLUXD = shutil.which("influxd") or "/usr/bin/influxd"


class Influxd:
    def __init__(self, auth=False, admin=("admin", "admin-secret")):
        self.admin = admin if auth else None
        self.dir = tempfile.mkdtemp(prefix="seedance-influxd-")
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.conf = os.path.join(self.dir, "influxdb.conf")
        with open(self.conf, "w") as f:
            f.write(f"""reporting-disabled = true
bind-address = "127.0.0.1:{free_port()}"
[meta]
  dir = "{self.dir}/meta"
[data]
  dir = "{self.dir}/data"
  wal-dir = "{self.dir}/wal"
  query-log-enabled = false
[http]
  bind-address = "127.0.0.1:{self.port}"
  log-enabled = false
  auth-enabled = {"true" if auth else "false"}
[monitor]
  store-enabled = false
[continuous_queries]
  enabled = false
""")
        self.proc = None

    def start(self):
        self.log = open(os.path.join(self.dir, "influxd.log"), "w")
        self.proc = subprocess.Popen([INFLUXD, "-config", self.conf], stdout=self.log,
                                     stderr=subprocess.STDOUT)
        if wait_answering(self.url + "/ping", self.proc, 30, status=204):
            return self
        self.stop()
        raise RuntimeError(f"influxd did not start: {open(self.log.name).read()[-2000:]}")

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)

    def query(self, q, db=None):
        """The results of one InfluxQL statement: a list of series dicts."""
        params = {"q": q, "epoch": "ns"}
        if db:
            params["db"] = db
        # The first admin is made without credentials (what influxd allows while it has no
        # user); influxd reads u and p from the URL, not the form.
        url = self.url + "/query"
        if self.admin and not q.startswith(f"CREATE USER {self.admin[0]} "):
            url += "?" + urllib.parse.urlencode({"u": self.admin[0], "p": self.admin[1]})
        data = urllib.parse.urlencode(params).encode()
        with urllib.request.urlopen(url, data=data, timeout=30) as r:
            body = json.loads(r.read())
        result = body["results"][0]
        if "error" in result:
            raise RuntimeError(result["error"])
        return result.get("series", [])

    def rows(self, q, db):
        """Each row of the first series as a dict of column: value."""
        series = self.query(q, db)
        if not series:
            return []
        cols = series[0]["columns"]
        return [dict(zip(cols, v)) for v in series[0]["values"]]
