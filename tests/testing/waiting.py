"""Waiting on a condition with a deadline (never sleep and hope)."""
import time


def wait_until(pred, timeout, step=0.05):
    """Polls `pred` every `step` seconds until it is true (returns True) or `timeout` passes."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        if pred():
            return True
        time.sleep(step)
    return False


def wait_answering(url, proc, timeout, status=200):
    """Polls `url` until it answers `status` (True), the process `proc` ends or `timeout`
    passes (False): a server started by a test is up."""
    import urllib.request
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=0.5) as r:
                if r.status == status:
                    return True
        except OSError:
            time.sleep(0.1)
        if proc.poll() is not None:
            return False
    return False
