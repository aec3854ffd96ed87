"""NATS NKeys for tests: a user key pair as nats-server and the NATS clients read it (Ed25519;
the seed and the public key are base32 of a prefix, the key bytes and a CRC-16/XMODEM,
little-endian, without padding). python3-cryptography does the Ed25519."""
import base64
import os

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

_PREFIX_SEED = 18 << 3  # 'S'
_PREFIX_USER = 20 << 3  # 'U'


def _crc16(data):
    crc = 0
    for byte in data:
        crc ^= byte << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021) if crc & 0x8000 else (crc << 1)
            crc &= 0xFFFF
    return crc


def _encode(raw):
    raw = raw + _crc16(raw).to_bytes(2, "little")
    return base64.b32encode(raw).decode().rstrip("=")


def user_key_pair():
    """(public key "U...", seed "SU...")"""
    seed = os.urandom(32)
    public = Ed25519PrivateKey.from_private_bytes(seed).public_key().public_bytes(
        serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    b1 = _PREFIX_SEED | (_PREFIX_USER >> 5)
    b2 = (_PREFIX_USER & 31) << 3
    return _encode(bytes([_PREFIX_USER]) + public), _encode(bytes([b1, b2]) + seed)
