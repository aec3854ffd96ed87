"""Samples a process's RSS in the background (for memory-bound assertions in tests)."""
import threading
import time


def status_kb(pid, field):
    """A kB figure of /proc/PID/status, e.g. VmRSS or VmHWM (the peak); 0 once it is gone."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except FileNotFoundError:
        pass
    return 0


def rss_kb(pid):
    return status_kb(pid, "VmRSS")


class RssSampler:
    def __init__(self, pid, every=0.05):
        self.pid, self.every, self.max_kb = pid, every, 0
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self._stop.is_set():
            self.max_kb = max(self.max_kb, rss_kb(self.pid))
            time.sleep(self.every)

    def __enter__(self):
        self._t.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._t.join()
