"""Webhook delivery like GitHub's Hookshot: compact JSON, HMAC signatures, delivery GUIDs."""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

import httpx

TIMEOUT = 10.0  # GitHub gives up on a delivery after 10 seconds
_clients = threading.local()  # one client per delivering thread: a fresh one costs tens of ms (TLS setup)


@dataclass
class Delivery:
    event: str
    payload: dict[str, Any]
    guid: str = field(default_factory=lambda: str(uuid.uuid4()))
    status: int | None = None  # None: built but not delivered
    sent_at: float | None = None  # time.perf_counter() when it was last sent


def sign(secret: str, body: bytes) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def headers(delivery: Delivery, body: bytes, secret: str, app_id: int) -> dict[str, str]:
    return {
        "Content-Type": "application/json",
        "User-Agent": "GitHub-Hookshot/standin",
        "X-GitHub-Event": delivery.event,
        "X-GitHub-Delivery": delivery.guid,
        "X-GitHub-Hook-ID": "1",
        "X-GitHub-Hook-Installation-Target-ID": str(app_id),
        "X-GitHub-Hook-Installation-Target-Type": "integration",
        "X-Hub-Signature": "sha1=" + hmac.new(secret.encode(), body, hashlib.sha1).hexdigest(),
        "X-Hub-Signature-256": sign(secret, body),
    }


def send(url: str, delivery: Delivery, secret: str, app_id: int) -> httpx.Response:
    """POST the exact signed bytes; a redelivery reuses the same GUID, as GitHub's does."""
    body = json.dumps(delivery.payload, separators=(",", ":")).encode()
    signed = headers(delivery, body, secret, app_id)
    client = getattr(_clients, "client", None)
    if client is None:
        # A new connection per delivery, as GitHub's: a kept-alive one the App's server closes while idle
        # races the next POST ("Server disconnected without sending a response"), a delivery lost.
        client = _clients.client = httpx.Client(timeout=TIMEOUT, limits=httpx.Limits(max_keepalive_connections=0))
    delivery.sent_at = time.perf_counter()
    response = client.post(url, content=body, headers=signed)
    delivery.status = response.status_code
    return response
