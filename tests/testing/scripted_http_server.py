"""A misbehaving HTTP/1.1 server on 127.0.0.1 for sink tests: each request is answered with
raw bytes a test scripts (interim 100 responses, extra unsolicited responses, 413s, delays),
which no well-behaved server library would send.

`policy(index, body)` returns a list of steps, each bytes to send or a float to sleep; the
first final (non-1xx) status among the bytes is what the server *means*: its events count as
accepted only when that status is 2xx. Keep-alive connections; Content-Length bodies only.
"""
import json
import socket
import threading
import time


def response(status, reason="X", headers=(), body=b""):
    head = f"HTTP/1.1 {status} {reason}\r\nContent-Length: {len(body)}\r\n"
    for name, value in headers:
        head += f"{name}: {value}\r\n"
    return head.encode() + b"\r\n" + body


def events_of(body):
    """Decodes a JSON array or NDJSON body into a list of events."""
    text = body.decode()
    if text.startswith("["):
        return json.loads(text)
    return [json.loads(line) for line in text.splitlines() if line.strip()]


class ScriptedServer:
    def __init__(self, policy):
        self.policy = policy
        self.lock = threading.Lock()
        self.requests = []   # (index, body, meant status)
        self.accepted = []   # events whose request the server meant to accept
        self.connections = 0
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.stopping = False
        self.thread = threading.Thread(target=self._accept, daemon=True)

    def start(self):
        self.thread.start()
        return self

    def stop(self):
        self.stopping = True
        self.thread.join(5)
        self.sock.close()

    def _accept(self):
        while not self.stopping:
            try:
                conn, _ = self.sock.accept()
            except socket.timeout:
                continue
            with self.lock:
                self.connections += 1
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn):
        conn.settimeout(30)
        buf = b""
        try:
            while not self.stopping:
                while b"\r\n\r\n" not in buf:
                    chunk = conn.recv(65536)
                    if not chunk:
                        return
                    buf += chunk
                head, buf = buf.split(b"\r\n\r\n", 1)
                length = 0
                for line in head.split(b"\r\n")[1:]:
                    name, _, value = line.partition(b":")
                    if name.strip().lower() == b"content-length":
                        length = int(value.strip())
                while len(buf) < length:
                    chunk = conn.recv(65536)
                    if not chunk:
                        return
                    buf += chunk
                body, buf = buf[:length], buf[length:]
                with self.lock:
                    index = len(self.requests)
                steps = self.policy(index, body)
                meant = None
                for step in steps:
                    if isinstance(step, bytes) and meant is None:
                        status = int(step.split(b" ", 2)[1])
                        if status >= 200:
                            meant = status
                with self.lock:
                    self.requests.append((index, body, meant))
                    if meant is not None and 200 <= meant < 300:
                        self.accepted.extend(events_of(body))
                for step in steps:
                    if isinstance(step, bytes):
                        conn.sendall(step)
                    else:
                        time.sleep(step)
        except OSError:
            pass
        finally:
            conn.close()

    def accepted_seqs(self):
        with self.lock:
            return sorted(e["seq"] for e in self.accepted)
