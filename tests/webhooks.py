"""Helpers to sign and post webhook deliveries the way GitHub does."""

from __future__ import annotations

import hashlib
import hmac
import json
import uuid
from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).parent / "fixtures" / "github" / "webhooks"
SECRET = "test-webhook-secret"


def load(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((FIXTURES / name).read_text())
    return data


def event_name(fixture: str) -> str:
    return fixture.split(".", 1)[0]


def signed_headers(event: str, body: bytes, secret: str = SECRET, delivery: str | None = None) -> dict[str, str]:
    digest = hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    return {
        "X-GitHub-Event": event,
        "X-GitHub-Delivery": delivery or str(uuid.uuid4()),
        "X-Hub-Signature-256": f"sha256={digest}",
        "Content-Type": "application/json",
        "User-Agent": "GitHub-Hookshot/test",
    }
