"""HTTP pushes into windows with an idempotency key (issue 40): a client that retries a request
whose answer it never got (the process was killed with SIGKILL between the commit and the
answer) is answered 200 and its readings are not counted twice; the same key with another
body is refused (422), a second request with a key still in flight gets 409. Without a key
the guarantee is at least once, and the test shows it: the retry is counted again.
Real process kills, a real HTTP client."""
import json
import threading
import time
import urllib.error
import urllib.request

from testing.ports import free_port
from testing.seedance_process import Seedance
from testing.waiting import wait_until
from testing.windows import BASE_MS, PROCESSORS, file_sink, final_windows



def job(port, tmp_path):
    return f"""
sources:
  - type: http
    listen: 127.0.0.1:{port}
""" + PROCESSORS + file_sink(tmp_path / "windows.ndjson") + f"""
queue:
  data_dir: {tmp_path}/data
"""


def post(port, body, key=None, timeout=30):
    headers = {"Content-Type": "application/x-ndjson"}
    if key is not None:
        headers["Idempotency-Key"] = key
    req = urllib.request.Request(f"http://127.0.0.1:{port}/meter", data=body, method="POST",
                                 headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def readings(device, n, first=0):
    return "".join(json.dumps({"device": device, "ts": BASE_MS + first + i, "v": 1}) + "\n"
                   for i in range(n)).encode()


FLUSH = (json.dumps({"device": "flush", "ts": BASE_MS + 3_600_000, "v": 0}) + "\n").encode()


def counts(tmp_path):
    """Count per device (each test's readings fall in one window per device)."""
    return {k[0]: w["count"] for k, w in final_windows(tmp_path / "windows.ndjson").items()}


def start(port, tmp_path):
    return Seedance(job(port, tmp_path), workdir=str(tmp_path)).start()


def test_a_retry_after_a_kill_is_counted_once_with_a_key_and_twice_without(tmp_path,
                                                                           monkeypatch):
    port = free_port()
    state = {}

    def killed_before_the_answer(body, key):
        """Sends `body`; the process is killed after the commit, before the answer (the
        acknowledgements are held back 3 s after it); returns once it is running again."""
        monkeypatch.setenv("SEEDANCE_TEST_ACK_DELAY_MS", "3000")
        sd = start(port, tmp_path)
        answer = {}

        def send():
            try:
                answer["r"] = post(port, body, key)
            except OSError as e:  # the process died before answering
                answer["r"] = ("died", str(e))
        t = threading.Thread(target=send)
        t.start()
        time.sleep(1.0)  # committed; the answer waits out the ack delay
        sd.kill()
        t.join(10)
        assert answer["r"][0] == "died", answer
        monkeypatch.delenv("SEEDANCE_TEST_ACK_DELAY_MS")
        state["sd"] = start(port, tmp_path)

    keyed, unkeyed = readings("keyed", 10), readings("unkeyed", 10)
    try:
        killed_before_the_answer(keyed, "k-1")
        # The client sends again what it never heard an answer to.
        status, text = post(port, keyed, "k-1")
        assert status == 200 and json.loads(text) == {"accepted": 10, "repeat": True}, text
        assert state["sd"].wait_log("already stored; answered 200, not processed again")
        # And again: answered the same, logged once per 10 s (docs/http-source.md).
        status, text = post(port, keyed, "k-1")
        assert status == 200 and json.loads(text) == {"accepted": 10, "repeat": True}, text
        assert len(state["sd"].log_times("already stored; answered 200")) == 1, \
            state["sd"].stderr()[-3000:]
        state["sd"].stop()
        killed_before_the_answer(unkeyed, None)
        assert post(port, unkeyed)[0] == 200
        assert post(port, keyed, "k-1")[0] == 200  # later, after another restart: remembered
        assert post(port, FLUSH)[0] == 200
        assert wait_until(lambda: len(counts(tmp_path)) == 2, 15), state["sd"].stderr()[-3000:]
        time.sleep(0.5)
        assert counts(tmp_path) == {"keyed": 10, "unkeyed": 20}, counts(tmp_path)
    finally:
        if "sd" in state:
            state["sd"].stop()


def test_a_key_is_refused_for_another_body_too_long_or_while_in_flight(tmp_path, monkeypatch):
    monkeypatch.setenv("SEEDANCE_TEST_ACK_DELAY_MS", "1500")
    port = free_port()
    sd = start(port, tmp_path)
    try:
        assert post(port, readings("a", 3), "k-2")[0] == 200
        status, text = post(port, readings("a", 4), "k-2")
        assert status == 422 and "different request body" in text, (status, text)
        status, text = post(port, readings("a", 1), "k" * 256)
        assert status == 400 and "longer than 255 bytes" in text, (status, text)
        # A second request with a key whose first is still waiting for its acknowledgement.
        first = {}
        t = threading.Thread(target=lambda: first.update(r=post(port, readings("b", 2), "k-3")))
        t.start()
        time.sleep(0.5)
        status, text = post(port, readings("b", 2), "k-3")
        assert status == 409 and "still being processed" in text, (status, text)
        t.join(10)
        assert first["r"][0] == 200
        assert post(port, readings("b", 2), "k-3")[0] == 200  # now a repeat
        monkeypatch.delenv("SEEDANCE_TEST_ACK_DELAY_MS")
        assert post(port, FLUSH)[0] == 200
        assert wait_until(lambda: counts(tmp_path) == {"a": 3, "b": 2}, 15), counts(tmp_path)
    finally:
        sd.stop()
