"""The tests' port picker (tests/testing/ports.py). CI once gave a test's metrics listener and
its HTTP source the same port from two calls in a row, and seedance refused to start. These
check each promise the picker makes, against real sockets and a real second process."""
import os
import socket
import subprocess
import sys

import testing.ports as ports
from testing.ports import free_port

TESTS_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def first_draw_is(monkeypatch, port):
    """Make the picker's first random draw `port`; later draws are random again."""
    real = ports.random.randrange
    script = [port]
    monkeypatch.setattr(ports.random, "randrange", lambda lo, hi: script.pop() if script else real(lo, hi))


def test_many_calls_never_give_one_port_twice_and_each_is_bindable_below_the_ephemeral_range():
    got = [free_port() for _ in range(200)]
    assert len(set(got)) == len(got)
    low = ports._ephemeral_low()
    for port in got:
        assert ports._LOWEST <= port < low
        with socket.socket() as s:
            s.bind(("127.0.0.1", port))


def test_a_port_another_test_process_holds_is_not_handed_out(monkeypatch):
    child = subprocess.Popen(
        [sys.executable, "-c",
         "import sys; from testing.ports import free_port; print(free_port(), flush=True); sys.stdin.read()"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": TESTS_DIR})
    try:
        held = int(child.stdout.readline())
        first_draw_is(monkeypatch, held)
        assert free_port() != held
    finally:
        child.stdin.close()
        child.wait(timeout=10)


def test_a_port_something_listens_on_is_not_handed_out(monkeypatch):
    busy = free_port()
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", busy))
        listener.listen()
        ports._handed_out.discard(busy)  # as if a process outside the tests took it
        for lock in [lk for lk in ports._locks if lk.name.endswith(f"/{busy}")]:
            ports._locks.remove(lock)
            lock.close()
        first_draw_is(monkeypatch, busy)
        assert free_port() != busy
