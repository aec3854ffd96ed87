"""A TCP proxy in front of a nats-server that can lose PubAcks: what a connection that drops
after the server has stored a message does to the publisher, without the drop. It reads the
server's side of the NATS protocol (INFO, MSG, HMSG, PING, PONG, +OK, -ERR lines) and leaves out
the next `n` messages to an _INBOX subject (JetStream's PubAcks and API replies) once
`drop_acks(n)` is called; everything else passes, byte for byte, both ways."""
import socket
import threading

from testing.ports import free_port

_PREFIX = b"_INBOX."


def _shut(*sockets):
    """Ends both directions of each (the other side then reads its end)."""
    for s in sockets:
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


class NatsAckDropper:
    def __init__(self, server_port):
        self.server_port = server_port
        self.port = free_port()
        self._listener = socket.create_server(("127.0.0.1", self.port))
        self._lock = threading.Lock()
        self._to_drop = 0
        self.dropped = 0
        self._sockets = []
        self._stopped = False
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def url(self):
        return f"nats://127.0.0.1:{self.port}"

    def drop_acks(self, n):
        with self._lock:
            self._to_drop += n

    def stop(self):
        self._stopped = True
        self._listener.close()
        for s in list(self._sockets):
            try:
                s.close()
            except OSError:
                pass

    def _accept(self):
        while not self._stopped:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            server = socket.create_connection(("127.0.0.1", self.server_port), timeout=5)
            server.settimeout(None)
            self._sockets += [client, server]
            threading.Thread(target=self._pipe, args=(client, server), daemon=True).start()
            threading.Thread(target=self._from_server, args=(server, client), daemon=True).start()

    @staticmethod
    def _pipe(src, dst):
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        _shut(src, dst)

    def _drop(self, subject):
        if not subject.startswith(_PREFIX):
            return False
        with self._lock:
            if self._to_drop == 0:
                return False
            self._to_drop -= 1
            self.dropped += 1
            return True

    def _from_server(self, server, client):
        buf = b""
        try:
            while data := server.recv(65536):
                buf += data
                out = []
                while (end := buf.find(b"\r\n")) >= 0:
                    line = buf[:end]
                    words = line.split()
                    op = words[0].upper() if words else b""
                    if op in (b"MSG", b"HMSG"):
                        total = int(words[-1])  # MSG subj sid [reply] n; HMSG ... hdr n
                        frame = end + 2 + total + 2
                        if len(buf) < frame:
                            break  # the payload is still to come
                        if not self._drop(words[1]):
                            out.append(buf[:frame])
                        buf = buf[frame:]
                    else:
                        out.append(buf[:end + 2])
                        buf = buf[end + 2:]
                if out:
                    client.sendall(b"".join(out))
        except OSError:
            pass
        _shut(server, client)
