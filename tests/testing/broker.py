"""A real mosquitto broker on a free loopback port, with its own config and log."""
import os
import shutil
import subprocess
import tempfile

from testing.ports import free_port, wait_port


# Debian installs the broker in /usr/sbin, which is not on every PATH.
MOSQUITTO = shutil.which("mosquitto") or "/usr/sbin/mosquitto"


class Broker:
    """mosquitto with `extra` config lines; log_type all so PUBACKs are visible in the log."""

    def __init__(self, extra="", port=None, log_all=False):
        self.dir = tempfile.mkdtemp(prefix="seedance-broker-")
        self.port = port or free_port()
        self.log = os.path.join(self.dir, "mosquitto.log")
        self.conf = os.path.join(self.dir, "mosquitto.conf")
        with open(self.conf, "w") as f:
            f.write(f"listener {self.port} 127.0.0.1\n")
            if os.geteuid() == 0:
                f.write("user root\n")  # keep access to our temp dir (log, certs)
            if "allow_anonymous" not in extra and "password_file" not in extra:
                f.write("allow_anonymous true\n")
            f.write("persistence false\n")
            f.write("max_queued_messages 100000\n")
            f.write(f"log_dest file {self.log}\n")
            f.write("log_type all\n" if log_all else "log_type error\nlog_type warning\nlog_type notice\n")
            f.write(extra)
        self.proc = None

    @property
    def uri(self):
        return f"tcp://127.0.0.1:{self.port}"

    def start(self):
        self.proc = subprocess.Popen([MOSQUITTO, "-c", self.conf],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        if not wait_port(self.port):
            err = self.proc.stderr.read().decode() if self.proc.poll() is not None else ""
            raise RuntimeError(f"mosquitto did not start on {self.port}: {err}")
        return self

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def log_text(self):
        try:
            with open(self.log) as f:
                return f.read()
        except FileNotFoundError:
            return ""
