"""A scripted MQTT broker on 127.0.0.1 that misbehaves on purpose (tests of the MQTT source
against brokers that send what mosquitto never would): each connection is answered by
`script(conn_index, client)`, which reads and writes raw packets through `client`.
Every packet the client sends is recorded per connection."""
import socket
import struct
import threading
import time


def varint(n):
    out = b""
    while True:
        b = n % 128
        n //= 128
        out += bytes([b | (0x80 if n else 0)])
        if not n:
            return out


def packet(first_byte, body):
    return bytes([first_byte]) + varint(len(body)) + body


def connack(v5, session_present=False):
    flags = b"\x01" if session_present else b"\x00"
    return packet(0x20, flags + (b"\x00\x00" if v5 else b"\x00"))


def suback(packet_id, code, v5):
    return packet(0x90, struct.pack(">H", packet_id) + (b"\x00" if v5 else b"") + bytes([code]))


def publish(topic, payload, qos=1, packet_id=1, v5=False, props=b"", dup=False):
    body = struct.pack(">H", len(topic)) + topic
    if qos:
        body += struct.pack(">H", packet_id)
    if v5:
        body += varint(len(props)) + props
    return packet(0x30 | (0x08 if dup else 0) | (qos << 1), body + payload)


class Client:
    """One connection as the script sees it."""

    def __init__(self, sock, record):
        self.sock = sock
        self.record = record  # list of (first_byte, body)
        self.buf = b""

    def read_packet(self, timeout=5.0):
        self.sock.settimeout(timeout)
        while True:
            if len(self.buf) >= 2:
                length, mult, i = 0, 1, 1
                while i < len(self.buf) and i <= 4:
                    b = self.buf[i]
                    length += (b & 0x7F) * mult
                    mult *= 128
                    i += 1
                    if not b & 0x80:
                        if len(self.buf) >= i + length:
                            first, body = self.buf[0], self.buf[i:i + length]
                            self.buf = self.buf[i + length:]
                            self.record.append((first, body))
                            return first, body
                        break
            chunk = self.sock.recv(65536)
            if not chunk:
                return None
            self.buf += chunk

    def send(self, data):
        self.sock.sendall(data)

    def drain(self, seconds):
        """Records whatever the client sends for `seconds` (or until it closes)."""
        deadline = time.time() + seconds
        while time.time() < deadline:
            try:
                if self.read_packet(timeout=max(0.01, deadline - time.time())) is None:
                    return
            except (socket.timeout, OSError):
                return


class FakeBroker:
    def __init__(self, script):
        self.script = script
        self.lock = threading.Lock()
        self.connections = []  # per connection: list of (first_byte, body) the client sent
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.uri = f"tcp://127.0.0.1:{self.port}"
        self.stopping = False
        self.thread = threading.Thread(target=self._accept, daemon=True)

    def start(self):
        self.thread.start()
        return self

    def stop(self):
        self.stopping = True
        self.thread.join(5)
        self.sock.close()

    def connection_count(self):
        with self.lock:
            return len(self.connections)

    def received(self, first_byte_type):
        """Bodies of every packet of a type (high nibble) the client sent, over all connections."""
        with self.lock:
            return [body for conn in self.connections for first, body in conn
                    if first >> 4 == first_byte_type]

    def _accept(self):
        while not self.stopping:
            try:
                conn, _ = self.sock.accept()
            except socket.timeout:
                continue
            record = []
            with self.lock:
                index = len(self.connections)
                self.connections.append(record)
            threading.Thread(target=self._serve, args=(index, conn, record), daemon=True).start()

    def _serve(self, index, conn, record):
        client = Client(conn, record)
        try:
            if client.read_packet() is not None:  # CONNECT
                self.script(index, client)
        except OSError:
            pass
        finally:
            conn.close()
