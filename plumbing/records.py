"""Redis values that can move the gate, sealed with keys the sandbox never sees.

Redis is reachable from the network terraform shares, so a record that could unlock an apply
(approvals, destroy sets, held applies, the last applied SHA, the bot's login that decides whose
markers count, comment ids the bot edits) is HMAC-signed, and an installation token is encrypted,
with keys derived from the App's private key: it lives only in the worker's memory, never in a
child's environment or a file the sandbox can read. A record whose seal does not verify counts
for nothing (it is logged, and the caller falls back to GitHub, the system of record), and the
seal binds the Redis key, so a valid record cannot be copied to another key.
"""

from __future__ import annotations

import base64
import hmac
import json
import logging
import os
from hashlib import sha256
from typing import Any

import redis
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

log = logging.getLogger("plangate.records")
_SIGNED = b"s1."
_SEALED = b"e1."


def derive_keys(private_key_pem: str) -> tuple[bytes, bytes]:
    """(MAC key, encryption key), both 32 bytes, from the App key: no extra secret to configure."""
    material = HKDF(algorithm=hashes.SHA256(), length=64, salt=b"plangate-records", info=b"v1").derive(
        private_key_pem.encode()
    )
    return material[:32], material[32:]


def derive_marker_key(private_key_pem: str) -> bytes:
    """The key that seals approval markers in comments (core.render.marker.sealed_marker): of its own,
    so that a Redis record's MAC can never stand in for a comment's, or the reverse."""
    return HKDF(algorithm=hashes.SHA256(), length=32, salt=b"plangate-markers", info=b"v1").derive(
        private_key_pem.encode()
    )


def _text(raw: object) -> bytes | None:
    if isinstance(raw, bytes):
        return raw
    if isinstance(raw, str):
        return raw.encode()
    return None


class Records:
    """Sealed get/set over one Redis connection; `conn` is there for everything that is not a gate record."""

    def __init__(self, conn: redis.Redis, private_key_pem: str) -> None:
        self.conn = conn
        self._mac_key, enc_key = derive_keys(private_key_pem)
        self._aead = AESGCM(enc_key)
        self.marker_key = derive_marker_key(private_key_pem)

    def _mac(self, name: str, payload: bytes) -> bytes:
        return hmac.new(self._mac_key, name.encode() + b"\0" + payload, sha256).digest()

    def seal(self, name: str, text: str) -> bytes:
        payload = text.encode()
        return _SIGNED + base64.b64encode(self._mac(name, payload)) + b"." + payload

    def unseal(self, name: str, raw: object) -> str | None:
        """The text of a record sealed for `name`; None (and a log line) for anything else."""
        data = _text(raw)
        if data is None:
            return None
        if data.startswith(_SIGNED):
            mac, dot, payload = data[len(_SIGNED) :].partition(b".")
            try:
                good = dot == b"." and hmac.compare_digest(base64.b64decode(mac), self._mac(name, payload))
            except ValueError:
                good = False
            if good:
                return payload.decode()
        log.warning(json.dumps({"record": name, "outcome": "ignored: unsigned or badly signed"}))
        return None

    def get(self, name: str) -> str | None:
        return self.unseal(name, self.conn.get(name))

    def get_many(self, names: list[str]) -> list[str | None]:
        """`get` of each of `names`, in one round trip."""
        raw: Any = self.conn.mget(names) if names else []
        return [self.unseal(name, value) for name, value in zip(names, raw, strict=True)]

    def set(self, name: str, text: str, *, ex: int | None = None, nx: bool = False) -> bool:
        return bool(self.conn.set(name, self.seal(name, text), ex=ex, nx=nx))

    def get_json(self, name: str) -> Any:
        text = self.get(name)
        return None if text is None else json.loads(text)

    def hset(self, name: str, field: str, text: str) -> None:
        self.conn.hset(name, field, self.seal(f"{name}#{field}", text))

    def hgetall(self, name: str) -> dict[str, str]:
        raw: Any = self.conn.hgetall(name)
        out = {}
        for key, value in raw.items():
            field = key.decode() if isinstance(key, bytes) else str(key)
            text = self.unseal(f"{name}#{field}", value)
            if text is not None:
                out[field] = text
        return out

    def encrypt(self, name: str, text: str) -> bytes:
        nonce = os.urandom(12)
        return _SEALED + base64.b64encode(nonce + self._aead.encrypt(nonce, text.encode(), name.encode()))

    def decrypt(self, name: str, raw: object) -> str | None:
        data = _text(raw)
        if data is None or not data.startswith(_SEALED):
            return None
        try:
            blob = base64.b64decode(data[len(_SEALED) :])
            return self._aead.decrypt(blob[:12], blob[12:], name.encode()).decode()
        except (ValueError, InvalidTag):
            log.warning(json.dumps({"record": name, "outcome": "ignored: does not decrypt"}))
            return None
