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
