"""plangate's OpenID Connect signing keys: RSA keys of their own (never the App key), one file each in
PLANGATE_OIDC_KEY_DIR, shared by the web process (which publishes them) and the workers (which sign).

Rotation keeps an overlap, so no token in flight stops verifying and no cloud sees a key it has not had
the chance to fetch:
- `rotate` writes a new key. It is published at once, but signs only ACTIVATE_AFTER later (a relying party
  that cached the key set before it existed has refetched by then); until then the previous key signs.
- A key stays published until OVERLAP after its successor started signing: every token it signed (at most
  core.oidc.MAX_LIFETIME long) has expired by then. After that it is neither published nor used, and the
  next `rotate` deletes its file.
A key file's name holds its creation time; nothing else is stored, so a Redis loss changes nothing here.
"""

from __future__ import annotations

import base64
import fcntl
import hashlib
import json
import os
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.hazmat.primitives.asymmetric.rsa import RSAPrivateKey

from core.oidc import ALGORITHM, MAX_LIFETIME

ACTIVATE_AFTER = 600  # seconds a new key is published before it signs
OVERLAP = MAX_LIFETIME + 600  # seconds an old key stays published after its successor started signing
KEY_BITS = 2048
_SUFFIX = ".pem"


@dataclass(frozen=True)
class SigningKey:
    created: int  # epoch seconds, from the file name
    path: Path
    private: RSAPrivateKey

    @property
    def kid(self) -> str:
        """RFC 7638 thumbprint of the public key: the same key always has the same id."""
        numbers = self.private.public_key().public_numbers()
        members = {"e": _b64(numbers.e), "kty": "RSA", "n": _b64(numbers.n)}
        canonical = json.dumps(members, separators=(",", ":"), sort_keys=True).encode()
        return base64.urlsafe_b64encode(hashlib.sha256(canonical).digest()).rstrip(b"=").decode()

    def jwk(self) -> dict[str, Any]:
        found: dict[str, Any] = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(self.private.public_key()))
        return {**found, "kid": self.kid, "use": "sig", "alg": ALGORITHM}


def _b64(number: int) -> str:
    raw = number.to_bytes((number.bit_length() + 7) // 8, "big")
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


class KeyRing:
    """The keys in one directory, and which of them sign and are published at a given time."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def keys(self) -> list[SigningKey]:
        """Every key on disk, oldest first."""
        found = []
        for path in self.directory.glob(f"*{_SUFFIX}"):
            stamp = path.name.split("-", 1)[0]
            if not stamp.isdigit():
                continue
            loaded = serialization.load_pem_private_key(path.read_bytes(), password=None)
            if isinstance(loaded, RSAPrivateKey):
                found.append(SigningKey(int(stamp), path, loaded))
        return sorted(found, key=lambda k: (k.created, k.path.name))

    def signing(self, now: float) -> SigningKey | None:
        """The key that signs at `now`: the newest one published ACTIVATE_AFTER ago (the first key ever
        signs at once: no relying party can have cached a key set without it)."""
        keys = self.keys()
        active = [k for k in keys if k.created + ACTIVATE_AFTER <= now]
        return active[-1] if active else (keys[0] if keys else None)

    def published(self, now: float) -> list[SigningKey]:
        """The keys a JWKS shows at `now`: each until OVERLAP after its successor started signing."""
        keys = self.keys()
        return [k for i, k in enumerate(keys) if i + 1 == len(keys) or now < _retired_at(keys[i + 1])]

    def ensure(self, now: float) -> SigningKey:
        """The signing key, made first when the directory has none (two processes starting at once make one)."""
        self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        with (self.directory / ".lock").open("a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            found = self.signing(now)
            return found if found is not None else self._new(now)

    def rotate(self, now: float) -> SigningKey:
        """A new key (signing ACTIVATE_AFTER from now); keys no longer published are deleted."""
        self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        with (self.directory / ".lock").open("a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            keep = {k.path for k in self.published(now)}
            for key in self.keys():
                if key.path not in keep:
                    key.path.unlink()
            return self._new(now)

    def _new(self, now: float) -> SigningKey:
        private = rsa.generate_private_key(public_exponent=65537, key_size=KEY_BITS)
        pem = private.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
        path = self.directory / f"{int(now)}-{secrets.token_hex(4)}{_SUFFIX}"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as out:
            out.write(pem)
        return SigningKey(int(now), path, private)


def _retired_at(successor: SigningKey) -> float:
    return successor.created + ACTIVATE_AFTER + OVERLAP


def jwks(keys: list[SigningKey]) -> dict[str, Any]:
    return {"keys": [k.jwk() for k in keys]}


def sign(key: SigningKey, claims: dict[str, Any]) -> str:
    return jwt.encode(claims, key.private, algorithm=ALGORITHM, headers={"kid": key.kid, "typ": "JWT"})
