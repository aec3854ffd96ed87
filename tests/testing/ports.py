"""Loopback ports for tests that must name a port before a process listens on it.

Asking the kernel for a free port (bind to 0, close) and binding it later is a race: the
kernel may hand the same port to the next such call in this process (CI saw a test's
metrics listener and HTTP source get one port), to another test running beside it, or to
any outgoing connection, since those ports come from the same ephemeral range.

So a port here is (the C++ tests do the same, in tests/testing/loopback_port.cc)
- drawn below the kernel's ephemeral range, where outgoing connections never take one;
- never handed out twice by this process;
- reserved against the other test processes on this machine by an flock on a file named
  after it, held until this process exits (the kernel drops it even after kill -9);
- bindable on 127.0.0.1 at the moment it is handed out.
"""
import fcntl
import os
import random
import socket
import time

_LOWEST = 10000
# The same folder as loopback_port.cc: $TMPDIR, else /tmp.
_LOCK_DIR = os.path.join(os.environ.get("TMPDIR") or "/tmp", "seedance-test-ports")
_handed_out = set()
_locks = []  # open lock files: their flocks last as long as this process


def _ephemeral_low():
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def _bindable(port):
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
            return True
        except OSError:
            return False


def _reserve(port):
    """The port's lock file, locked by this process; None if another process holds it, or if
    the lock folder cannot be written (one another user made)."""
    try:  # a folder another user made, without write access for us: no reservation
        os.makedirs(_LOCK_DIR, exist_ok=True)
        f = open(os.path.join(_LOCK_DIR, str(port)), "w")
    except OSError:
        return None
    try:
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return f
    except OSError:
        f.close()
        return None


def _kernel_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def free_port():
    """A loopback port nobody listens on, that no other caller of this function gets."""
    high = _ephemeral_low()
    if high - _LOWEST >= 1000:
        for _ in range(1000):  # bounded: each try is one bind
            port = random.randrange(_LOWEST, high)
            if port in _handed_out:
                continue
            lock = _reserve(port)
            if lock is None:
                continue
            if not _bindable(port):
                lock.close()
                continue
            _locks.append(lock)
            _handed_out.add(port)
            return port
    # No room below the ephemeral range on this machine, or no port could be reserved (an
    # unwritable lock folder): fall back to the kernel's pick, still never the same port twice
    # in this process.
    for _ in range(1000):
        port = _kernel_port()
        if port not in _handed_out:
            _handed_out.add(port)
            return port
    raise RuntimeError("no free loopback port after 1000 tries")


def wait_port(port, timeout=10.0):
    """True once something accepts connections on the loopback port, False after timeout."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return True
        except OSError:
            time.sleep(0.02)
    return False
