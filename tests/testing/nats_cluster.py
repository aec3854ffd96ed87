"""A real 3-node nats-server cluster (Debian's nats-server) with JetStream, on free loopback
ports, each node with its own store; nodes can be killed with SIGKILL and restarted. The
stream is counted with tests/tools/nats_stream_count (built next to the seedance binary)."""
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time

from testing.ports import free_port, wait_port
from testing.seedance_process import BIN

NATS_SERVER = shutil.which("nats-server") or "/usr/bin/nats-server"
STREAM_COUNT = os.path.join(os.path.dirname(BIN), "nats_stream_count")


class NatsCluster:
    def __init__(self, nodes=3, extra=""):
        self.dir = tempfile.mkdtemp(prefix="seedance-nats-")
        self.ports = [free_port() for _ in range(nodes)]
        self.route_ports = [free_port() for _ in range(nodes)]
        self.procs = [None] * nodes
        routes = ", ".join(f"nats-route://127.0.0.1:{p}" for p in self.route_ports)
        self.confs = []
        for i in range(nodes):
            conf = os.path.join(self.dir, f"n{i}.conf")
            with open(conf, "w") as f:
                f.write(f"""server_name: n{i}
listen: 127.0.0.1:{self.ports[i]}
jetstream {{ store_dir: "{self.dir}/store{i}" }}
{extra}
""")
                if nodes > 1:
                    f.write(f"cluster {{ name: seedance-test, listen: 127.0.0.1:"
                            f"{self.route_ports[i]}, routes: [{routes}] }}\n")
            self.confs.append(conf)

    @property
    def urls(self):
        return [f"nats://127.0.0.1:{p}" for p in self.ports]

    def start_node(self, i):
        log = open(os.path.join(self.dir, f"n{i}.log"), "a")
        self.procs[i] = subprocess.Popen([NATS_SERVER, "-c", self.confs[i]], stdout=log,
                                         stderr=subprocess.STDOUT)
        if not wait_port(self.ports[i], 15):
            raise RuntimeError(f"nats-server n{i} did not start: {self.log(i)[-2000:]}")

    def start(self):
        for i in range(len(self.procs)):
            self.start_node(i)
        # A cluster's JetStream needs a meta leader before a stream can be made.
        ready = "new metadata leader" if len(self.procs) > 1 else "Server is ready"
        deadline = time.time() + 30
        while time.time() < deadline:
            if any(ready in self.log(i) for i in range(len(self.procs))):
                return self
            time.sleep(0.1)
        raise RuntimeError("no JetStream meta leader: " + self.log(0)[-2000:])

    def kill_node(self, i):
        self.procs[i].send_signal(signal.SIGKILL)
        self.procs[i].wait()

    def log(self, i):
        with open(os.path.join(self.dir, f"n{i}.log"), errors="replace") as f:
            return f.read()

    def stop(self):
        for p in self.procs:
            if p and p.poll() is None:
                p.terminate()
                try:
                    p.wait(10)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
        shutil.rmtree(self.dir, ignore_errors=True)

    def count(self, stream, subject, node=0, timeout=60, info_only=False, url=None):
        """{"stream_msgs", "consumed", "unique", "repeats"} of the stream, read by a consumer
        (`info_only`: the stream's message count alone, nothing consumed)."""
        out = subprocess.run([STREAM_COUNT, url or self.urls[node], stream, subject, str(timeout)] +
                             (["info"] if info_only else []),
                             capture_output=True, text=True, timeout=timeout + 30)
        if out.returncode != 0:
            raise RuntimeError(out.stderr)
        return json.loads(out.stdout)
