"""HMAC-signed values for browser round trips: keys derived per purpose, states bound to a cookie."""

from __future__ import annotations

import hashlib
import hmac
import secrets

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF


def derive_key(secret: str, purpose: str) -> bytes:
    """HKDF-SHA256 of an operator's secret: one independent key per purpose, never the secret itself."""
    hkdf = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=f"plangate {purpose} v1".encode())
    return hkdf.derive(secret.encode())


def sign(key: bytes, payload: str) -> str:
    return hmac.new(key, payload.encode(), hashlib.sha256).hexdigest()


def issue_state(key: bytes, now: float) -> tuple[str, str]:
    """A fresh random state for GitHub's round trip, and the signed cookie that binds it to this browser."""
    state = secrets.token_urlsafe(24)
    payload = f"{state}.{int(now)}"
    return state, f"{payload}.{sign(key, payload)}"


def check_state(key: bytes, cookie: str | None, state: str | None, now: float, ttl: int) -> bool:
    """The returned state is the one issued to this browser (its cookie), less than `ttl` seconds ago."""
    if not cookie or not state:
        return False
    parts = cookie.split(".")
    if len(parts) != 3 or not parts[1].isdigit():
        return False
    value, issued, signature = parts
    if not hmac.compare_digest(signature, sign(key, f"{value}.{issued}")):
        return False
    return 0 <= now - int(issued) <= ttl and hmac.compare_digest(value.encode(), state.encode())
